"""Push delivery over real HTTP: wait_for_events wakes up across server processes and
delivers each event exactly once; the SSE stream delivers in order, resumes after
Last-Event-ID without gap or repeat, sends keep-alives, caps a team's open streams and
refuses other teams; the REST tool door answers exactly as MCP does, tool by tool.

"In flight" is observed, not slept for: Redis MONITOR shows the waiter's first read of its
cursor, and wait_for_events registers its wake-up before that read (rooms/services/events.py)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import redis

from mcp_gateway import rest as rest_door
from rooms import errors, registry, scripts
from rooms.keys import RoomKeys
from rooms.store import engine as engine_store
from tenants import errors as tenant_errors
from tenants.auth import UNAUTHORIZED
from tests.conftest import new_room_id, on_cluster
from tests.e2e.conftest import TEAM_A_SECRET, TEAM_B_SECRET, WEB_ONLY, RunningServer, start_server
from tests.redis_monitor import commands_seen
from tests.rooms.test_registry import VALID_ARGS

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

# Teams of their own for the stream-cap tests: the open-stream count is per team and shared
# through Redis by every server of this run, so team-a's streams elsewhere must not count.
CAP_SECRET = "e2e-secret-team-cap-0123456789"
BUSY_SECRET = "e2e-secret-team-busy-0123456789"
KEEPALIVE_SECONDS = 1
STREAM_CAP = 2
BOUND = 15  # seconds: the bound on every single wait in this file

READ_UNREAD_SHA = hashlib.sha1(
    engine_store.script_source(scripts.READ_UNREAD_SCRIPT).encode()
).hexdigest()
READ_MANY_SHA = hashlib.sha1(
    engine_store.script_source(scripts.READ_UNREAD_MANY_SCRIPT).encode()
).hexdigest()


@pytest.fixture(scope="module")
def server_two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A second process on the same Redis: 1 s keep-alives, at most 2 streams per team."""
    keys = ",".join(
        [
            f"team-a:{TEAM_A_SECRET}",
            f"team-b:{TEAM_B_SECRET}",
            f"team-cap:{CAP_SECRET}",
            f"team-busy:{BUSY_SECRET}",
        ]
    )
    running = start_server(
        {
            "SSE_KEEPALIVE_SECONDS": str(KEEPALIVE_SECONDS),
            "SSE_STREAMS_PER_TEAM": str(STREAM_CAP),
            "API_KEYS": keys,
            **WEB_ONLY,
        },
        Path(tmp_path_factory.mktemp("server-two")),
    )
    yield running
    running.stop()


# --- the two doors -----------------------------------------------------------------------


