"""The REST door's long wait: a client that can wait longer than a tool call may (the
guard's hooks) arms one wait_for_events for minutes, and the connection stays alive on
keep-alive newlines meanwhile; the MCP door keeps a tool call's 30 s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import anyio
import httpx
import pytest

from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, WEB_ONLY, RunningServer, start_server
from tests.e2e.test_revocation import api, mcp

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
AUTH = {"authorization": f"Bearer {TEAM_A_SECRET}"}


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    # A keep-alive every second; one waiting call a team, so a wait that outlived its client
    # would be seen refusing the next; an agent is online for 2 s after its last act.
    running = start_server(
        {
            "SSE_KEEPALIVE_SECONDS": "1",
            "WAITERS_PER_TEAM": "1",
            "PRESENCE_ONLINE_SECONDS": "2",
            **WEB_ONLY,
        }
    )
    yield running
    running.stop()


def quiet_room(server: RunningServer) -> str:
    """A claimed room whose agent `a` has read everything in it."""
    room = new_room_id("long")
    mcp(server.url, TEAM_A_SECRET, "heartbeat", {"roomId": room, "agentId": "a"})
    mcp(server.url, TEAM_A_SECRET, "get_unread_events", {"roomId": room, "agentId": "a"})
    return room


def post(server: RunningServer, room: str) -> None:
    args = {"roomId": room, "type": "t", "from": "b", "payload": {}}
    assert mcp(server.url, TEAM_A_SECRET, "post_event", args).json()["result"]["isError"] is False


async def long_wait(
    http: httpx.AsyncClient, server: RunningServer, room: str, timeout_ms: int, secret: str
) -> AsyncIterator[tuple[int, AsyncIterator[bytes]]]:
    async with http.stream(
        "POST",
        f"{server.url}/api/v1/rooms/{room}/tools/wait_for_events",
        json={"agentId": "a", "timeoutMs": timeout_ms},
        headers={"authorization": f"Bearer {secret}"},
    ) as response:
        yield response.status_code, response.aiter_raw()


async def test_a_long_wait_sends_keep_alives_then_the_answer(server: RunningServer) -> None:
    room = quiet_room(server)
    async with httpx.AsyncClient(timeout=30) as http:
        async for status, chunks in long_wait(http, server, room, 60_000, TEAM_A_SECRET):
            assert status == 200
            with anyio.fail_after(10):
                first = await anext(chunks)
                second = await anext(chunks)
            assert first == second == b"\n"  # two periods passed: still waiting, still alive
            await asyncio.to_thread(post, server, room)
            body = first + second + b"".join([c async for c in chunks])
    answer = json.loads(body)  # JSON allows the whitespace before it
    assert answer["count"] == 1 and answer["timedOut"] is False
    assert answer["timeoutMs"] == 60_000 and answer["capped"] is False


async def test_a_long_wait_times_out_and_one_past_the_most_is_cut(server: RunningServer) -> None:
    room = quiet_room(server)
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(
            f"{server.url}/api/v1/rooms/{room}/tools/wait_for_events",
            json={"agentId": "a", "timeoutMs": 2_500},
            headers=AUTH,
        )
        assert answer.status_code == 200 and answer.content.startswith(b"\n")
        assert answer.json()["timedOut"] is True and answer.json()["timeoutMs"] == 2_500

        cut = asyncio.ensure_future(
            http.post(
                f"{server.url}/api/v1/rooms/{room}/tools/wait_for_events",
                json={"agentId": "a", "timeoutMs": 700_000},
                headers=AUTH,
            )
        )
        await asyncio.sleep(0.5)
        await asyncio.to_thread(post, server, room)
        answered = (await cut).json()
    assert answered["count"] == 1 and answered["timeoutMs"] == 600_000
    assert answered["capped"] is True


async def test_the_mcp_door_keeps_a_tool_calls_thirty_seconds(server: RunningServer) -> None:
    room = quiet_room(server)
    args = {"roomId": room, "agentId": "a", "timeoutMs": 60_000}
    waiting = asyncio.ensure_future(
        asyncio.to_thread(mcp, server.url, TEAM_A_SECRET, "wait_for_events", args)
    )
    await asyncio.sleep(0.5)
    await asyncio.to_thread(post, server, room)
    result = (await waiting).json()["result"]["structuredContent"]
    assert result["count"] == 1 and result["timeoutMs"] == 30_000 and result["capped"] is True


async def test_a_client_that_leaves_frees_its_waiting_slot(server: RunningServer) -> None:
    """The team may hold one waiting call: while the long wait is open a second is refused,
    and once its client hangs up (after the keep-alives began) the next is admitted, not
    refused until the abandoned wait's 10 minutes are up."""
    room = quiet_room(server)
    async with httpx.AsyncClient(timeout=30) as http:
        async for status, chunks in long_wait(http, server, room, 600_000, TEAM_A_SECRET):
            assert status == 200
            with anyio.fail_after(10):
                assert await anext(chunks) == b"\n"
            refused = await http.post(
                f"{server.url}/api/v1/rooms/{room}/tools/wait_for_events",
                json={"agentId": "a", "timeoutMs": 100},
                headers=AUTH,
            )
            assert refused.status_code == 429 and refused.json()["code"] == "too_many"
            break  # hang up
        with anyio.fail_after(10):
            while True:
                again = await http.post(
                    f"{server.url}/api/v1/rooms/{room}/tools/wait_for_events",
                    json={"agentId": "a", "timeoutMs": 100},
                    headers=AUTH,
                )
                if again.status_code == 200:
                    break
                assert again.json()["code"] == "too_many"
                await asyncio.sleep(0.1)
    assert again.json()["timedOut"] is True


