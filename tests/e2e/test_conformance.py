"""The conformance kit (conformance/, docs/conformance.md) against our own server, as an
integrator would run it against theirs: two freshly made teams, every check passing, none
skipped, and every tool of tools/list exercised by both its valid call and its bad-input
call — so a tool added to the registry without conformance checks fails here; and the same
through each tool profile's URL (/mcp?tools=roomd, core, full), where the tools a profile
leaves out are "not offered" and every check that needs one skips. The reports are kept in
test-output/conformance*.txt."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from conformance import Config, run_kit
from rooms import profiles
from tests.e2e.conftest import ROOT, TEAM_A_SECRET, RunningServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

OUTPUT = Path(os.environ.get("TEST_OUTPUT_DIR", ROOT / "test-output"))
REPORT = OUTPUT / "conformance.txt"


async def _new_team_key(http: httpx.AsyncClient, url: str, label: str) -> str:
    """A team of its own (its own room cap, nothing of other tests' rooms) and its key."""
    made = await http.post(
        f"{url}/api/v1/teams",
        json={"slug": f"{label}-{secrets.token_hex(5)}"},
        headers={"authorization": f"Bearer {TEAM_A_SECRET}"},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["key"]["secret"])


async def test_the_kit_passes_against_our_server_exercising_every_listed_tool(
    server: RunningServer,
) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        key_a = await _new_team_key(http, server.url, "conf-a")
        key_b = await _new_team_key(http, server.url, "conf-b")
    report = await run_kit(Config(url=server.mcp_url, key=key_a, key_b=key_b))
    text = report.render()
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(text + "\n", encoding="utf-8")

    assert not report.failed, text
    skipped = [f"{o.name} ({o.kind}): {o.detail}" for o in report.outcomes if o.status == "SKIP"]
    assert not skipped, skipped
    assert report.unexercised == [], report.unexercised
    # Every listed tool has its checks, and the kit knows no tool we do not list.
    assert report.offered == report.known, sorted(report.offered ^ report.known)


@pytest.mark.parametrize("profile", ["roomd", "core", "full"])
async def test_the_kit_passes_through_each_tool_profiles_url(
    server: RunningServer, profile: profiles.Profile
) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        key_a = await _new_team_key(http, server.url, f"conf-{profile}-a")
        key_b = await _new_team_key(http, server.url, f"conf-{profile}-b")
    url = f"{server.mcp_url}?tools={profile}"
    report = await run_kit(Config(url=url, key=key_a, key_b=key_b))
    text = report.render()
    (OUTPUT / f"conformance-{profile}.txt").write_text(text + "\n", encoding="utf-8")

    assert report.url == url, text
    assert report.offered == frozenset(profiles.TOOLS[profile]), text
    assert not report.failed, text
    # What skips is only what needs a tool the profile leaves out ("not offered: get_task",
    # or "needs post_event, which the server does not offer").
    for o in report.outcomes:
        if o.status == "SKIP":
            found = re.fullmatch(r"not offered: (.+)|needs (\w+), which the server.*", o.detail)
            assert found is not None, (o.name, o.detail)
            missing = set((found.group(1) or found.group(2)).split(", "))
            assert not missing & set(profiles.TOOLS[profile]), (o.name, o.detail)
    if profile == "full":
        assert report.counts["SKIP"] == 0, text
    # Every listed tool exercised; in core, three calls aside (their bad-input checks run):
    # the kit wakes wait_for_events's waiter with post_event, and reads a handoff's outcome
    # with get_task, both of which core leaves out.
    in_core = ["accept_handoff", "decline_handoff", "wait_for_events"]
    assert report.unexercised == (in_core if profile == "core" else []), text


def test_the_kit_says_what_it_needs_when_url_or_key_is_missing() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFORMANCE_")}
    ran = subprocess.run(
        [sys.executable, "-m", "conformance"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 2
    assert "--url" in ran.stderr and "--key" in ran.stderr