def bearer(secret: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"} if secret is not None else {}


async def mcp_call(
    http: httpx.AsyncClient,
    base: str,
    tool: str,
    arguments: dict[str, Any],
    secret: str = TEAM_A_SECRET,
) -> dict[str, Any]:
    """tools/call over raw JSON-RPC; the JSON-RPC `result` (content, isError, ...)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {**bearer(secret), "accept": "application/json, text/event-stream"}
    r = await http.post(f"{base}/mcp", json=body, headers=headers)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


def mcp_value(result: dict[str, Any]) -> Any:
    text = result["content"][0]["text"]
    assert result["isError"] is False, text
    value = json.loads(text)
    if isinstance(value, dict):
        assert result["structuredContent"] == value
    return value


def mcp_error(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])


async def mcp(
    http: httpx.AsyncClient, base: str, tool: str, secret: str = TEAM_A_SECRET, **args: Any
) -> Any:
    return mcp_value(await mcp_call(http, base, tool, args, secret))


async def rest_call(
    http: httpx.AsyncClient,
    base: str,
    tool: str,
    arguments: Any,
    room: str | None = None,
    secret: str | None = TEAM_A_SECRET,
    raw: bytes | None = None,
) -> httpx.Response:
    url = f"{base}/api/v1/rooms/{room}/tools/{tool}" if room else f"{base}/api/v1/tools/{tool}"
    content = raw if raw is not None else json.dumps(arguments).encode()
    headers = {**bearer(secret), "content-type": "application/json"}
    return await http.post(url, content=content, headers=headers)


async def rest(
    http: httpx.AsyncClient,
    base: str,
    tool: str,
    room: str,
    secret: str = TEAM_A_SECRET,
    **args: Any,
) -> Any:
    r = await rest_call(http, base, tool, args, room, secret)
    assert r.status_code == 200, r.text
    return r.json()


def room_args(tool: str, room: str, args: dict[str, Any]) -> dict[str, Any]:
    """MCP's arguments: the REST body plus roomId for room tools."""
    if registry.TOOLS_BY_NAME[tool].scope == "room":
        return {"roomId": room, **args}
    return dict(args)


# --- SSE ---------------------------------------------------------------------------------


class EventSource:
    """Frames of a text/event-stream: {"id", "data", "retry", "comments": [...]}, each
    key present only when the frame had it."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def frame(self) -> dict[str, Any]:
        frame: dict[str, Any] = {}
        with anyio.fail_after(BOUND):
            while True:
                line = await self._lines.__anext__()
                if line == "":
                    if frame:
                        return frame
                    continue
                if line.startswith(":"):
                    frame.setdefault("comments", []).append(
                        line[2:] if line[1:2] == " " else line[1:]
                    )
                    continue
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "data" and "data" in frame:
                    frame["data"] += "\n" + value
                else:
                    frame[field] = value

    async def event(self) -> dict[str, Any]:
        """The next frame that carries data (keep-alive comments skipped)."""
        while True:
            frame = await self.frame()
            if "data" in frame:
                return frame


def stream_url(base: str, room: str) -> str:
    return f"{base}/api/v1/rooms/{room}/events/stream"


async def stream_open(
    http: httpx.AsyncClient,
    base: str,
    room: str,
    secret: str | None = TEAM_A_SECRET,
    last_event_id: str | None = None,
) -> httpx.Response:
    headers = {**bearer(secret), "accept": "text/event-stream"}
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    request = http.build_request("GET", stream_url(base, room), headers=headers)
    return await http.send(request, stream=True)


async def stream_start(response: httpx.Response, room: str) -> EventSource:
    """Check the stream's opening frame and return its reader."""
    assert response.status_code == 200, (await response.aread()).decode()
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    source = EventSource(response)
    first = await source.frame()
    assert set(first) == {"retry", "comments"}
    assert first["retry"] == "2000"
    assert len(first["comments"]) == 1
    assert re.fullmatch(rf"stream [0-9a-f]{{16}} for {re.escape(room)}", first["comments"][0])
    return source


def as_frame(event: dict[str, Any]) -> dict[str, Any]:
    return {"id": event["id"], "data": event}


def decoded(frame: dict[str, Any]) -> dict[str, Any]:
    return {"id": frame["id"], "data": json.loads(frame["data"])}


# --- "the wait is in flight": its cursor read, seen by Redis MONITOR ----------------------


@contextlib.asynccontextmanager
async def redis_commands(room: str) -> AsyncIterator[list[str]]:
    """Every command the Redis holding `room` receives (on a cluster, the room's master)."""
    url = os.environ["REDIS_URL"]
    if on_cluster():
        cluster = redis.RedisCluster.from_url(url)
        node = cluster.get_node_from_key(RoomKeys(room).events)
        url = f"redis://{node.host}:{node.port}/0"
        cluster.close()
    async with commands_seen({"room": url}) as watched:
        yield watched.seen


def _script_call(command: str, cursors: str) -> tuple[str, list[str], int] | None:
    """("one" | "many", the command's words, where its ARGV start) for a read script's call
    on the room's `cursors`, by EVALSHA or (a node's first sight of it) by EVAL; else None.
    Positions are counted from the call's own number of KEYS, so a key added to the read
    scripts does not silently shift what is read here."""
    parts = command.split(" ")
    if not parts or parts[0].upper() not in ("EVALSHA", "EVAL") or cursors not in parts:
        return None
    first = parts.index(cursors) - 1  # KEYS[1], the events, stands just before the cursors
    if first < 1 or not parts[first - 1].isdigit():
        return None
    at = first + int(parts[first - 1])  # where ARGV starts: after the call's KEYS, counted
    if parts[1] == READ_UNREAD_SHA or ", cursor, previous, redis.call(" in command:
        return "one", parts, at
    if parts[1] == READ_MANY_SHA or "local replies, entries, seen" in command:
        return "many", parts, at
    return None


def cursor_reads(seen: list[str], room: str, agent: str) -> int:
    """How many reads of `agent`'s cursor in `room` Redis received: READ_UNREAD calls, and
    reads within READ_UNREAD_MANY calls (the waiters' gathered reads)."""
    cursors = RoomKeys(room).cursors
    count = 0
    for command in seen:
        found = _script_call(command, cursors)
        if found is None:
            continue
        kind, parts, at = found
        if kind == "one" and len(parts) > at and parts[at] == agent:
            count += 1
        elif kind == "many":
            count += sum(1 for k in range(at + 4, len(parts), 5) if parts[k] == agent)
    return count


def many_reads(seen: list[str], room: str) -> list[list[str]]:
    """The READ_UNREAD_MANY calls Redis received for `room`, as the agents each one read."""
    cursors = RoomKeys(room).cursors
    out = []
    for command in seen:
        found = _script_call(command, cursors)
        if found is not None and found[0] == "many":
            _, parts, at = found
            out.append([parts[k] for k in range(at + 7, len(parts), 5)])
    return out


async def scripts_loaded(http: httpx.AsyncClient, url: str, room: str) -> None:
    """Claim the room and load both read scripts, so every read after is one EVALSHA."""
    await mcp(http, url, "get_unread_events", roomId=room, agentId="warm-up")
    await mcp(http, url, "wait_for_events", roomId=room, agentId="warm-up", timeoutMs=0)


async def until_reads(seen: list[str], room: str, agent: str, count: int) -> None:
    with anyio.fail_after(BOUND):
        while cursor_reads(seen, room, agent) < count:
            await anyio.sleep(0.01)


# =========================================================================================
# 1. wait_for_events
# =========================================================================================


async def test_wait_wakes_when_another_server_process_posts(
    server: RunningServer, server_two: RunningServer
) -> None:
    room = new_room_id("wake")
    async with httpx.AsyncClient(timeout=40) as http, redis_commands(room) as seen:
        await scripts_loaded(http, server.url, room)
        waiter = asyncio.get_running_loop().create_task(
            mcp_call(
                http,
                server.url,
                "wait_for_events",
                {"roomId": room, "agentId": "waiter", "timeoutMs": 20000},
            )
        )
        await until_reads(seen, room, "waiter", 1)  # registered, read nothing, now asleep
        assert not waiter.done()
        posted = await mcp(
            http,
            server_two.url,
            "post_event",
            roomId=room,
            type="peer_request",
            **{"from": "poster"},
            to="waiter",
            payload={"n": 1},
        )
        with anyio.fail_after(BOUND):
            result = mcp_value(await waiter)
    assert posted["from"] == "poster" and posted["to"] == "waiter"
    assert result == {
        "events": [posted],
        "cursor": posted["id"],
        "count": 1,
        "timedOut": False,
        "timeoutMs": 20000,
        "capped": False,
    }


async def test_the_waiters_one_write_wakes_share_one_read(server: RunningServer) -> None:
    room = new_room_id("fanout")
    agents = [f"w{i:02d}" for i in range(30)]
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=40, limits=limits) as http, redis_commands(room) as seen:
        await scripts_loaded(http, server.url, room)
        waits = [
            asyncio.get_running_loop().create_task(
                mcp_call(
                    http,
                    server.url,
                    "wait_for_events",
                    {"roomId": room, "agentId": agent, "timeoutMs": 20000},
                )
            )
            for agent in agents
        ]
        for agent in agents:
            await until_reads(seen, room, agent, 1)  # each registered, read nothing, asleep
        asleep = len(seen)
        posted = await mcp(
            http, server.url, "post_event", roomId=room, type="go", **{"from": "boss"}
        )
        with anyio.fail_after(BOUND):
            results = [mcp_value(r) for r in await asyncio.gather(*waits)]
    assert all(r["events"] == [posted] and r["count"] == 1 for r in results)
    after = many_reads(seen[asleep:], room)
    # Thirty wake-ups, a handful of script calls between them, each cursor moved once.
    assert 1 <= len(after) <= 3, after
    woken = [agent for call in after for agent in call]
    assert sorted(woken) == agents
    assert cursor_reads(seen[asleep:], room, "w00") == 1


async def test_wait_times_out_with_nothing(server: RunningServer) -> None:
    room = new_room_id("timeout")
    async with httpx.AsyncClient(timeout=30) as http:
        old = await mcp(
            http, server.url, "post_event", roomId=room, type="old", **{"from": "x"}, payload={}
        )
        taken = await mcp(http, server.url, "get_unread_events", roomId=room, agentId="idle")
        assert [e["id"] for e in taken["events"]] == [old["id"]]
        result = await mcp(
            http, server.url, "wait_for_events", roomId=room, agentId="idle", timeoutMs=300
        )
        fresh = await mcp(
            http, server.url, "wait_for_events", roomId=room, agentId="never-read", timeoutMs=300
        )
    said = {"timeoutMs": 300, "capped": False}
    assert result == {"events": [], "cursor": old["id"], "count": 0, "timedOut": True, **said}
    # A new agent has not read the old event yet: it gets it at once.
    assert fresh == {"events": [old], "cursor": old["id"], "count": 1, "timedOut": False, **said}


