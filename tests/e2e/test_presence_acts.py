"""Every act is presence (issue 24, point 1), against the real server through MCP and the
Claude Code hook door: the new user's report, replayed. The backend agent never heartbeats;
its first call is a claim, and from then on it is on the room page, messages and handoffs
reach it, and its hook calls keep its claim and its file lease alive."""

from __future__ import annotations

import anyio
import httpx
import pytest

from rooms.keys import RoomKeys
from tests.conftest import new_room_id, redis_for_assertions
from tests.e2e.conftest import RunningServer
from tests.e2e.test_hooks_http import hook, in_cwd, leases_of, payload
from tests.e2e.test_push import mcp

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_a_claim_only_agent_is_known_and_its_hook_calls_keep_what_it_holds(
    server: RunningServer,
) -> None:
    room = new_room_id("acts")
    async with httpx.AsyncClient(timeout=30) as http:
        task = await mcp(http, server.url, "add_task", roomId=room, title="the API")
        claimed = await mcp(
            http,
            server.url,
            "claim_task",
            roomId=room,
            taskId=task["id"],
            agentId="backend",
            leaseSeconds=60,
        )
        present = await mcp(http, server.url, "get_presence", roomId=room)
        assert [(p["agentId"], p["state"]) for p in present] == [("backend", "working")]

        sent = await mcp(
            http, server.url, "send_message", roomId=room, to="backend", body="hi", **{"from": "fe"}
        )
        assert sent["recipients"] == ["backend"]
        other = await mcp(http, server.url, "add_task", roomId=room, title="the UI")
        await mcp(http, server.url, "claim_task", roomId=room, taskId=other["id"], agentId="fe")
        offered = await mcp(
            http,
            server.url,
            "handoff_task",
            roomId=room,
            taskId=other["id"],
            to="backend",
            note="yours when done",
            **{"from": "fe"},
        )
        assert offered["to"] == "backend"

        # An edit through the hook door leases the file for the claimed task; a later hook
        # call (a Stop) is an act of backend's too, which starts its claim's term again.
        edit = payload("PostToolUse-Edit", path=in_cwd("src/api.py"))
        assert await hook(http, server, room, edit, agent="backend") == {}
        [lease] = await leases_of(http, server, room, "backend")
        assert lease["taskId"] == task["id"]
        # Within a tenth of the term an act rewrites nothing.
        before = await mcp(http, server.url, "get_task", roomId=room, taskId=task["id"])
        assert before["lease_expires_at"] == claimed["lease_expires_at"]
        # Past a tenth of the 60 s term the next act renews it. The server's clock cannot be
        # moved from here; its stored lease expiry can: 6.5 s earlier is the term begun 6.5 s
        # ago, as if the test had slept that long.
        r = redis_for_assertions()
        try:
            claims = RoomKeys(room).claims
            due = r.zscore(claims, task["id"])
            assert due is not None, "the leased claim is not in the claims set"
            r.zadd(claims, {task["id"]: due - 6_500})
        finally:
            r.close()
        # A read marks its agent present at most once a second (READ_PRESENCE_EVERY_MS), and
        # leases_of just did: Stop again until one is past that (a bounded wait, shorter than
        # the 6 s tenth itself, so only the aged term can be what renews).
        with anyio.fail_after(5):
            while True:
                await hook(http, server, room, payload("Stop"), agent="backend")
                after = await mcp(http, server.url, "get_task", roomId=room, taskId=task["id"])
                if after["lease_expires_at"] > before["lease_expires_at"]:
                    break
                await anyio.sleep(0.1)
        assert after["owner"] == "backend"
