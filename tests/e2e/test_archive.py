"""A room archived and restored through the real server with the official `mcp` client:
write, archive, check Redis holds nothing of the room, read it from the archive, restore,
and compare every read tool's answer with before (docs/protocol.md "Lifecycle and
durable rooms")."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.conftest import new_room_id, redis_for_assertions
from tests.e2e.conftest import TEAM_A_SECRET, TEAM_B_SECRET, RunningServer
from tests.e2e.mcp_clients import call, call_error, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

READS: list[tuple[str, dict[str, Any]]] = [
    ("read_plan", {}),
    ("list_context", {}),
    ("get_presence", {}),
    ("list_shared_vars", {}),
    ("list_reviews", {}),
    ("lease_list", {}),
    ("sent_messages", {"agentId": "alice"}),
    ("get_unblocked_tasks", {}),
    ("list_locks", {}),
]


def room_keys(room: str) -> list[str]:
    r = redis_for_assertions()  # on the cluster pass, every node is scanned
    try:
        pattern = f"{os.environ['REDIS_KEY_PREFIX']}:{{{room}}}:*"
        found = [str(k) for k in r.scan_iter(match=pattern, count=1000)]
    finally:
        r.close()
    return [k for k in found if not k.endswith(":active_mark")]


async def test_a_room_archived_and_restored_through_the_server_answers_as_before(
    server: RunningServer,
) -> None:
    room = new_room_id("e2e-archive")
    async with (
        mcp_client(server.mcp_url, TEAM_A_SECRET) as agent,
        mcp_client(server.mcp_url, TEAM_B_SECRET) as other,
    ):
        task = await call(agent, "add_task", roomId=room, title="parser", description="d")
        await call(agent, "claim_task", roomId=room, taskId=task["id"], agentId="alice")
        await call(agent, "heartbeat", roomId=room, agentId="alice")
        await call(agent, "heartbeat", roomId=room, agentId="bob")
        await call(
            agent,
            "write_context",
            roomId=room,
            type="note",
            summary="s",
            consuming_agents=["bob"],
            payload={"text": "hello"},
            author="alice",
        )
        await call(agent, "set_shared_var", roomId=room, key="port", value="3000", agentId="a")
        await call(agent, "lease_claim", roomId=room, path="src/**", agentId="alice")
        await call(agent, "send_message", roomId=room, to="bob", body="hi", **{"from": "alice"})
        first = await call(agent, "get_unread_events", roomId=room, agentId="carol", limit=3)
        before = {name: await call(agent, name, roomId=room, **args) for name, args in READS}
        log_before = await call(agent, "read_events", roomId=room, limit=100, order="asc")

        # Another team can neither archive it nor read it.
        refused = await call_error(other, "set_room_status", roomId=room, status="archived")
        assert "not found" in refused.lower() or "no room" in refused.lower()

        moved = await call(agent, "set_room_status", roomId=room, status="archived")
        assert moved["status"] == "archived"
        # Nothing of the room is left but its tombstone (a meta saying archived, minutes).
        assert [k.rsplit(":", 1)[1] for k in room_keys(room)] == ["meta"]

        archived_plan = await call(agent, "read_plan", roomId=room)
        assert archived_plan["tasks"] == before["read_plan"]["tasks"]
        refusal = await call_error(agent, "add_task", roomId=room, title="refused")
        assert "archived" in refusal and "restore" in refusal

        await call(agent, "set_room_status", roomId=room, status="active")
        for name, args in READS:
            assert comparable(name, await call(agent, name, roomId=room, **args)) == comparable(
                name, before[name]
            ), name
        log_after = await call(agent, "read_events", roomId=room, limit=100, order="asc")
        kept = [e for e in log_after if e["type"] != "room_status_changed"]
        assert kept == [e for e in log_before if e["type"] != "room_status_changed"]

        rest = await call(agent, "get_unread_events", roomId=room, agentId="carol", limit=100)
        ids = [e["id"] for e in rest["events"] if e["type"] != "room_status_changed"]
        assert ids == [e["id"] for e in log_before][len(first["events"]) :]


def comparable(name: str, answer: Any) -> Any:
    """sent_messages names alice as its acting agent, so each round of reads marks her
    present anew (issue 24): her lastSeen is the reads' own time, not the room's."""
    if name == "get_presence":
        return [{**p, "lastSeen": None} if p["agentId"] == "alice" else p for p in answer]
    return answer