async def test_two_waits_of_one_agent_share_one_event_exactly_once(
    server: RunningServer, server_two: RunningServer
) -> None:
    room = new_room_id("once")
    timeout_ms = 2500
    async with httpx.AsyncClient(timeout=40) as http, redis_commands(room) as seen:
        await scripts_loaded(http, server.url, room)
        await scripts_loaded(http, server_two.url, room)
        loop = asyncio.get_running_loop()
        waits = [
            loop.create_task(
                mcp_call(
                    http,
                    base,
                    "wait_for_events",
                    {"roomId": room, "agentId": "twin", "timeoutMs": timeout_ms},
                )
            )
            for base in (server.url, server_two.url)  # one wait through each process
        ]
        await until_reads(seen, room, "twin", 2)  # both asleep on the room
        assert not any(w.done() for w in waits)
        r = await rest_call(
            http,
            server.url,
            "post_event",
            {"type": "ping", "from": "poster", "payload": {"k": "v"}},
            room,
        )
        assert r.status_code == 200, r.text
        posted = r.json()
        with anyio.fail_after(BOUND):
            results = [mcp_value(await w) for w in waits]
    winners = [x for x in results if x["events"]]
    losers = [x for x in results if not x["events"]]
    said = {"timeoutMs": timeout_ms, "capped": False}
    assert winners == [
        {"events": [posted], "cursor": posted["id"], "count": 1, "timedOut": False, **said}
    ]
    assert losers == [{"events": [], "cursor": posted["id"], "count": 0, "timedOut": True, **said}]


# =========================================================================================
# 2. SSE
# =========================================================================================


async def post_alternating(
    http: httpx.AsyncClient,
    base: str,
    room: str,
    start: int,
    count: int,
    secret: str = TEAM_A_SECRET,
) -> list[dict[str, Any]]:
    """Post `count` events, odd ones through the REST door and even ones through MCP."""
    posted = []
    for n in range(start, start + count):
        args = {"type": "tick", "from": "writer", "payload": {"n": n, "text": f"é{n}"}}
        if n % 2:
            posted.append(await rest(http, base, "post_event", room, secret, **args))
        else:
            posted.append(await mcp(http, base, "post_event", secret, roomId=room, **args))
    return posted


async def test_sse_delivers_in_order_and_resumes_after_last_event_id(
    server: RunningServer,
) -> None:
    room = new_room_id("sse")
    async with httpx.AsyncClient(timeout=30) as http:
        before = await post_alternating(http, server.url, room, 0, 2)  # not replayed
        posted: list[dict[str, Any]] = []
        got: list[dict[str, Any]] = []

        response = await stream_open(http, server.url, room)
        try:
            source = await stream_start(response, room)
            posted += await post_alternating(http, server.url, room, 1, 5)
            got += [decoded(await source.event()) for _ in range(5)]
            assert got == [as_frame(e) for e in posted]  # in order, id == event id
            posted += await post_alternating(http, server.url, room, 6, 3)
            got.append(decoded(await source.event()))  # read one of three, then drop
        finally:
            await response.aclose()
        last_seen = got[-1]["id"]
        assert last_seen == posted[5]["id"]

        posted += await post_alternating(http, server.url, room, 9, 4)  # while disconnected

        async with http.stream(
            "GET",
            stream_url(server.url, room),
            headers={
                **bearer(TEAM_A_SECRET),
                "accept": "text/event-stream",
                "last-event-id": last_seen,
            },
        ) as resumed:
            source = await stream_start(resumed, room)
            got += [decoded(await source.event()) for _ in range(len(posted) - len(got))]
            # Nothing else is pending: the next frame is the next event written.
            sentinel = (await post_alternating(http, server.url, room, 13, 1))[0]
            assert decoded(await source.event()) == as_frame(sentinel)

    ids = [g["id"] for g in got]
    assert got == [as_frame(e) for e in posted]  # every event once, no gap, in order
    assert len(set(ids)) == len(ids) == 12
    assert not {e["id"] for e in before} & set(ids)


async def test_sse_resumes_from_the_last_event_id_query_parameter(server: RunningServer) -> None:
    room = new_room_id("sseq")
    async with httpx.AsyncClient(timeout=30) as http:
        posted = await post_alternating(http, server.url, room, 0, 3)
        url = f"{stream_url(server.url, room)}?lastEventId={posted[0]['id']}"
        async with http.stream(
            "GET", url, headers={**bearer(TEAM_A_SECRET), "accept": "text/event-stream"}
        ) as response:
            source = await stream_start(response, room)
            got = [decoded(await source.event()) for _ in range(2)]
    assert got == [as_frame(e) for e in posted[1:]]


async def test_sse_sends_keep_alive_comments_on_a_quiet_stream(
    server_two: RunningServer,
) -> None:
    room = new_room_id("quiet")
    async with httpx.AsyncClient(timeout=30) as http:
        await rest(http, server_two.url, "heartbeat", room, agentId="a")  # no event
        async with http.stream(
            "GET",
            stream_url(server_two.url, room),
            headers={**bearer(TEAM_A_SECRET), "accept": "text/event-stream"},
        ) as response:
            source = await stream_start(response, room)
            assert await source.frame() == {"comments": ["keep-alive"]}
            assert await source.frame() == {"comments": ["keep-alive"]}
            posted = (await post_alternating(http, server_two.url, room, 1, 1))[0]
            assert decoded(await source.event()) == as_frame(posted)


async def test_sse_addressed_to_carries_exactly_the_agents_events(
    server_two: RunningServer,
) -> None:
    """?addressedTo=alice: her messages and everything for "all", never a message whose
    recipients are others — the same rule as inbox and addressedOnly."""
    room = new_room_id("addressed")
    async with httpx.AsyncClient(timeout=30) as http:
        for agent in ("alice", "bob", "carol"):
            await rest(http, server_two.url, "heartbeat", room, agentId=agent)
        bad = await http.get(
            stream_url(server_two.url, room) + "?addressedTo=",
            headers={**bearer(TEAM_A_SECRET), "accept": "text/event-stream"},
        )
        assert bad.status_code == 400 and bad.json()["code"] == "invalid_arguments"
        async with http.stream(
            "GET",
            stream_url(server_two.url, room) + "?addressedTo=alice",
            headers={**bearer(TEAM_A_SECRET), "accept": "text/event-stream"},
        ) as response:
            source = await stream_start(response, room)
            sent = {"from": "bob", "body": "not for alice"}
            await rest(http, server_two.url, "send_message", room, to="carol", **sent)
            mine = await rest(
                http, server_two.url, "send_message", room, to="*", **{**sent, "body": "all"}
            )
            said = await rest(
                http, server_two.url, "room_broadcast", room, agentId="bob", text="hi"
            )
            first, second = decoded(await source.event()), decoded(await source.event())
        assert first["data"]["type"] == "message"
        assert first["data"]["payload"]["messageId"] == mine["messageId"]
        assert sorted(first["data"]["recipients"]) == ["alice", "carol"]
        assert second["id"] == said["id"]  # carol's own message never came