async def test_an_error_after_the_keep_alives_is_the_errors_body(server: RunningServer) -> None:
    """Revoked while it waits, past the first keep-alive (the status went out already as
    200): the body ends with the error, which names its code, as the early answer would."""
    team = api(server.url, TEAM_A_SECRET, "POST", "/api/v1/teams", {"slug": new_room_id("rv")})
    key = team.json()["key"]
    room = api(server.url, key["secret"], "POST", "/api/v1/rooms", {}).json()["roomId"]
    async with httpx.AsyncClient(timeout=30) as http:
        async for status, chunks in long_wait(http, server, room, 60_000, key["secret"]):
            assert status == 200
            with anyio.fail_after(10):
                first = await anext(chunks)
            revoked = await asyncio.to_thread(
                api, server.url, key["secret"], "POST", f"/api/v1/keys/{key['id']}/revoke"
            )
            assert revoked.status_code == 200
            with anyio.fail_after(15):
                body = first + b"".join([c async for c in chunks])
    assert json.loads(body)["code"] == "credential_revoked"


async def test_an_agent_in_a_long_wait_stays_online(server: RunningServer) -> None:
    """Waiting is being there: an agent whose one wait lasts longer than the online window
    is marked present again while it waits (each half of PRESENCE_ONLINE_SECONDS), as one
    re-arming every 30 s was by each call."""
    room = quiet_room(server)
    async with httpx.AsyncClient(timeout=30) as http:
        async for status, chunks in long_wait(http, server, room, 60_000, TEAM_A_SECRET):
            assert status == 200
            with anyio.fail_after(10):
                for _ in range(4):  # 4 s: twice the online window
                    assert await anext(chunks) == b"\n"
            listed = await asyncio.to_thread(
                mcp, server.url, TEAM_A_SECRET, "get_presence", {"roomId": room}
            )
            agents = listed.json()["result"]["structuredContent"]["result"]
            await asyncio.to_thread(post, server, room)
            body = b"".join([c async for c in chunks])
    assert json.loads(body)["count"] == 1
    assert {a["agentId"]: a["status"] for a in agents}["a"] == "online"
