"""A warm tool call costs the store at most two round trips: the budget step (the charge and
the team's epoch, which every in-process answer is checked against) and the tool's own step.
A read that names its agent also sends that agent's presence step (issue 24), at the same
time as its own, so it waits for no third. Counted with MONITOR on every node holding the
call's keys, against the real server."""

from __future__ import annotations

import asyncio
import hashlib
import re
from typing import Any

import httpx
import pytest

from rooms import lua, scripts
from rooms.store.engine import script_source
from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, RunningServer
from tests.e2e.test_push import mcp_call, mcp_value
from tests.redis_monitor import commands_seen, primaries

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
WARM_TOOLS: list[tuple[str, dict[str, Any]]] = [
    ("read_plan", {}),
    ("get_unread_events", {"agentId": "alice"}),
    ("heartbeat", {"agentId": "alice"}),
    ("post_event", {"type": "note", "from": "alice", "payload": {"n": 1}}),
    ("read_events", {"limit": 5}),
]


# An idle agent's wait that nothing wakes, every command counted, scripts' inner calls too:
# the call's budget step (the epoch; these servers run without the limiter, whose charge
# adds 3: `make bench`, section idle, counts it) and the read (its cursor and one XRANGE).
# The waiting call is held in the web process (tenants.budgets), nothing in Redis.
IDLE_WAIT_COMMANDS = 5


async def _call(http: httpx.AsyncClient, url: str, secret: str, tool: str, args: Any) -> Any:
    return mcp_value(await mcp_call(http, url, tool, args, secret))


def _ours(command: str, room: str, team_id: int) -> bool:
    return room in command or f"{{team:{team_id}}}" in command or "{bearer:" in command


async def _team_key(http: httpx.AsyncClient, url: str) -> tuple[str, int]:
    made = await http.post(
        f"{url}/api/v1/teams",
        json={"slug": new_room_id("rt")},
        headers={"authorization": f"Bearer {TEAM_A_SECRET}"},
    )
    assert made.status_code == 201, made.text
    me = await http.get(
        f"{url}/api/v1/me", headers={"authorization": f"Bearer {made.json()['key']['secret']}"}
    )
    return made.json()["key"]["secret"], int(me.json()["teamId"])


async def test_a_warm_tool_call_makes_at_most_two_round_trips(server: RunningServer) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        secret, team_id = await _team_key(http, server.url)
        room = new_room_id("warm")
        for _ in range(2):  # cold: the key, the room, the activity mark, the scripts
            for tool, args in WARM_TOOLS:
                await _call(http, server.url, secret, tool, {"roomId": room, **args})
        async with commands_seen(primaries()) as watched:
            counts = {}
            for tool, args in WARM_TOOLS:
                await watched.settle()
                before = len(watched.outer)
                await _call(http, server.url, secret, tool, {"roomId": room, **args})
                await watched.settle()
                counts[tool] = [c for c in watched.outer[before:] if _ours(c, room, team_id)]
    touch = script_source(lua.write_step(scripts.PRESENCE_TOUCH_SCRIPT, wrote="always"))
    touch_sha = hashlib.sha1(touch.encode()).hexdigest()
    for tool, seen in counts.items():
        commands = [c for c in seen if touch_sha not in c]
        assert len(seen) - len(commands) <= (1 if tool == "get_unread_events" else 0), seen
        assert 1 <= len(commands) <= 2, (tool, commands)
        assert any(f"{{team:{team_id}}}:epoch" in c for c in commands), (tool, commands)
        assert not any("{bearer:" in c for c in commands), (tool, commands)


async def test_a_revoked_key_is_refused_on_its_next_warm_call(server: RunningServer) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        secret, _ = await _team_key(http, server.url)
        room = new_room_id("revoke")
        headers = {"authorization": f"Bearer {secret}"}
        second = await http.post(f"{server.url}/api/v1/keys", json={"name": "b"}, headers=headers)
        assert second.status_code == 201, second.text
        other = second.json()["secret"]
        for _ in range(3):  # warm: remembered by the process, under the team's epoch
            await _call(http, server.url, other, "read_plan", {"roomId": room})
        revoked = await http.post(
            f"{server.url}/api/v1/keys/{second.json()['id']}/revoke", headers=headers
        )
        assert revoked.status_code in (200, 204), revoked.text
        refused = await http.post(
            f"{server.url}/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "read_plan", "arguments": {"roomId": room}},
            },
            headers={"authorization": f"Bearer {other}", "accept": "application/json"},
        )
        assert refused.status_code == 401, refused.text
        # The key that revoked it is still warm and served.
        await _call(http, server.url, secret, "read_plan", {"roomId": room})


