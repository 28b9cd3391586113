"""The tool profiles (rooms.profiles): what each one holds, in what order, and what a caller
reads when it names no profile or calls a tool its profile leaves out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.runner import ROOMD_TOOLS
from rooms import errors, profiles, registry

ROOT = Path(__file__).resolve().parents[2]

# Issue 25, point 1: the canonical workflow core must hold.
ISSUE_CORE = {
    "heartbeat",
    "get_my_summary",
    "read_plan",
    "add_task",
    "claim_task",
    "update_task",
    "write_context",
    "list_context",
    "wait_for_events",
    "send_message",
    "inbox",
    "lease_claim",
    "submit_task",
}


def _protocol_roomd_names() -> set[str]:
    """roomd's tools as docs/protocol.md "Whose tools" lists them: its first two bullets
    (the report's 25 and roomd's other 19), before "Ours"."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = text.split("### Whose tools", 1)[1].split("- **Ours", 1)[0]
    return set(re.findall(r"`([a-z_]+)`", section))


def test_core_is_the_readmes_loop_and_at_most_twenty_tools_in_registry_order() -> None:
    """Issue 25's workflow, and issue 31's: verification and handoffs are in core."""
    core = profiles.TOOLS["core"]
    assert len(core) <= profiles.CORE_MAX == 20
    assert set(core) >= ISSUE_CORE
    assert core == (
        "read_plan",
        "add_task",
        "update_task",
        "claim_task",
        "release_task",
        "get_unblocked_tasks",
        "get_my_summary",
        "write_context",
        "list_context",
        "wait_for_events",
        "heartbeat",
        "lease_claim",
        "submit_task",
        "verify_task",
        "handoff_task",
        "accept_handoff",
        "decline_handoff",
        "send_message",
        "inbox",
        "ack_message",
    )


def test_roomd_is_exactly_roomds_44_as_the_protocol_and_the_conformance_kit_list_them() -> None:
    roomd = profiles.TOOLS["roomd"]
    assert len(roomd) == 44
    assert set(roomd) == _protocol_roomd_names() == set(ROOMD_TOOLS)
    assert list(roomd) == [n for n in registry.TOOLS_ORDER if n in set(roomd)]


def test_full_is_every_tool_and_the_default() -> None:
    assert profiles.TOOLS["full"] == registry.TOOLS_ORDER
    assert profiles.DEFAULT == "full"
    assert profiles.PROFILES == ("core", "roomd", "full")


def test_profile_of_names_the_profiles_that_have_a_tool_smallest_first() -> None:
    assert profiles.profile_of("read_plan") == ("core", "roomd", "full")
    assert profiles.profile_of("get_task") == ("roomd", "full")
    assert profiles.profile_of("lease_renew") == ("full",)
    assert profiles.profile_of("claim_task") == ("core", "full")
    assert profiles.profile_of("no_such_tool") == ()


def test_the_url_wins_over_the_credentials_default_which_wins_over_full() -> None:
    assert profiles.profile_resolve(None, None) == "full"
    assert profiles.profile_resolve(None, "core") == "core"
    assert profiles.profile_resolve("roomd", "core") == "roomd"
    assert profiles.profile_resolve("full", "core") == "full"


@pytest.mark.parametrize("given", ["", "Core", "all", "core,full", "minimal"])
def test_an_unknown_profile_is_refused_naming_every_profile(given: str) -> None:
    with pytest.raises(errors.ToolProfileUnknownError) as refused:
        profiles.profile_parse(given)
    known = ", ".join(profiles.describe(p) for p in profiles.PROFILES)
    assert refused.value.message == profiles.PROFILE_UNKNOWN.format(given=given, known=known)
    assert "core (20 tools: the everyday workflow)" in refused.value.message
    assert "roomd (44 tools: roomd's tools)" in refused.value.message
    assert f"full ({len(registry.TOOLS)} tools: every tool)" in refused.value.message
    assert refused.value.extra == {"given": given, "profiles": ["core", "roomd", "full"]}


def test_a_tool_outside_the_profile_is_refused_naming_the_profiles_that_have_it() -> None:
    profiles.profile_admit("core", "claim_task")  # in it: nothing said
    with pytest.raises(errors.ToolNotInProfileError) as refused:
        profiles.profile_admit("core", "get_task")
    said = refused.value.message
    assert said == (
        'get_task is not offered on this connection: its tool profile is "core" (20 tools, '
        "the ones tools/list shows); carry on with those. get_task is in roomd and full (for "
        "whoever sets up this client: ?tools=roomd in the server's URL)."
    )
    assert refused.value.extra == {
        "tool": "get_task",
        "profile": "core",
        "profiles": ["roomd", "full"],
    }
    assert refused.value.code == "tool_not_in_profile"
    with pytest.raises(errors.ToolNotInProfileError) as ours:
        profiles.profile_admit("roomd", "claim_task")
    assert "claim_task is in core and full" in ours.value.message
    assert "?tools=core in the server's URL" in ours.value.message
    with pytest.raises(errors.ToolNotInProfileError) as only_full:
        profiles.profile_admit("roomd", "lease_renew")
    assert "lease_renew is in full (for whoever" in only_full.value.message


def test_a_stored_default_of_none_or_empty_is_no_default() -> None:
    assert profiles.profile_stored(None) is None
    assert profiles.profile_stored("") is None
    assert profiles.profile_stored("roomd") == "roomd"


def test_the_protocols_table_of_profiles_is_the_modules() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = text.split("### Tool profiles", 1)[1].split("\n- **Choosing one.**", 1)[0]
    rows = {
        cells[1].strip("` "): (cells[2].strip(), cells[3])
        for cells in (line.split("|") for line in section.splitlines() if line.startswith("| `"))
    }
    # full's count is "all": a new tool does not change the table.
    assert {p: n for p, (n, _) in rows.items()} == {
        p: "all" if p == "full" else str(len(names)) for p, names in profiles.TOOLS.items()
    }
    assert re.findall(r"`([a-z_]+)`", rows["core"][1]) == list(profiles.TOOLS["core"])


@pytest.mark.parametrize("profile", ["core", "roomd", "full"])
def test_the_instructions_name_only_tools_the_connections_profile_has(profile: str) -> None:
    """A connection's instructions tell its agent which tools to call: each must be one that
    connection can see (roomd's see roomd's tools only)."""
    from mcp_gateway.app import INSTRUCTIONS_OF

    told = INSTRUCTIONS_OF[profile]  # type: ignore[index]
    named = set(re.findall(r"\b[a-z]+_[a-z_]+\b", told)) & set(registry.TOOLS_BY_NAME)
    assert named >= {"get_my_summary", "get_unblocked_tasks", "wait_for_events"}
    seen = set(profiles.TOOLS[profile])  # type: ignore[index]
    assert named <= seen, named - seen


def test_what_a_core_agent_carries_stays_within_twelve_kilobytes() -> None:
    """Issue 31: core's descriptions plus input schemas at most 12 KB (20 KB before), and no
    output schemas; weighed as `make bench` weighs the list it is sent."""
    from bench.profiles import CORE_CARRIED_MAX, list_weight
    from mcp_gateway import tools

    sent = [
        t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools.tool_list("core")
    ]
    weight = list_weight(sent)
    assert weight["descriptions"] + weight["input schemas"] <= CORE_CARRIED_MAX == 12 * 1024
    assert weight["output schemas"] == 0
    assert all(
        "outputSchema" in t
        for t in (
            e.model_dump(by_alias=True, mode="json", exclude_none=True)
            for e in tools.tool_list("full")
        )
    )
