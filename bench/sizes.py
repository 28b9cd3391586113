"""`make bench` section "sizes": the cost of a call does not grow with the room.

get_unread_events (an agent that is caught up, one new event each call), read_events (the
default page) and heartbeat are timed in rooms of 1k, 100k and 1M events, and heartbeat in
rooms of 10, 500 and 5,000 agents. The rooms are filled straight into Redis (XADD and ZADD
in pipelines, entries copied from one the server wrote), on a server of their own whose
quotas hold a million events.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import redis

from bench import server, wire

EVENT_SIZES = (1_000, 100_000, 1_000_000)
AGENT_SIZES = (10, 500, 5_000)
CALLS = 500
SERVER_ENV = {
    "ROOM_EVENT_CAP": "1100000",
    "ROOM_EVENT_BYTES_MAX": str(2**31),
    "ROOM_AGENTS_MAX": "6000",
    "ROOM_CURSORS_MAX": "6000",
}


@dataclass
class SizeFigures:
    # (tool, room size) -> p50 ms
    events: dict[tuple[str, int], float] = field(default_factory=dict)
    agents: dict[int, float] = field(default_factory=dict)
    fill_seconds: float = 0.0
    redis_mb: dict[int, float] = field(default_factory=dict)  # events -> used_memory MB
    # "empty" / "typical" / "at the quotas" -> (bytes of the room's keys, what it holds)
    rooms: dict[str, tuple[int, str]] = field(default_factory=dict)


def _redis(srv: server.BenchServer) -> redis.Redis:
    return redis.Redis.from_url(srv.redis_url.replace("redis+socket://", "unix://"))


def _key(srv: server.BenchServer, room: str, part: str) -> str:
    return f"{srv.key_prefix}:{{{room}}}:{part}"


async def _ok(
    conn: wire.Connection, ep: wire.McpEndpoint, name: str, args: dict[str, Any]
) -> float:
    res = await wire.call_tool(conn, ep, name, args)
    if not res.ok:
        raise RuntimeError(res.describe())
    return res.seconds


async def measure(srv: server.BenchServer, ep: wire.McpEndpoint, label: str) -> SizeFigures:
    fig = await room_memory(srv, ep, label)
    r = _redis(srv)
    conn = ep.connection()
    try:
        t0 = time.perf_counter()
        rooms: dict[int, str] = {}
        for size in EVENT_SIZES:
            room = rooms[size] = f"{label}-events-{size}"
            first = await wire.call_tool(
                conn,
                ep,
                "post_event",
                {"roomId": room, "type": "fill", "from": "filler", "payload": {"n": 0}},
            )
            if not first.ok:
                raise RuntimeError(first.describe())
            events = _key(srv, room, "events")
            (_, fields), *_ = r.xrange(events, count=1)
            before = r.info("memory")["used_memory"]
            pipe = r.pipeline(transaction=False)
            for i in range(size - 1):
                pipe.xadd(events, fields)
                if i % 10_000 == 9_999:
                    pipe.execute()
            pipe.execute()
            fig.redis_mb[size] = (r.info("memory")["used_memory"] - before) / 2**20
            # The reader is caught up: its cursor at the newest event.
            (last_id, _), *_ = r.xrevrange(events, count=1)
            r.hset(_key(srv, room, "cursors"), "reader", last_id)
        await conn.close()  # idle past the server's keep-alive while filling
        conn = ep.connection()
        for agents in AGENT_SIZES:
            room = rooms[-agents] = f"{label}-agents-{agents}"
            await _ok(conn, ep, "heartbeat", {"roomId": room, "agentId": "me"})
            now = int(time.time() * 1000)
            r.zadd(_key(srv, room, "presence"), {f"agent-{i:05d}": now - i for i in range(agents)})
        fig.fill_seconds = time.perf_counter() - t0
        await conn.close()  # idle past the server's keep-alive while filling
        conn = ep.connection()
        # Calls alternate between the rooms, so whatever else the machine does weighs on
        # every size alike.
        timed: dict[tuple[str, int], list[float]] = {}
        for _ in range(CALLS):
            for size in EVENT_SIZES:
                room = rooms[size]
                post = {"roomId": room, "type": "new", "from": "writer", "payload": {"n": 1}}
                await _ok(conn, ep, "post_event", post)
                for name, args in (
                    ("get_unread_events", {"roomId": room, "agentId": "reader"}),
                    ("read_events", {"roomId": room}),
                    ("heartbeat", {"roomId": room, "agentId": "reader"}),
                ):
                    timed.setdefault((name, size), []).append(await _ok(conn, ep, name, args))
            for agents in AGENT_SIZES:
                args = {"roomId": rooms[-agents], "agentId": "me"}
                timed.setdefault(("agents", agents), []).append(
                    await _ok(conn, ep, "heartbeat", args)
                )
        for (name, size), seconds in timed.items():
            p50 = statistics.median(seconds) * 1000
            if name == "agents":
                fig.agents[size] = p50
            else:
                fig.events[(name, size)] = p50
    finally:
        await conn.close()
        r.close()
    return fig


CONTRACT = {
    "service": "auth",
    "version": "1.0",
    "base_url": "http://localhost:4000",
    "endpoints": [
        {
            "method": "POST",
            "path": f"/v1/resource-{i}",
            "description": "Creates the resource and answers its id.",
            "request": {"email": "string", "password": "string"},
            "response": {"token": "string"},
            "auth_required": True,
        }
        for i in range(8)
    ],
}


def _room_bytes(r: redis.Redis, srv: server.BenchServer, room: str) -> int:
    """MEMORY USAGE summed over every key of the room (its hash tag)."""
    total = 0
    for key in r.scan_iter(match=f"{srv.key_prefix}:{{{room}}}:*", count=1000):
        total += int(r.memory_usage(key, samples=0) or 0)
    return total


async def _fill_typical(conn: wire.Connection, ep: wire.McpEndpoint, room: str) -> None:
    """20 tasks (some claimed, some done), 5 agents, 4 contracts, 200 events, 10 variables."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for a in range(5):
        calls.append(("heartbeat", {"roomId": room, "agentId": f"agent-{a}"}))
    for t in range(20):
        calls.append(
            (
                "add_task",
                {
                    "roomId": room,
                    "title": f"Build part {t} of the service",
                    "description": "What done means for this part, in a sentence or two. " * 3,
                },
            )
        )
    for c in range(4):
        calls.append(
            (
                "write_context",
                {
                    "roomId": room,
                    "type": "api_contract",
                    "summary": f"contract {c}",
                    "consuming_agents": ["agent-1"],
                    "payload": CONTRACT,
                    "author": "agent-0",
                },
            )
        )
    for e in range(140):
        calls.append(
            (
                "post_event",
                {
                    "roomId": room,
                    "type": "progress",
                    "from": f"agent-{e % 5}",
                    "payload": {"message": "Finished the step, tests green, moving on.", "n": e},
                },
            )
        )
    for v in range(10):
        calls.append(
            (
                "set_shared_var",
                {"roomId": room, "key": f"var-{v}", "value": "x" * 200, "agentId": "agent-0"},
            )
        )
    for a in range(5):
        calls.append(("get_unread_events", {"roomId": room, "agentId": f"agent-{a}"}))
    for name, args in calls:
        res = await wire.call_tool(conn, ep, name, args)
        if not res.ok:
            raise RuntimeError(res.describe())


