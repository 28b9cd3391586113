"""docs/agent-skill/room.sh lets an agent with only curl reach every tool."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from rooms import registry
from tests.conftest import new_room_id
from tests.e2e.conftest import ROOT, TEAM_A_SECRET, TEAM_B_SECRET, RunningServer

pytestmark = pytest.mark.e2e
SCRIPT = ROOT / "docs" / "agent-skill" / "room.sh"


def room_sh(
    server: RunningServer, room: str, *args: str, key: str = TEAM_A_SECRET
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ROOMSERVICE_URL": server.url,
        "ROOMSERVICE_KEY": key,
        "ROOM": room,
        "PATH": "/usr/bin:/bin",
    }  # no jq: the plain output path
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_room_sh_calls_tools_and_lists_them(server: RunningServer) -> None:
    room = new_room_id("skill")
    beat = room_sh(server, room, "heartbeat", '{"agentId":"curl-agent"}')
    assert beat.returncode == 0, beat.stderr
    assert json.loads(beat.stdout)["agentId"] == "curl-agent"
    added = room_sh(server, room, "add_task", '{"title":"from curl"}')
    task = json.loads(added.stdout)
    plan = json.loads(room_sh(server, room, "read_plan").stdout)
    assert [t["id"] for t in plan["tasks"]] == [task["id"]]
    rooms = json.loads(room_sh(server, room, "list_rooms").stdout)
    assert room in [r["roomId"] for r in rooms]
    shapes = json.loads(room_sh(server, room, "list_templates").stdout)
    assert "web-app" in [t["id"] for t in shapes["templates"]]
    found = json.loads(room_sh(server, room, "search", '{"q":"curl"}').stdout)
    assert [h["id"] for h in found["hits"] if h["kind"] == "task"] == [task["id"]]
    listed = room_sh(server, room, "tools")
    assert listed.stdout.split() == sorted(t.name for t in registry.TOOLS)


def test_room_sh_fails_with_the_servers_message(server: RunningServer) -> None:
    room = new_room_id("skill")
    room_sh(server, room, "heartbeat", '{"agentId":"a"}')
    wrong = room_sh(server, room, "update_task", '{"taskId":"t_nope","status":"done"}')
    assert wrong.returncode == 1 and "Unknown taskId" in wrong.stdout and "HTTP 404" in wrong.stderr
    other = room_sh(server, room, "read_plan", key=TEAM_B_SECRET)
    assert other.returncode == 1 and "Room not found or access denied" in other.stdout
