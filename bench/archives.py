"""`make bench` section "archive": rooms of 1,000 and 10,000 events (plus tasks, context
and messages) archived, read while archived, restored, and checked exact; and what the
secret check costs a write.

Figures: set_room_status(archived) latency (freeze, snapshot, Postgres record, keys
dropped), the first read of the archived room (its archive loaded as a copy), the restore,
and the archive's size per event. Exactness: after the restore, read_events returns the
same ids and the next event's id is past every old one. Then add_task p50 with a clean 2 KB
description against one holding a key (found and redacted), 200 calls each.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis

from bench import wire

SIZES = (1_000, 10_000, 100_000)
WRITERS = 8
CALLS = 200
CLEAN = ("The parser handles nested blocks and reports the line of each error. " * 30)[:2048]


class Fails(Protocol):
    def add(self, check: str, detail: str = "", n: int = 1) -> None: ...


@dataclass
class ArchiveRun:
    events: int
    archive_ms: float = 0.0
    first_read_ms: float = 0.0
    restore_ms: float = 0.0
    exact: bool = False
    longest_step_ms: float = -1.0  # the longest Redis command meanwhile (-1: not known)


@dataclass
class ArchiveFigures:
    runs: list[ArchiveRun] = field(default_factory=list)
    clean_ms: list[float] = field(default_factory=list)
    redacted_ms: list[float] = field(default_factory=list)
    redacted_ok: int = 0


async def _ok(
    conn: wire.Connection, ep: wire.McpEndpoint, name: str, args: dict[str, Any], fails: Fails
) -> Any:
    res = await wire.call_tool(conn, ep, name, args)
    if not res.ok:
        fails.add(f"archive: {name}", res.describe())
        return None
    return res


async def _fill(ep: wire.McpEndpoint, room: str, events: int, fails: Fails) -> None:
    conns = [ep.connection() for _ in range(WRITERS)]
    for conn in conns:
        await conn.open()
    try:
        await _ok(conns[0], ep, "add_task", {"roomId": room, "title": "kept task"}, fails)

        async def writer(i: int) -> None:
            for n in range(i, events - 1, WRITERS):
                body = {"roomId": room, "type": "note", "from": f"w{i}", "payload": {"n": n}}
                await _ok(conns[i], ep, "post_event", body, fails)

        await asyncio.gather(*(writer(i) for i in range(WRITERS)))
    finally:
        for conn in conns:
            await conn.close()


async def _all_ids(conn: wire.Connection, ep: wire.McpEndpoint, room: str) -> list[str]:
    ids: list[str] = []
    since: str | None = None
    while True:
        args: dict[str, Any] = {"roomId": room, "limit": 100, "order": "asc"}
        if since:
            args["since"] = since
        res = await wire.call_tool(conn, ep, "read_events", args)
        listed = res.value.get("result", []) if res.ok and isinstance(res.value, dict) else []
        if not listed:
            return ids
        ids += [e["id"] for e in listed]
        since = ids[-1]


def _slowlog_start(redis_url: str | None) -> None:
    """Redis's slow log on, from 1 ms: what it holds after is every step that held Redis."""
    if not redis_url:
        return
    r = redis.Redis.from_url(redis_url)
    try:
        r.config_set("slowlog-log-slower-than", 1000)
        r.config_set("slowlog-max-len", 4096)
        r.slowlog_reset()
    finally:
        r.close()


def _slowlog_longest(redis_url: str | None) -> float:
    if not redis_url:
        return -1.0
    r = redis.Redis.from_url(redis_url)
    try:
        entries = r.slowlog_get(4096)
        return max((e["duration"] / 1000 for e in entries), default=0.0)
    finally:
        r.close()