async def refused(response: httpx.Response) -> None:
    """A 429 for a stream over the team's cap (checked before reading: a 200 never ends)."""
    try:
        assert response.status_code == 429, "admitted over the cap"
        assert response.headers["retry-after"] == str(KEEPALIVE_SECONDS)
        with anyio.fail_after(BOUND):
            body = await response.aread()
        assert json.loads(body) == {
            "message": tenant_errors.TOO_MANY.format(
                what="Event streams", scope="team", cap=STREAM_CAP
            ),
            "code": "too_many",
            "extra": {"retryAfter": KEEPALIVE_SECONDS},
        }
    finally:
        await response.aclose()


async def test_sse_streams_per_team_are_capped_and_a_closed_one_frees_its_slot(
    server_two: RunningServer,
) -> None:
    base = server_two.url
    room = new_room_id("cap")
    async with httpx.AsyncClient(timeout=30) as http:
        await rest(http, base, "heartbeat", room, CAP_SECRET, agentId="a")
        first = await stream_open(http, base, room, CAP_SECRET)
        second = await stream_open(http, base, room, CAP_SECRET)
        try:
            # Hold the readers: a dropped reader is collected, and that closes its stream.
            readers = [await stream_start(first, room), await stream_start(second, room)]
            await refused(await stream_open(http, base, room, CAP_SECRET))
            # Another team is not counted against this one.
            async with http.stream(
                "GET",
                stream_url(base, room + "-a"),
                headers={**bearer(TEAM_A_SECRET), "accept": "text/event-stream"},
            ) as other_team:
                await stream_start(other_team, room + "-a")

            await first.aclose()  # the server notices the disconnect and frees the slot
            admitted: httpx.Response | None = None
            attempts = 0
            with anyio.fail_after(BOUND):
                while admitted is None:
                    attempts += 1
                    attempt = await stream_open(http, base, room, CAP_SECRET)
                    if attempt.status_code == 200:
                        admitted = attempt
                    else:
                        await refused(attempt)
                        await anyio.sleep(0.05)  # poll until the server has noticed
            try:
                readers.append(await stream_start(admitted, room))
                posted = (await post_alternating(http, base, room, 1, 1, CAP_SECRET))[0]
                # The surviving stream and the new one both deliver it.
                assert decoded(await readers[1].event()) == as_frame(posted)
                assert decoded(await readers[2].event()) == as_frame(posted)
                await refused(await stream_open(http, base, room, CAP_SECRET))  # full again
            finally:
                await admitted.aclose()
        finally:
            await first.aclose()
            await second.aclose()


async def test_sse_busy_streams_still_count_against_the_cap(server_two: RunningServer) -> None:
    """Two streams kept busy (an event at least every 0.2 s, so no quiet keep-alive
    second) for longer than their 3-keep-alive lease: a third must still be refused."""
    base = server_two.url
    room = new_room_id("busy")
    lease_seconds = 3 * KEEPALIVE_SECONDS
    async with httpx.AsyncClient(timeout=30) as http:
        await rest(http, base, "heartbeat", room, BUSY_SECRET, agentId="a")
        streams = [await stream_open(http, base, room, BUSY_SECRET) for _ in range(2)]
        try:
            sources = [await stream_start(s, room) for s in streams]
            received: list[list[str]] = [[], []]

            async def drain(i: int) -> None:
                while True:
                    received[i].append((await sources[i].event())["id"])

            loop = asyncio.get_running_loop()
            drains = [loop.create_task(drain(i)) for i in range(2)]
            posted: list[str] = []
            third_status = None
            started = time.monotonic()
            try:
                with anyio.fail_after(BOUND):
                    while third_status is None:
                        event = await rest(
                            http,
                            base,
                            "post_event",
                            room,
                            BUSY_SECRET,
                            type="tick",
                            **{"from": "w"},
                        )
                        posted.append(event["id"])
                        if time.monotonic() - started > lease_seconds + 1:
                            third = await stream_open(http, base, room, BUSY_SECRET)
                            third_status = third.status_code
                            if third_status == 429:
                                await refused(third)
                            await third.aclose()
                        else:
                            await anyio.sleep(0.2)  # paces the writer; the condition, not a pass
                    with anyio.fail_after(BOUND):
                        while any(r != posted for r in received):
                            await anyio.sleep(0.01)
            finally:
                for d in drains:
                    d.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await d
        finally:
            for s in streams:
                await s.aclose()
    assert received == [posted, posted]  # both streams were open and busy throughout
    assert third_status == 429


async def test_sse_refuses_other_teams_and_missing_keys(server: RunningServer) -> None:
    room = new_room_id("private")
    async with httpx.AsyncClient(timeout=30) as http:
        await rest(http, server.url, "heartbeat", room, agentId="a")  # team A owns it
        denied = await http.get(
            stream_url(server.url, room),
            headers={**bearer(TEAM_B_SECRET), "accept": "text/event-stream"},
        )
        mcp_denied = mcp_error(
            await mcp_call(http, server.url, "read_events", {"roomId": room}, TEAM_B_SECRET)
        )
        for secret in (None, "not-a-key"):
            unauthorized = await http.get(
                stream_url(server.url, room),
                headers={**bearer(secret), "accept": "text/event-stream"},
            )
            assert unauthorized.status_code == 401
            assert unauthorized.headers["www-authenticate"] == 'Bearer realm="roomservice"'
            assert unauthorized.json() == {
                "message": UNAUTHORIZED,
                "code": "not_authenticated",
                "extra": {},
            }
    assert denied.status_code == 404
    assert denied.json() == {
        "message": errors.ROOM_ACCESS_DENIED,
        "code": "room_not_found",
        "extra": {},
    }
    assert mcp_denied == errors.ROOM_ACCESS_DENIED


