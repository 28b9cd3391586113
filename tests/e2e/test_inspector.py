"""The MCP Inspector CLI (the protocol's reference debugging client) works unchanged."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rooms import profiles, registry
from tests.conftest import new_room_id
from tests.e2e.conftest import ROOT, TEAM_A_SECRET, RunningServer

pytestmark = pytest.mark.e2e
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
INSTALL_DIR = ROOT / "var" / "inspector"


@pytest.fixture(scope="module")
def inspector() -> Path:
    binary = INSTALL_DIR / "node_modules" / ".bin" / "mcp-inspector"
    if binary.exists():
        return binary
    if not shutil.which("npm"):
        pytest.skip("npm is not installed, so the MCP Inspector CLI cannot be fetched")
    INSTALL_DIR.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            "npm",
            "install",
            "--prefix",
            str(INSTALL_DIR),
            "--no-audit",
            "--no-fund",
            "--prefer-offline",
            INSPECTOR,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0 or not binary.exists():
        pytest.skip(f"could not install the MCP Inspector: {result.stderr[-500:]}")
    return binary


def run(inspector: Path, server: RunningServer, *args: str, query: str = "") -> dict[str, object]:
    result = subprocess.run(
        [
            str(inspector),
            "--cli",
            server.mcp_url + query,
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {TEAM_A_SECRET}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Its schema-portability check (tests/fixtures/inspector/SOURCE.md) speaks only when it
    # finds something: every tools/list here must be portable.
    assert "Schema portability" not in result.stderr, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_inspector_cli_lists_and_calls_tools(inspector: Path, server: RunningServer) -> None:
    listed = run(inspector, server, "--method", "tools/list")
    assert [t["name"] for t in listed["tools"]] == [t.name for t in registry.TOOLS]  # type: ignore[union-attr]
    room = new_room_id("inspector")
    added = run(
        inspector,
        server,
        "--method",
        "tools/call",
        "--tool-name",
        "add_task",
        "--tool-arg",
        f"roomId={room}",
        "title=from the inspector",
    )
    assert added["isError"] is False
    assert added["structuredContent"]["title"] == "from the inspector"  # type: ignore[index]
    plan = run(
        inspector,
        server,
        "--method",
        "tools/call",
        "--tool-name",
        "read_plan",
        "--tool-arg",
        f"roomId={room}",
    )
    assert [t["title"] for t in plan["structuredContent"]["tasks"]] == ["from the inspector"]  # type: ignore[index]


@pytest.mark.parametrize("profile", profiles.PROFILES)
def test_inspector_finds_every_profiles_schemas_portable(
    inspector: Path, server: RunningServer, profile: str
) -> None:
    """--strict puts each finding in the JSON envelope (and fails the run on an error)."""
    listed = run(
        inspector,
        server,
        *("--method", "tools/list", "--strict", "--format", "json"),
        query=f"?tools={profile}",
    )
    assert [t["name"] for t in listed["result"]["tools"]] == list(profiles.TOOLS[profile])  # type: ignore[index]
    assert "schemaFindings" not in listed
