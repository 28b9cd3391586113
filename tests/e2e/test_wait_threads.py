"""The REST door's waits (the guard's hooks: one per idle agent, for minutes) and open
event streams hold no OS thread each. Django runs a sync middleware from a thread of the
request's own, which waits there for the view or lives as long as the response: each
waiting call and each open stream held one (config.asgi._SharedThreadHandler). Django's
other pages keep their request cycle as it was."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.conftest import new_room_id
from tests.e2e.conftest import (
    TEAM_A_SECRET,
    TEAM_B_SECRET,
    WEB_ONLY,
    RunningServer,
    start_server,
)
from tests.e2e.test_revocation import mcp

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
WAITS = 24


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = start_server({"SSE_STREAMS_PER_TEAM": str(2 * WAITS), **WEB_ONLY})
    yield running
    running.stop()


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


async def _waiting(http: httpx.AsyncClient, server: RunningServer) -> int:
    text = (await http.get(f"{server.url}/metrics")).text
    found = re.search(r'^roomservice_open\{kind="waiters"\} ([0-9.e+]+)', text, re.M)
    return int(float(found.group(1))) if found else 0


async def test_rest_waits_hold_no_thread_each_and_all_answer(server: RunningServer) -> None:
    room = new_room_id("threads")
    agents = [f"agent-{i}" for i in range(WAITS)]
    for agent in agents:
        mcp(server.url, TEAM_A_SECRET, "get_unread_events", {"roomId": room, "agentId": agent})
    pid = server.process.pid
    async with httpx.AsyncClient(timeout=60) as http:
        before = _threads(pid)
        waits = [
            asyncio.ensure_future(
                http.post(
                    f"{server.url}/api/v1/rooms/{room}/tools/wait_for_events",
                    json={"agentId": agent, "timeoutMs": 60_000},
                    headers={"authorization": f"Bearer {TEAM_A_SECRET}"},
                )
            )
            for agent in agents
        ]
        async with asyncio.timeout(30):
            while await _waiting(http, server) < WAITS:
                await asyncio.sleep(0.1)
        held = _threads(pid) - before
        args = {"roomId": room, "type": "t", "from": "writer", "payload": {}}
        await asyncio.to_thread(mcp, server.url, TEAM_A_SECRET, "post_event", args)
        answers = await asyncio.wait_for(asyncio.gather(*waits), 60)
        # A page of Django's own still works beside them, with its headers.
        page = await http.get(f"{server.url}/login")
    assert held <= 2, f"{WAITS} waiting REST calls took {held} more threads"
    assert all(a.status_code == 200 for a in answers)
    assert all(a.json()["count"] == 1 and a.json()["timedOut"] is False for a in answers)
    assert all("Content-Security-Policy" in a.headers for a in answers)
    assert (
        page.status_code == 200 and "script-src 'self'" in page.headers["Content-Security-Policy"]
    )


async def test_open_event_streams_hold_no_thread_each_and_all_hear_a_write(
    server: RunningServer,
) -> None:
    room = new_room_id("streams")
    mcp(server.url, TEAM_A_SECRET, "heartbeat", {"roomId": room, "agentId": "a"})
    pid = server.process.pid
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=60))
        before = _threads(pid)
        streams = []
        for _ in range(WAITS):
            response = await stack.enter_async_context(
                http.stream(
                    "GET",
                    f"{server.url}/api/v1/rooms/{room}/events/stream",
                    headers={"authorization": f"Bearer {TEAM_A_SECRET}"},
                )
            )
            assert response.status_code == 200
            lines = response.aiter_lines()
            await anext(lines)  # retry: the stream is open
            streams.append(lines)
        held = _threads(pid) - before
        args = {"roomId": room, "type": "t", "from": "writer", "payload": {"n": 1}}
        await asyncio.to_thread(mcp, server.url, TEAM_A_SECRET, "post_event", args)

        async def data(lines: AsyncIterator[str]) -> str:
            async for line in lines:
                if line.startswith("data: "):
                    return line
            return ""

        heard = await asyncio.wait_for(asyncio.gather(*(data(s) for s in streams)), 30)
    assert held <= 2, f"{WAITS} open streams took {held} more threads"
    assert all('"payload":{"n":1}' in line for line in heard)


async def test_the_held_doors_refuse_another_teams_key_as_before(server: RunningServer) -> None:
    """Through the held handler, the same middleware and views decide: team B's key reaches
    neither team A's room's wait nor its stream, and team A's reaches both."""
    room = new_room_id("held")
    mcp(server.url, TEAM_A_SECRET, "heartbeat", {"roomId": room, "agentId": "a"})
    wait = f"{server.url}/api/v1/rooms/{room}/tools/wait_for_events"
    stream = f"{server.url}/api/v1/rooms/{room}/events/stream"
    async with httpx.AsyncClient(timeout=30) as http:
        answers = {}
        for team, secret in (("a", TEAM_A_SECRET), ("b", TEAM_B_SECRET)):
            auth = {"authorization": f"Bearer {secret}"}
            waited = await http.post(wait, json={"agentId": "a", "timeoutMs": 0}, headers=auth)
            async with http.stream("GET", stream, headers=auth) as opened:
                streamed = opened.status_code
            answers[team] = (waited.status_code, waited.json(), streamed)
    assert answers["a"][0] == 200 and "events" in answers["a"][1] and answers["a"][2] == 200
    # Not found, as through Django's own handler: another team's room is not said to exist.
    assert answers["b"][0] == 404 and answers["b"][1]["code"] == "room_not_found"
    assert answers["b"][2] == 404
