"""Bench sections on what one tenant can do to the shared store and the event loop.

8. Growth: Redis bytes grown per byte sent (MEMORY USAGE over the room's keys against the
   request bodies' bytes), under the note attack (update_task with 16 KB notes on one task)
   and under a mixed workload, at checkpoints as the room grows. Goal: <= 2x, flat.
9. Storm: GET /health latency while other connections send get_task misses in a room of
   10,000 tasks, as a ratio to its idle latency (goal <= 2x); the same storm made of hits,
   for comparison. The storm is paced (STORM_RATE calls a second from 4 connections), the
   load a busy team puts on a server, not a saturating flood (which would queue /health
   behind any kind of call on one event loop).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from bench import server, wire
from bench.stats import percentile

NOTE_BYTES = 16_000  # the largest note a tool accepts
NOTE_CHECKPOINTS = (60, 300, 1200)
MIXED_CHECKPOINTS = (500, 2000, 6000)
STORM_TASKS = 10_000
STORM_RATE = 200  # calls a second, in all
STORM_SECONDS = 5.0


@dataclass
class GrowthFigures:
    note: list[tuple[int, int, int]] = field(default_factory=list)  # (calls, sent, grown)
    mixed: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass
class StormFigures:
    idle: list[float] = field(default_factory=list)
    misses: list[float] = field(default_factory=list)
    hits: list[float] = field(default_factory=list)
    miss_calls: int = 0
    hit_calls: int = 0


def _room_bytes(redis_url: str, key_prefix: str, room: str) -> int:
    import redis

    r = redis.Redis.from_url(redis_url, socket_timeout=10)
    try:
        return sum(
            int(r.memory_usage(k, samples=0) or 0)
            for k in r.scan_iter(match=f"{key_prefix}:{{{room}}}:*", count=1000)
        )
    finally:
        r.close()


async def _call(
    conn: wire.Connection, ep: wire.McpEndpoint, name: str, args: dict[str, Any], fails: Any
) -> tuple[Any, int]:
    body_bytes = len(json.dumps(args, separators=(",", ":")).encode())
    result = await wire.call_tool(conn, ep, name, args)
    if not result.ok:
        fails.add(f"growth: {name}", result.describe())
    return result.value, body_bytes


async def growth(srv: server.BenchServer, ep: wire.McpEndpoint, fails: Any) -> GrowthFigures:
    figs = GrowthFigures()
    conn = ep.connection()
    await conn.open()
    try:
        room = f"bench-growth-note-{time.time_ns()}"
        task, _ = await _call(conn, ep, "add_task", {"roomId": room, "title": "the target"}, fails)
        base = _room_bytes(srv.redis_url, srv.key_prefix, room)
        sent, calls = 0, 0
        for checkpoint in NOTE_CHECKPOINTS:
            while calls < checkpoint:
                note = f"{calls:06d}" + "n" * (NOTE_BYTES - 6)
                _, n = await _call(
                    conn,
                    ep,
                    "update_task",
                    {"roomId": room, "taskId": task["id"], "status": "in_progress", "note": note},
                    fails,
                )
                sent += n
                calls += 1
            figs.note.append((calls, sent, _room_bytes(srv.redis_url, srv.key_prefix, room) - base))

        room = f"bench-growth-mixed-{time.time_ns()}"
        base = _room_bytes(srv.redis_url, srv.key_prefix, room)
        sent, calls, tasks, entries = 0, 0, [], []
        for checkpoint in MIXED_CHECKPOINTS:
            while calls < checkpoint:
                kind = calls % 10
                if kind == 0 or not tasks:
                    value, n = await _call(
                        conn,
                        ep,
                        "add_task",
                        {"roomId": room, "title": f"task {calls}", "description": "d" * 400},
                        fails,
                    )
                    tasks.append(value["id"])
                elif kind in (1, 2, 3):
                    value, n = await _call(
                        conn,
                        ep,
                        "update_task",
                        {
                            "roomId": room,
                            "taskId": tasks[calls % len(tasks)],
                            "status": "in_progress",
                            "note": "progress " * 60,
                        },
                        fails,
                    )
                elif kind == 4:
                    payload = {"text": "decision " * 80}
                    if entries and calls % 20 == 4:
                        value, n = await _call(
                            conn,
                            ep,
                            "update_context",
                            {"roomId": room, "id": entries[-1], "author": "a", "payload": payload},
                            fails,
                        )
                    else:
                        value, n = await _call(
                            conn,
                            ep,
                            "write_context",
                            {
                                "roomId": room,
                                "type": "note",
                                "summary": "s",
                                "payload": payload,
                                "author": "a",
                            },
                            fails,
                        )
                        entries.append(value["id"])
                elif kind in (5, 6, 7):
                    value, n = await _call(
                        conn,
                        ep,
                        "post_event",
                        {
                            "roomId": room,
                            "type": "chat",
                            "from": f"a{calls % 7}",
                            "payload": {"t": "x" * 300},
                        },
                        fails,
                    )
                elif kind == 8:
                    value, n = await _call(
                        conn,
                        ep,
                        "set_shared_var",
                        {
                            "roomId": room,
                            "key": f"k{calls % 50}",
                            "value": "v" * 200,
                            "agentId": "a",
                        },
                        fails,
                    )
                else:
                    value, n = await _call(
                        conn, ep, "heartbeat", {"roomId": room, "agentId": f"a{calls % 7}"}, fails
                    )
                sent += n
                calls += 1
            figs.mixed.append(
                (calls, sent, _room_bytes(srv.redis_url, srv.key_prefix, room) - base)
            )
    finally:
        await conn.close()
    return figs


async def _health_sampler(srv: server.BenchServer, stop: asyncio.Event, into: list[float]) -> None:
    conn = wire.Connection(srv.host, srv.port)
    raw = wire.build_request("GET", srv.host, srv.port, "/health")
    while not stop.is_set():
        t0 = time.perf_counter()
        await conn.request(raw)
        into.append((time.perf_counter() - t0) * 1000)
        await asyncio.sleep(0.01)
    await conn.close()


async def _paced(
    ep: wire.McpEndpoint, room: str, task_id: str, stop: asyncio.Event, fails: Any
) -> int:
    conn = ep.connection()
    await conn.open()
    interval = 4 / STORM_RATE
    calls = 0
    next_at = time.perf_counter()
    while not stop.is_set():
        raw = ep.raw_call("get_task", {"roomId": room, "taskId": task_id})
        resp = await conn.request(raw)
        if resp.status != 200:
            fails.add("storm call", f"HTTP {resp.status}")
        calls += 1
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
    await conn.close()
    return calls


async def storm(srv: server.BenchServer, ep: wire.McpEndpoint, fails: Any) -> StormFigures:
    figs = StormFigures()
    room = f"bench-storm-{time.time_ns()}"
    conns = [ep.connection() for _ in range(8)]
    for c in conns:
        await c.open()
    ids: list[str] = []

    async def fill(c: wire.Connection, n: int) -> None:
        for i in range(n):
            result = await wire.call_tool(
                c,
                ep,
                "add_task",
                {"roomId": room, "title": f"a long title for task {i} " + "x" * 200},
            )
            if result.ok:
                ids.append(result.value["id"])
            else:
                fails.add("storm setup", result.describe())

    await asyncio.gather(*(fill(c, STORM_TASKS // len(conns)) for c in conns))
    for c in conns:
        await c.close()
    for label, into, task_id in (
        ("idle", figs.idle, None),
        ("misses", figs.misses, "t_no-such-task"),
        ("hits", figs.hits, ids[-1]),
    ):
        stop = asyncio.Event()
        sampler = asyncio.ensure_future(_health_sampler(srv, stop, into))
        stormers = (
            [asyncio.ensure_future(_paced(ep, room, task_id, stop, fails)) for _ in range(4)]
            if task_id
            else []
        )
        await asyncio.sleep(STORM_SECONDS)
        stop.set()
        await sampler
        calls = sum(await asyncio.gather(*stormers)) if stormers else 0
        if label == "misses":
            figs.miss_calls = calls
        elif label == "hits":
            figs.hit_calls = calls
    return figs


def growth_section(figs: GrowthFigures) -> list[str]:
    from bench.run import explain, table

    lines = [
        "8. Redis bytes grown per byte sent (MEMORY USAGE of the room's keys / request bodies)"
    ]
    lines += explain(
        f"Note attack: update_task with {NOTE_BYTES:,}-character notes on one task (60 such calls",
        "grew Redis 34x before the quotas). Mixed: add_task, update_task with notes,",
        "write/update_context, post_event, set_shared_var, heartbeat in a fixed rotation.",
        "Default quotas. Goal <= 2x, and flat as the room grows.",
    )
    rows = [["workload", "calls", "sent", "grown", "grown / sent"]]
    for label, points in (("note attack", figs.note), ("mixed", figs.mixed)):
        for calls, sent, grown in points:
            rows.append(
                [
                    label,
                    f"{calls:,}",
                    f"{sent / 1e6:.2f} MB",
                    f"{grown / 1e6:.2f} MB",
                    f"{grown / sent:.2f}x" if sent else "-",
                ]
            )
    return [*lines, table(rows), ""]


def storm_section(figs: StormFigures) -> list[str]:
    from bench.run import explain, table

    lines = [
        f"9. /health while a storm of get_task misses runs in a room of {STORM_TASKS:,} tasks (ms)"
    ]
    lines += explain(
        f"{STORM_RATE} calls a second from 4 connections for {STORM_SECONDS:.0f} s each;",
        "/health sampled every 10 ms on its own connection. ratio = p50 under the storm / p50",
        "idle (goal <= 2x).",
    )
    idle50 = (percentile(figs.idle, 50) if figs.idle else 0.0) or 1e-9
    rows = [["while", "calls", "/health p50", "p99", "ratio"]]
    for label, values, calls in (
        ("idle", figs.idle, 0),
        ("misses", figs.misses, figs.miss_calls),
        ("hits (same rate)", figs.hits, figs.hit_calls),
    ):
        rows.append(
            [
                label,
                f"{calls:,}" if calls else "-",
                f"{percentile(values, 50):.2f}",
                f"{percentile(values, 99):.2f}",
                f"{percentile(values, 50) / idle50:.2f}x",
            ]
        )
    return [*lines, table(rows), ""]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0