async def test_sse_refuses_room_ids_that_no_tool_accepts(server: RunningServer) -> None:
    """The stream door answers a malformed roomId as the tool door does, and claims nothing."""
    token = new_room_id("x").split("-")[1]
    async with httpx.AsyncClient(timeout=30) as http:
        for bad in (f"Bad_Room_{token}", "a" * 70 + token):
            tool = await rest_call(http, server.url, "read_plan", {}, bad)
            assert tool.status_code == 400, tool.text  # the tool door's answer
            async with http.stream(
                "GET",
                stream_url(server.url, bad),
                headers={**bearer(TEAM_A_SECRET), "accept": "text/event-stream"},
            ) as stream:
                status = stream.status_code
                body = json.loads(await stream.aread()) if status != 200 else None
            assert (status, body) == (400, tool.json()), bad
        rooms = await rest_call(http, server.url, "list_rooms", {})
    assert rooms.status_code == 200, rooms.text
    assert [row["roomId"] for row in rooms.json() if token in row["roomId"]] == []


# =========================================================================================
# 3. the REST door answers as MCP does
# =========================================================================================

ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
GENERATED_ID = re.compile(r"\b(?:[tcrlmh]_[A-Za-z0-9]{12}|\d{13}-\d+)\b")


class Normalizer:
    """Rewrites one room's generated values: its room id, times, and ids (numbered by first
    appearance, so two rooms given the same calls read the same)."""

    def __init__(self, room: str) -> None:
        self.room = room
        self.ids: dict[str, str] = {}

    def _id(self, match: re.Match[str]) -> str:
        return self.ids.setdefault(match.group(0), f"<id{len(self.ids)}>")

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {self(k): self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, str):
            text = value.replace(self.room, "<room>")
            text = ISO_TIME.sub("<time>", text)
            return GENERATED_ID.sub(self._id, text)
        return value


NOTE = {"text": "hello", "references": ["a"]}
CONTRACT = {
    "service": "auth",
    "version": "1.0",
    "endpoints": [
        {
            "method": "POST",
            "path": "/login",
            "response": {"token": "string"},
            "auth_required": False,
            "description": "log in",
        }
    ],
}

Step = tuple[str, str, Callable[[dict[str, Any]], dict[str, Any]]]