def _fill_quotas(r: redis.Redis, srv: server.BenchServer, room: str) -> str:
    """A typical room grown to the default quotas, straight into Redis: 2,000 tasks, 16 MB of
    events (ROOM_EVENT_BYTES_MAX: 1,000 events of 16 KB), 1,000 agents, 5,000 cursors."""
    tasks = _key(srv, room, "tasks")
    sample_id, sample = next(iter(r.hgetall(tasks).items()))
    pipe = r.pipeline(transaction=False)
    for i in range(2_000):
        pipe.hset(tasks, f"q{i:05d}", sample.replace(sample_id, f"q{i:05d}".encode()))
    events = _key(srv, room, "events")
    (_, fields), *_ = r.xrange(events, count=1)
    big = {**fields, b"payload": b'{"blob":"' + b"x" * 16_000 + b'"}'}
    for _ in range(1_000):
        pipe.xadd(events, big)
    now = int(time.time() * 1000)
    pipe.zadd(_key(srv, room, "presence"), {f"agent-{i:05d}": now - i for i in range(1_000)})
    pipe.hset(_key(srv, room, "cursors"), mapping={f"agent-{i:05d}": "0-1" for i in range(5_000)})
    pipe.execute()
    return "2,000 tasks, 16 MB of events, 1,000 agents, 5,000 cursors"


