"""Both protocol eras with the official `mcp` client over real HTTP (issue 25, point 3):
the initialize handshake (2025-11-25), the 2026-07-28 single exchange pinned, and `auto`,
which probes server/discover first and must land on 2026-07-28. Each lists the core
profile's tools and runs the core workflow; a long wait is cut and says so; the client's
cache honours the list's ttlMs."""

from __future__ import annotations

import pytest
from mcp_types import RequestParamsMeta

from rooms import profiles
from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, RunningServer
from tests.e2e.mcp_clients import call, call_error, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

NEGOTIATED = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}


@pytest.mark.parametrize("mode", list(NEGOTIATED))
async def test_the_core_workflow_in_each_era(server: RunningServer, mode: str) -> None:
    room = new_room_id("era")
    url = server.mcp_url + "?tools=core"
    async with mcp_client(url, TEAM_A_SECRET, mode) as agent:
        assert agent.protocol_version == NEGOTIATED[mode]
        listed = await agent.list_tools()
        assert [t.name for t in listed.tools] == list(profiles.TOOLS["core"])
        if mode != "legacy":
            assert listed.ttl_ms == 3_600_000 and listed.cache_scope == "public"
        await call(agent, "heartbeat", roomId=room, agentId="a")
        task = await call(agent, "add_task", roomId=room, title="build it", agentId="a")
        claimed = await call(agent, "claim_task", roomId=room, taskId=task["id"], agentId="a")
        assert claimed["owner"] == "a" and claimed["status"] == "in_progress"
        # Something is unread, so the wait returns at once: and says it cut the hour asked.
        waited = await call(agent, "wait_for_events", roomId=room, agentId="b", timeoutMs=3_600_000)
        assert waited["capped"] is True and waited["timeoutMs"] == 30_000
        assert waited["count"] >= 2
        done = await call(agent, "update_task", roomId=room, taskId=task["id"], status="done")
        assert done["status"] == "done"
        # Outside the profile: a tool error naming the profile that has it.
        refused = await call_error(agent, "get_room_info", roomId=room)
        assert "full" in refused


async def test_a_modern_client_sends_its_trace_context_through(server: RunningServer) -> None:
    """`_meta.traceparent` from the SDK reaches the events the call writes: the same room's
    webhooks send it on (tests/tenants/test_webhooks.py)."""
    from rooms.keys import RoomKeys
    from rooms.store import events as events_store

    room = new_room_id("era")
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    async with mcp_client(server.mcp_url, TEAM_A_SECRET, "2026-07-28") as agent:
        result = await agent.call_tool(
            "post_event",
            {"roomId": room, "type": "note", "from": "a", "payload": {}},
            meta=RequestParamsMeta(traceparent=trace),  # type: ignore[typeddict-unknown-key]
        )
        assert not result.is_error
    entries = await events_store.event_range(
        RoomKeys(room), start="-", end="+", count=5, reverse=True
    )
    assert dict(entries[0][1])["trace"] == trace