# (label, tool, arguments from the earlier results of the same room). Every tool once at
# least; the labels name results that later steps use.
SCENARIO: list[Step] = [
    ("beat-alice", "heartbeat", lambda r: {"agentId": "alice"}),
    ("beat-bob", "heartbeat", lambda r: {"agentId": "bob"}),
    ("presence", "get_presence", lambda r: {}),
    ("plan-empty", "read_plan", lambda r: {}),
    ("t1", "add_task", lambda r: {"title": "design", "description": "d", "priority": 2}),
    ("t2", "add_task", lambda r: {"title": "build", "depends_on": [r["t1"]["id"]]}),
    ("t3", "add_task", lambda r: {"title": "orphan", "depends_on": ["t_doesnotexist"]}),
    (
        "claim",
        "update_task",
        lambda r: {
            "taskId": r["t1"]["id"],
            "status": "in_progress",
            "owner": "alice",
            "note": "started",
            "agentId": "alice",
        },
    ),
    ("get-t1", "get_task", lambda r: {"taskId": r["t1"]["id"]}),
    ("unblocked", "get_unblocked_tasks", lambda r: {}),
    ("mine", "get_my_tasks", lambda r: {"agentId": "alice"}),
    ("done", "update_task", lambda r: {"taskId": r["t1"]["id"], "status": "done"}),
    ("unblocked-bob", "get_unblocked_tasks", lambda r: {"agentId": "bob"}),
    ("plan", "read_plan", lambda r: {}),
    ("claim-t2", "claim_task", lambda r: {"taskId": r["t2"]["id"], "agentId": "bob"}),
    (
        "claim-t2-carol",  # an error: the same on both doors
        "claim_task",
        lambda r: {"taskId": r["t2"]["id"], "agentId": "carol"},
    ),
    (
        "release-t2",
        "release_task",
        lambda r: {"taskId": r["t2"]["id"], "agentId": "bob", "note": "later"},
    ),
    (
        "c1",
        "write_context",
        lambda r: {
            "type": "note",
            "summary": "a note",
            "consuming_agents": ["bob"],
            "payload": NOTE,
            "author": "alice",
        },
    ),
    (
        "c2",
        "write_context",
        lambda r: {
            "type": "api_contract",
            "summary": "auth API",
            "consuming_agents": ["bob", "carol"],
            "payload": CONTRACT,
            "author": "alice",
        },
    ),
    ("read-c1", "read_context", lambda r: {"id": r["c1"]["id"]}),
    (
        "update-c1",
        "update_context",
        lambda r: {"id": r["c1"]["id"], "author": "bob", "summary": "s2", "expectedVersion": "1.0"},
    ),
    (
        "stale-c1",  # an error: the same on both doors
        "update_context",
        lambda r: {"id": r["c1"]["id"], "author": "bob", "summary": "s3", "expectedVersion": "1.0"},
    ),
    ("contexts", "list_context", lambda r: {}),
    ("notes", "list_context", lambda r: {"type": "note", "author": "bob"}),
    (
        "e1",
        "post_event",
        lambda r: {"type": "peer_request", "from": "alice", "to": "bob", "payload": {"q": 1}},
    ),
    (
        "e2",
        "reply_to_event",
        lambda r: {"replyToId": r["e1"]["id"], "type": "peer_reply", "from": "bob", "payload": {}},
    ),
    ("events", "read_events", lambda r: {"limit": 5}),
    ("events-asc", "read_events", lambda r: {"since": r["e1"]["id"], "order": "asc"}),
    ("unread-bob", "get_unread_events", lambda r: {"agentId": "bob", "limit": 3}),
    ("unread-bob-2", "get_unread_events", lambda r: {"agentId": "bob", "addressedOnly": True}),
    ("wait-carol", "wait_for_events", lambda r: {"agentId": "carol", "timeoutMs": 0}),
    ("wait-carol-2", "wait_for_events", lambda r: {"agentId": "carol", "timeoutMs": 0}),
    ("mark", "mark_event_read", lambda r: {"eventId": r["e1"]["id"], "agentId": "bob"}),
    ("reads", "get_event_reads", lambda r: {"eventId": r["e1"]["id"]}),
    ("summary", "get_my_summary", lambda r: {"agentId": "alice"}),
    ("lock", "acquire_lock", lambda r: {"resource": "db", "agentId": "alice", "ttlSeconds": 60}),
    ("lock-bob", "acquire_lock", lambda r: {"resource": "db", "agentId": "bob"}),
    ("unlock-bob", "release_lock", lambda r: {"resource": "db", "agentId": "bob"}),
    ("unlock", "release_lock", lambda r: {"resource": "db", "agentId": "alice"}),
    ("lock-cache", "acquire_lock", lambda r: {"resource": "cache", "agentId": "bob"}),
    ("locks", "list_locks", lambda r: {}),
    ("set", "set_shared_var", lambda r: {"key": "port", "value": "3000", "agentId": "alice"}),
    ("get", "get_shared_var", lambda r: {"key": "port"}),
    ("get-missing", "get_shared_var", lambda r: {"key": "nope"}),
    ("vars", "list_shared_vars", lambda r: {}),
    ("info", "get_room_info", lambda r: {}),
    ("analytics", "get_room_analytics", lambda r: {"days": 3}),
    ("t4", "add_task", lambda r: {"title": "extra"}),
    ("prio-t4", "set_task_priority", lambda r: {"taskId": r["t4"]["id"], "priority": 5}),
    ("dep-t4", "add_dependency", lambda r: {"taskId": r["t4"]["id"], "dependsOn": r["t2"]["id"]}),
    (
        "cycle",  # an error: the same on both doors
        "add_dependency",
        lambda r: {"taskId": r["t2"]["id"], "dependsOn": r["t4"]["id"]},
    ),
    ("history-c1", "get_context_history", lambda r: {"id": r["c1"]["id"]}),
    ("diff-c1", "diff_context", lambda r: {"id": r["c1"]["id"], "againstVersion": "1.0"}),
    ("del-t4", "delete_task", lambda r: {"taskId": r["t4"]["id"]}),
    ("del-e2", "delete_event", lambda r: {"eventId": r["e2"]["id"]}),
    ("del-c2", "delete_context", lambda r: {"id": r["c2"]["id"]}),
    ("leave-bob", "leave_room", lambda r: {"agentId": "bob"}),
    (
        "review",
        "request_review",
        lambda r: {
            "targetType": "task",
            "targetId": r["t1"]["id"],
            "requestedBy": "alice",
            "reviewer": "bob",
            "note": "check it",
        },
    ),
    ("approve-wrong", "approve", lambda r: {"reviewId": r["review"]["id"], "agentId": "carol"}),
    ("approve", "approve", lambda r: {"reviewId": r["review"]["id"], "agentId": "bob"}),
    ("reject-late", "reject", lambda r: {"reviewId": r["review"]["id"], "agentId": "bob"}),
    ("reviews", "list_reviews", lambda r: {}),
    ("search", "search", lambda r: {"q": "design build*"}),
    ("templates", "list_templates", lambda r: {}),
    (
        "lease",
        "lease_claim",
        lambda r: {"agentId": "alice", "path": "./src/api/", "taskId": r["t1"]["id"]},
    ),
    ("lease-bob", "lease_claim", lambda r: {"agentId": "bob", "path": "src/api/users.py"}),
    (
        "lease-shared",
        "lease_claim",
        lambda r: {"agentId": "bob", "path": "docs/**", "mode": "shared"},
    ),
    ("lease-check", "lease_check", lambda r: {"path": "src/api/x.py", "agentId": "bob"}),
    (
        "lease-renew",
        "lease_renew",
        lambda r: {"agentId": "alice", "leaseId": r["lease"]["lease"]["id"]},
    ),
    (
        "lease-renew-bob",
        "lease_renew",
        lambda r: {"agentId": "bob", "leaseId": r["lease"]["lease"]["id"]},
    ),
    ("leases", "lease_list", lambda r: {}),
    ("lease-release", "lease_release", lambda r: {"agentId": "alice", "path": "src/api/**"}),
    (
        "read-noted",
        "note_read",
        lambda r: {"agentId": "bob", "path": "docs/a.md", "sha256": "a" * 64},
    ),
    ("drift", "drift_check", lambda r: {"agentId": "bob", "path": "docs/a.md", "sha256": "b" * 64}),
    ("mode", "set_room_mode", lambda r: {"agentId": "alice", "evidenceRequired": False}),
    ("proof-task", "add_task", lambda r: {"title": "proven"}),
    ("proof-claim", "claim_task", lambda r: {"taskId": r["proof-task"]["id"], "agentId": "bob"}),
    (
        "submit",
        "submit_task",
        lambda r: {
            "taskId": r["proof-task"]["id"],
            "agentId": "bob",
            "evidence": [{"kind": "test", "text": "3 passed", "ref": "ci/1"}],
        },
    ),
    (
        "verify",
        "verify_task",
        lambda r: {"taskId": r["proof-task"]["id"], "agentId": "carol", "verdict": "accept"},
    ),
    ("hand-task", "add_task", lambda r: {"title": "handed"}),
    ("hand-claim", "claim_task", lambda r: {"taskId": r["hand-task"]["id"], "agentId": "bob"}),
    (
        "handoff",
        "handoff_task",
        lambda r: {"taskId": r["hand-task"]["id"], "from": "bob", "to": "carol", "note": "n"},
    ),
    (
        "hand-accept",
        "accept_handoff",
        lambda r: {"handoffId": r["handoff"]["id"], "agentId": "carol"},
    ),
    (
        "handoff-2",
        "handoff_task",
        lambda r: {"taskId": r["hand-task"]["id"], "from": "carol", "to": "bob"},
    ),
    (
        "hand-decline",
        "decline_handoff",
        lambda r: {"handoffId": r["handoff-2"]["id"], "agentId": "bob", "note": "no"},
    ),
    ("pause", "set_room_status", lambda r: {"status": "paused", "agentId": "alice"}),
    ("paused-write", "add_task", lambda r: {"title": "refused while paused"}),
    ("resume", "set_room_status", lambda r: {"status": "active", "agentId": "alice"}),
    ("beat-tags", "heartbeat", lambda r: {"agentId": "carol", "tags": ["lib"]}),
    (
        "message",
        "send_message",
        lambda r: {"from": "bob", "to": "tag:lib", "body": "lib?", "ackRequired": True},
    ),
    ("inbox", "inbox", lambda r: {"agentId": "carol"}),
    ("ack", "ack_message", lambda r: {"agentId": "carol", "messageId": r["message"]["messageId"]}),
    ("sent", "sent_messages", lambda r: {"agentId": "bob"}),
    ("room-claim", "room_claim", lambda r: {"agentId": "carol", "path": "lib/x.py"}),
    ("room-say", "room_broadcast", lambda r: {"agentId": "carol", "text": "on lib/x.py"}),
    ("room-state", "room_state", lambda r: {}),
    ("room-read", "room_read", lambda r: {"agentId": "bob", "limit": 3}),
    ("room-release", "room_release", lambda r: {"agentId": "carol", "path": "lib/x.py"}),
    ("template-over-plan", "create_room_from_template", lambda r: {"templateId": "incident"}),
    ("presence-end", "get_presence", lambda r: {}),
]


def without_lock_expiry(value: Any) -> Any:
    """list_locks computes expiresAt as the server's now + the key's PTTL, so two reads of
    one lock may differ by a millisecond: compare everything else exactly."""
    assert isinstance(value, list)
    for lock in value:
        assert ISO_TIME.fullmatch(lock["expiresAt"])
    return [{k: v for k, v in lock.items() if k != "expiresAt"} for lock in value]