async def _one(
    ep: wire.McpEndpoint, events: int, fails: Fails, redis_url: str | None
) -> ArchiveRun:
    run = ArchiveRun(events=events)
    room = f"bench-archive-{secrets.token_hex(4)}"
    await _fill(ep, room, events, fails)
    conn = ep.connection()
    await conn.open()
    try:
        before = await _all_ids(conn, ep, room)
        _slowlog_start(redis_url)
        res = await _ok(conn, ep, "set_room_status", {"roomId": room, "status": "archived"}, fails)
        run.archive_ms = 1000 * res.seconds if res else 0.0
        res = await _ok(conn, ep, "read_plan", {"roomId": room}, fails)
        run.first_read_ms = 1000 * res.seconds if res else 0.0
        res = await _ok(conn, ep, "set_room_status", {"roomId": room, "status": "active"}, fails)
        run.restore_ms = 1000 * res.seconds if res else 0.0
        run.longest_step_ms = _slowlog_longest(redis_url)
        after = [i for i in await _all_ids(conn, ep, room)]
        new = await _ok(
            conn,
            ep,
            "post_event",
            {"roomId": room, "type": "after", "from": "b", "payload": {}},
            fails,
        )
        old = set(before)
        kept = [i for i in after if i in old]
        # The archive's and the restore's own events count against the log's cap: a room
        # at the cap drops as many of its oldest, and nothing else.
        trimmed = len(before) - len(kept)
        run.exact = (
            kept == before[trimmed:]
            and trimmed <= len(after) - len(kept)
            and bool(new)
            and new.value["id"] > before[-1]
        )
        if not run.exact:
            fails.add("archive: the restored room's events differ", f"{len(kept)}/{len(before)}")
    finally:
        await conn.close()
    return run


async def archive_figures(
    ep: wire.McpEndpoint, fails: Fails, redis_url: str | None = None
) -> ArchiveFigures:
    """`redis_url`: the bench's own Redis, whose slow log it may reset (None: not known)."""
    fig = ArchiveFigures()
    for events in SIZES:
        fig.runs.append(await _one(ep, events, fails, redis_url))
    room = f"bench-secrets-{secrets.token_hex(4)}"
    conn = ep.connection()
    await conn.open()
    key = "rs_live_" + secrets.token_urlsafe(32)
    try:
        for n in range(CALLS):
            clean = await wire.call_tool(
                conn, ep, "add_task", {"roomId": room, "title": f"t{n}", "description": CLEAN}
            )
            if clean.ok:
                fig.clean_ms.append(1000 * clean.seconds)
            dirty = await wire.call_tool(
                conn,
                ep,
                "add_task",
                {"roomId": room, "title": f"k{n}", "description": f"{CLEAN[:2000]} {key}"},
            )
            if dirty.ok:
                fig.redacted_ms.append(1000 * dirty.seconds)
                if key not in str(dirty.value) and dirty.value.get("redacted", {}).get("count"):
                    fig.redacted_ok += 1
    finally:
        await conn.close()
    if fig.redacted_ok != CALLS:
        fails.add("archive: a key was not redacted", f"{fig.redacted_ok}/{CALLS}")
    return fig


def section(fig: ArchiveFigures) -> list[str]:
    lines = ["Archives (section archive): archive, read while archived, restore; exact after"]
    for run in fig.runs:
        lines.append(
            f"  {run.events:>6} events: archive {run.archive_ms:.1f} ms, first read of the "
            f"archive {run.first_read_ms:.1f} ms, restore {run.restore_ms:.1f} ms, "
            f"exact: {'yes' if run.exact else 'NO'}; longest Redis step meanwhile "
            + (f"{run.longest_step_ms:.1f} ms" if run.longest_step_ms >= 0 else "not measured")
        )
    median = statistics.median
    lines.append(
        f"  Secret check: add_task with a clean 2 KB description p50 "
        f"{median(fig.clean_ms) if fig.clean_ms else 0:.2f} ms, with a key in it p50 "
        f"{median(fig.redacted_ms) if fig.redacted_ms else 0:.2f} ms (redacted "
        f"{fig.redacted_ok}/{CALLS})"
    )
    lines.append("")
    return lines