async def test_an_idle_agents_wait_costs_a_few_commands_and_none_while_it_waits(
    server: RunningServer,
) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        secret, team_id = await _team_key(http, server.url)
        room = new_room_id("idle")
        mine = re.compile(rf"{re.escape(room)}|team:{team_id}\b")
        args = {"roomId": room, "agentId": "alice"}
        posted = {"roomId": room, "type": "n", "from": "b", "payload": {}}
        await _call(http, server.url, secret, "post_event", posted)
        for _ in range(2):  # warm: the key, the room, the scripts; alice has read it all
            await _call(http, server.url, secret, "wait_for_events", {**args, "timeoutMs": 10})
        async with commands_seen(primaries()) as watched:
            await watched.settle()
            start = len(watched.seen)
            waiting = asyncio.ensure_future(
                _call(http, server.url, secret, "wait_for_events", {**args, "timeoutMs": 2_000})
            )
            await asyncio.sleep(0.5)
            await watched.settle()
            armed = len(watched.seen)
            await asyncio.sleep(0.5)
            await watched.settle()
            quiet = watched.seen[armed:]
            answer = await waiting
            await watched.settle()
            spent = [c for c in watched.seen[start:] if mine.search(c)]
    touch = script_source(lua.write_step(scripts.PRESENCE_TOUCH_SCRIPT, wrote="always"))
    touch_sha = hashlib.sha1(touch.encode()).hexdigest()
    assert answer["timedOut"] is True
    assert [c for c in quiet if mine.search(c)] == []  # nothing while it waits
    # (alice's presence, renewed once a tenth of its term, is hers, not the wait's)
    spent = [c for c in spent if touch_sha not in c]
    assert len(spent) <= IDLE_WAIT_COMMANDS, spent


@pytest.mark.parametrize("key", ["a team's key", "a static key (API_KEYS)"])
async def test_a_known_key_opens_its_stream_as_a_warm_call_does(
    server: RunningServer, key: str
) -> None:
    """A stream reconnects every SSE_MAX_LIFETIME_SECONDS: a key this process knows opens it
    with its budget step's epoch and the room as last seen, not the room's cold check (whose
    script renews every key of the room: 53 commands) and the key's lookup. A static key is
    admitted without a budget step, so its stream takes one for the epoch."""
    async with httpx.AsyncClient(timeout=20) as http:
        if key == "a team's key":
            secret, team_id = await _team_key(http, server.url)
        else:
            secret = TEAM_A_SECRET
            me = await http.get(
                f"{server.url}/api/v1/me", headers={"authorization": f"Bearer {secret}"}
            )
            team_id = int(me.json()["teamId"])
        room = new_room_id("sse")
        posted = {"roomId": room, "type": "n", "from": "b", "payload": {}}
        await _call(http, server.url, secret, "post_event", posted)
        url = f"{server.url}/api/v1/rooms/{room}/events/stream"

        async def opened() -> None:
            async with http.stream("GET", url, headers={"authorization": f"Bearer {secret}"}) as r:
                assert r.status_code == 200, await r.aread()

        await opened()  # cold: the key, the room
        async with commands_seen(primaries()) as watched:
            await watched.settle()
            before = len(watched.outer)
            await opened()
            await watched.settle()
            seen = [c for c in watched.outer[before:] if _ours(c, room, team_id)]
    # The budget step (the epoch), the newest event's id, and the first read if it got there.
    assert 1 <= len(seen) <= 3, seen
    assert any(f"{{team:{team_id}}}:epoch" in c for c in seen), seen
    assert not any("{bearer:" in c for c in seen), seen