async def test_rest_and_mcp_give_the_same_results_for_every_tool(server: RunningServer) -> None:
    """The same calls in two rooms, one through each door, compared step by step; then the
    reading tools on one room through both doors, compared exactly (a reader the scenario
    does not call, with its VALID_ARGS)."""
    rest_room, mcp_room = new_room_id("via-rest"), new_room_id("via-mcp")
    rest_results: dict[str, Any] = {}
    mcp_results: dict[str, Any] = {}
    rest_norm, mcp_norm = Normalizer(rest_room), Normalizer(mcp_room)
    async with httpx.AsyncClient(timeout=30) as http:
        for label, tool, make in SCENARIO:
            in_room = registry.TOOLS_BY_NAME[tool].scope == "room"
            r = await rest_call(
                http, server.url, tool, make(rest_results), rest_room if in_room else None
            )
            m = await mcp_call(http, server.url, tool, room_args(tool, mcp_room, make(mcp_results)))
            if r.status_code == 200:
                rest_results[label] = r.json()
                mcp_results[label] = mcp_value(m)
                assert rest_norm(rest_results[label]) == mcp_norm(mcp_results[label]), label
            else:
                assert r.status_code in (400, 409), label
                assert r.json()["code"] in (
                    "version_conflict",
                    "claim_refused",
                    "invalid_arguments",
                    "review_refused",
                    "plan_exists",
                    "lease_refused",
                    "room_not_active",
                    "handoff_refused",
                ), label
                assert rest_norm(r.json()["message"]) == mcp_norm(mcp_error(m)), label
        # A sample of what was compared, so "equal" is not "equally empty".
        assert rest_results["t3"]["warnings"] and rest_results["lock-bob"]["acquired"] is False
        assert [e["type"] for e in rest_results["wait-carol"]["events"]] == [
            "task_added",
            "task_added",
            "task_added",
            "task_updated",
            "task_updated",
            "task_claimed",
            "task_released",
            "context_available",
            "context_available",
            "context_updated",
            "peer_request",
            "peer_reply",
        ]
        assert rest_results["wait-carol-2"]["timedOut"] is True
        assert rest_results["unread-bob"]["count"] == 3
        assert rest_results["reads"]["readBy"] == ["bob"]

        rooms_rest = await rest_call(http, server.url, "list_rooms", {})
        assert rooms_rest.status_code == 200, rooms_rest.text
        rooms_mcp = mcp_value(await mcp_call(http, server.url, "list_rooms", {}))
        assert rooms_rest.json() == rooms_mcp
        assert {rest_room, mcp_room} <= {row["roomId"] for row in rooms_mcp}

        # Reading tools on one room, both doors, exact equality.
        reads: list[tuple[str, dict[str, Any]]] = [
            ("read_plan", {}),
            ("get_task", {"taskId": rest_results["t2"]["id"]}),
            ("get_unblocked_tasks", {}),
            ("get_unblocked_tasks", {"agentId": "bob"}),
            ("get_my_tasks", {"agentId": "alice"}),
            ("read_context", {"id": rest_results["c1"]["id"]}),
            ("list_context", {}),
            ("list_context", {"type": "api_contract"}),
            ("read_events", {}),
            ("read_events", {"since": rest_results["e1"]["id"], "order": "asc", "limit": 1}),
            ("get_event_reads", {"eventId": rest_results["e1"]["id"]}),
            ("get_presence", {}),
            ("list_locks", {}),
            ("get_shared_var", {"key": "port"}),
            ("list_shared_vars", {}),
            ("get_room_info", {}),
            ("get_context_history", {"id": rest_results["c1"]["id"]}),
            ("list_reviews", {"status": "approved"}),
            ("diff_context", {"id": rest_results["c1"]["id"]}),
            ("get_room_analytics", {"days": 2}),
            ("search", {"q": '"design" orphan'}),
            ("lease_check", {"path": "docs/a.md"}),
            ("lease_list", {"agentId": "bob"}),
            ("drift_check", {"agentId": "bob", "path": "docs/a.md", "sha256": "a" * 64}),
            ("room_state", {}),
            ("sent_messages", {"agentId": "bob"}),
        ]
        readers = [
            t.name for t in registry.TOOLS if t.read_only and t.idempotent and t.scope == "room"
        ]
        # A reader with no call above is read with its VALID_ARGS (tests/rooms/test_registry.py).
        unread = [t for t in readers if t not in {n for n, _ in reads}]
        for tool, args in [*reads, *((t, VALID_ARGS[t]) for t in unread)]:
            assert registry.TOOLS_BY_NAME[tool].read_only
            r = await rest_call(http, server.url, tool, args, rest_room)
            m = await mcp_call(http, server.url, tool, {"roomId": rest_room, **args})
            if tool in unread and r.status_code != 200:  # an id VALID_ARGS names is nobody's
                assert r.json()["message"] == mcp_error(m), tool
                continue
            assert r.status_code == 200, r.text
            if tool == "list_locks":
                assert without_lock_expiry(r.json()) == without_lock_expiry(mcp_value(m)) != []
            else:
                assert r.json() == mcp_value(m), tool
        # Every tool is called at both doors: a writer in SCENARIO, a reader there or here.
        called = {t for _, t, _ in SCENARIO} | set(readers) | {"list_rooms"}
        assert called == set(registry.TOOLS_BY_NAME), set(registry.TOOLS_BY_NAME) - called


async def test_rest_makes_a_room_from_a_template_without_naming_one(server: RunningServer) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        made = await rest_call(
            http, server.url, "create_room_from_template", {"templateId": "web-app"}
        )
        assert made.status_code == 200, made.text
        room = made.json()["roomId"]
        plan = await rest_call(http, server.url, "read_plan", {}, room)
        assert len(plan.json()["tasks"]) == made.json()["taskCount"] == 6
        # Through this door too, another team's room is refused and keeps its plan.
        foreign = await rest_call(
            http,
            server.url,
            "create_room_from_template",
            {"roomId": room, "templateId": "incident"},
            secret=TEAM_B_SECRET,
        )
        assert foreign.status_code == 404 and foreign.json()["code"] == "room_not_found"
        after = await rest_call(http, server.url, "read_plan", {}, room)
        assert len(after.json()["tasks"]) == 6
        # A tool that acts on a named room still needs one.
        unnamed = await rest_call(http, server.url, "read_plan", {})
        assert unnamed.status_code == 400 and "/api/v1/rooms/<roomId>" in unnamed.json()["message"]