async def room_memory(srv: server.BenchServer, ep: wire.McpEndpoint, label: str) -> SizeFigures:
    fig = SizeFigures()
    r = _redis(srv)
    conn = ep.connection()
    try:
        empty = f"{label}-empty"
        await wire.call_tool(conn, ep, "heartbeat", {"roomId": empty, "agentId": "a"})
        fig.rooms["empty"] = (_room_bytes(r, srv, empty), "one heartbeat (claimed, one agent)")
        typical = f"{label}-typical"
        await _fill_typical(conn, ep, typical)
        fig.rooms["typical"] = (
            _room_bytes(r, srv, typical),
            "20 tasks, 4 contracts, ~170 events, 5 agents, 10 variables",
        )
        full = f"{label}-full"
        await _fill_typical(conn, ep, full)
        what = _fill_quotas(r, srv, full)
        fig.rooms["at the quotas"] = (_room_bytes(r, srv, full), what)
    finally:
        await conn.close()
        r.close()
    return fig


def section(fig: SizeFigures) -> list[str]:
    lines = [
        "Cost that does not grow with the room (section sizes)",
        f"  p50 of {CALLS} sequential calls (ms), plain JSON-RPC; rooms filled straight into "
        "Redis, calls alternating between the rooms. get_unread_events: a caught-up reader, "
        "one new event per call (the write not timed).",
    ]
    rows = [["tool", *[f"{n:,} events" for n in EVENT_SIZES], "largest / smallest"]]
    for tool in ("get_unread_events", "read_events", "heartbeat"):
        row = [fig.events.get((tool, n), 0.0) for n in EVENT_SIZES]
        ratio = row[-1] / row[0] if row[0] else 0.0
        rows.append([tool, *[f"{v:.2f}" for v in row], f"{ratio:.2f}x"])
    beat = [fig.agents.get(n, 0.0) for n in AGENT_SIZES]
    ratio = beat[-1] / beat[0] if beat[0] else 0.0
    rows.append(
        [
            "heartbeat, by agents",
            *[f"{n:,}: {v:.2f}" for n, v in zip(AGENT_SIZES, beat, strict=True)],
            f"{ratio:.2f}x",
        ]
    )
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, row in enumerate(rows):
        lines.append("  " + "  ".join(c.ljust(width[i]) for i, c in enumerate(row)))
        if k == 0:
            lines.append("  " + "  ".join("-" * w for w in width))
    mem = ", ".join(f"{n:,} events {mb:.1f} MB" for n, mb in fig.redis_mb.items())
    lines.append(f"  Redis memory of the log (used_memory growth while filling): {mem}")
    lines.append("  A heartbeat answers the 100 agents seen most recently and presenceTotal.")
    if fig.rooms:
        lines.append("  Memory per room (MEMORY USAGE over the room's keys):")
        for name, (size, what) in fig.rooms.items():
            lines.append(f"    {name:<14} {size / 1024:10,.1f} KB   {what}")
    lines.append("")
    return lines