async def test_rest_and_mcp_give_the_same_errors(server: RunningServer) -> None:
    room = new_room_id("errors")
    async with httpx.AsyncClient(timeout=30) as http:
        task = await rest(http, server.url, "add_task", room, title="only task")
        entry = await rest(
            http,
            server.url,
            "write_context",
            room,
            type="note",
            summary="s",
            consuming_agents=[],
            payload={"text": "x"},
            author="a",
        )
        event = await rest(http, server.url, "post_event", room, type="x", **{"from": "a"})

        cases: list[tuple[str, dict[str, Any], int, str]] = []
        for spec in registry.TOOLS:
            if spec.scope == "room":
                # An unknown argument, on every tool.
                cases.append(
                    (spec.name, {**VALID_ARGS[spec.name], "bogus": 1}, 400, "invalid_arguments")
                )
        cases += [
            ("add_task", {}, 400, "invalid_arguments"),  # a required argument missing
            ("update_task", {"taskId": task["id"], "status": "finished"}, 400, "invalid_arguments"),
            (
                "acquire_lock",
                {"resource": "r", "agentId": "a", "ttlSeconds": 301},
                400,
                "invalid_arguments",
            ),
            ("wait_for_events", {"agentId": "a", "timeoutMs": -1}, 400, "invalid_arguments"),
            ("read_events", {"since": "yesterday"}, 400, "invalid_arguments"),
            (
                "write_context",
                {"type": "note", "summary": "s", "payload": {}, "author": "a"},
                400,
                "invalid_arguments",
            ),
            ("get_task", {"taskId": "t_zzzzzzzzzzzz"}, 404, "task_not_found"),
            ("get_task", {"taskId": ""}, 400, "invalid_arguments"),
            ("update_task", {"taskId": "t_zzzzzzzzzzzz", "status": "done"}, 404, "task_not_found"),
            ("read_context", {"id": "c_zzzzzzzzzzzz"}, 404, "context_not_found"),
            ("update_context", {"id": "c_zzzzzzzzzzzz", "author": "a"}, 404, "context_not_found"),
            (
                "update_context",
                {"id": entry["id"], "author": "a", "expectedVersion": "9.9"},
                409,
                "version_conflict",
            ),
            ("get_event_reads", {"eventId": "1-0"}, 404, "event_not_found"),
            ("mark_event_read", {"eventId": "nope", "agentId": "a"}, 404, "event_not_found"),
            (
                "reply_to_event",
                {"replyToId": event["id"] + "1", "type": "y", "from": "b"},
                404,
                "event_not_found",
            ),
        ]
        for tool, args, status, code in cases:
            r = await rest_call(http, server.url, tool, args, room)
            m = mcp_error(await mcp_call(http, server.url, tool, {"roomId": room, **args}))
            assert (r.status_code, r.json()["code"]) == (status, code), (tool, args, r.text)
            assert r.json()["message"] == m, (tool, args)

        # Another team's room: the one answer on every tool, through both doors.
        for name, args in VALID_ARGS.items():
            r = await rest_call(http, server.url, name, args, room, TEAM_B_SECRET)
            m = mcp_error(
                await mcp_call(http, server.url, name, {"roomId": room, **args}, TEAM_B_SECRET)
            )
            assert (r.status_code, r.json()) == (
                404,
                {"message": errors.ROOM_ACCESS_DENIED, "code": "room_not_found", "extra": {}},
            ), name
            assert m == errors.ROOM_ACCESS_DENIED, name


async def test_rest_door_refuses_what_only_http_can_get_wrong(server: RunningServer) -> None:
    room = new_room_id("door")
    base = server.url
    async with httpx.AsyncClient(timeout=30) as http:
        await rest(http, base, "heartbeat", room, agentId="a")

        def problem(message: str, code: str) -> dict[str, Any]:
            return {"message": message, "code": code, "extra": {}}

        other = new_room_id("elsewhere")
        r = await rest_call(http, base, "read_plan", {"roomId": other}, room)
        assert (r.status_code, r.json()) == (
            400,
            problem(rest_door.ROOM_MISMATCH.format(body=other, url=room), "invalid_arguments"),
        )
        r = await rest_call(http, base, "read_plan", {"roomId": room}, room)  # the same: fine
        assert r.status_code == 200 and r.json()["project"] == room

        for raw in (b"{not json", b"\xff\xfe", b"[]", b'"text"', b"3"):
            r = await rest_call(http, base, "read_plan", None, room, raw=raw)
            assert (r.status_code, r.json()) == (
                400,
                problem(rest_door.NOT_JSON, "invalid_arguments"),
            )
        r = await rest_call(http, base, "read_plan", None, room, raw=b"")  # no body: {}
        assert r.status_code == 200 and r.json()["project"] == room

        unknown = registry.UNKNOWN_TOOL.format(
            name="no_such_tool", names=", ".join(registry.TOOLS_BY_NAME)
        )
        for target in (room, None):
            r = await rest_call(http, base, "no_such_tool", {}, target)
            assert (r.status_code, r.json()) == (
                404,
                {"message": unknown, "code": "unknown_tool", "extra": {"tool": "no_such_tool"}},
            )
        rpc = await http.post(
            f"{base}/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "no_such_tool", "arguments": {}},
            },
            headers={**bearer(TEAM_A_SECRET), "accept": "application/json, text/event-stream"},
        )
        assert rpc.json()["error"] == {"code": -32602, "message": unknown}

        r = await rest_call(http, base, "read_plan", {}, None)
        assert (r.status_code, r.json()) == (
            400,
            problem(
                "read_plan acts on a room: POST /api/v1/rooms/<roomId>/tools/read_plan",
                "invalid_arguments",
            ),
        )

        for secret in (None, "not-a-key"):
            r = await rest_call(http, base, "add_task", {"title": "x"}, room, secret)
            assert r.status_code == 401
            assert r.headers["www-authenticate"] == 'Bearer realm="roomservice"'
            assert r.json() == problem(UNAUTHORIZED, "not_authenticated")
        r = await rest_call(http, base, "list_rooms", {}, None, None)
        assert (r.status_code, r.json()) == (401, problem(UNAUTHORIZED, "not_authenticated"))

        r = await rest_call(http, base, "add_task", {"title": "x"}, room, TEAM_B_SECRET)
        assert (r.status_code, r.json()) == (
            404,
            problem(errors.ROOM_ACCESS_DENIED, "room_not_found"),
        )
        r = await http.get(
            f"{base}/api/v1/rooms/{room}/tools/read_plan", headers=bearer(TEAM_A_SECRET)
        )
        assert (r.status_code, r.json()) == (405, problem("Use POST.", "method_not_allowed"))

        # Nothing that was refused ran: the plan is still empty.
        assert (await rest(http, base, "read_plan", room))["tasks"] == []
