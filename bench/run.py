"""`make bench`: start the service, measure over real HTTP, print one report, stop.

The service is started on a free port with its own var folder (embedded SQLite + Redis
unless DATABASE_URL / REDIS_URL say otherwise), and the bench measures:

- the floor of the stack: GET /health latency and a Redis PING round trip;
- per-tool latency (p50/p99) for read_plan, update_task, post_event, get_unread_events and
  heartbeat, with plain JSON-RPC POSTs and with the official `mcp` client (legacy and
  2026-07-28 modes);
- tool calls per second at 1, 8 and 32 connections, from wrk (bench/wrk_post.lua);
  plain JSON-RPC latency and wrk runs alternate between the two servers, so background
  load on this shared machine weighs on both alike;
- 32 writers contending on one plan: lost updates and failed calls (both must be 0);
- claim contention (thin server only): 8, 32 and 64 agents claim one task at once, round
  after round; exactly one winner each time, every loser told who won;
- Claude Code's HTTP hooks (thin server only; bench/hooks.py): each hook kind's round trip
  against the timeout the Connect page sets, what "every act is presence" adds to a write
  step in Redis (holding nothing, a claim and a lease, HOLDS_MAX leases), and how soon
  `roomservice-guard claude-wait` wakes on a message;
- event exactness: 8 writers x 1,000 post_event while readers drain get_unread_events
  (two connections per agent for some agents): every reader gets every event exactly
  once, in stream order;
- push latency (thin server only): from a post_event to the waiting agent's wake-up, for
  wait_for_events, the SSE stream and a webhook to a local receiver (signatures checked),
  and "many waiters": hundreds of wait_for_events on one server, one write wakes them all;
- tool profiles (thin server only; bench/profiles.py): each profile's tools/list in bytes
  and estimated tokens, and its latency beside the floor;
- the paper's evaluation (thin server only; bench/paper.py): coordination tool calls per
  handoff for a scripted backend -> frontend handoff with a mid-stream change request over
  the official `mcp` client, a newcomer's cold start (get_my_summary against replaying the
  log) and the staleness window of update_context through wait_for_events, SSE, webhooks.

Exit status: 0 when every correctness check passed, 1 when one failed, 2 when the bench
could not run. Knobs (env): BENCH_WRK_SECONDS (5), BENCH_LATENCY_CALLS (500),
BENCH_MCP_CALLS (200), BENCH_DISPATCH ("thin"), BENCH_KEEP_VAR (keep the var folder),
BENCH_RATE_LIMIT (the servers' per-team limit a minute: by default so high it never trips,
so the limiter's cost is measured; 0 turns it off), BENCH_PUSH_EVENTS (300 per push path),
BENCH_PUSH_WAITERS (50,500,2000: one many-waiters run per count), BENCH_ONLY (a
comma-separated subset of the sections: floor, latency, throughput, contention, claims,
messages, hooks, archive, events, push, denials, globs, growth, storm, cost, profiles,
sizes, search, paper, redaction (in process, no server: bench/redaction.py), imports (a
server of its own: bench/imports.py; BENCH_IMPORT_MB), idle (a server of its own:
bench/idle.py, what an idle agent costs an hour; BENCH_IDLE_AGENTS), wakes (servers of
its own, two web processes each, on one Redis and on a local Redis Cluster: bench/wakes.py,
agents across rooms each written once a second, woken and re-arming; BENCH_WAKE_AGENTS
(10000), BENCH_WAKE_ROOMS (1000), BENCH_WAKE_SECONDS (10)); e.g.
BENCH_ONLY=push runs section 6 alone,
against the thin server only unless BENCH_DISPATCH says otherwise). Section paper has its
own knobs: BENCH_PAPER_HANDOFFS (20), BENCH_PAPER_UPDATES (100), BENCH_PAPER_MODE (legacy).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import sys
import tempfile
import textwrap
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import (
    archives,
    claims,
    cost,
    denials,
    globs,
    idle,
    loads,
    messages,
    paper,
    push,
    server,
    sizes,
    tenancy,
    wakes,
    wire,
)
from bench import hooks as hooks_bench
from bench import imports as imports_bench
from bench import profiles as profiles_bench
from bench import redaction as redaction_bench
from bench import search as search_bench
from bench.stats import env_int, percentile

TOOLS = loads.MIX  # the calls timed one by one: the load test's mix
CONNS = (1, 8, 32)
LOAD_TASKS = 20
CONTENTION_WRITERS = 32
CONTENTION_CALLS = 50
# Each task gets TASK_NOTES_KEPT (20) notes, so every acknowledged note must still be kept.
CONTENTION_TASKS = 80
EVENT_WRITERS = 8
EVENTS_PER_WRITER = 1000
# reader agent -> connections it reads from at once
EVENT_READERS = {"reader-1": 2, "reader-2": 2, "reader-3": 1}
THROUGHPUT_TARGET = 1500.0
# The longest a concurrent phase may take before the bench gives up on it (TimeoutError).
PHASE_TIMEOUT = 180.0


WRK_SECONDS = env_int("BENCH_WRK_SECONDS", 5)
LATENCY_CALLS = env_int("BENCH_LATENCY_CALLS", 500)
MCP_CALLS = env_int("BENCH_MCP_CALLS", 200)
PUSH_EVENTS = env_int("BENCH_PUSH_EVENTS", 300)
PUSH_WARM = 10
PUSH_WAITERS = tuple(
    int(n) for n in os.environ.get("BENCH_PUSH_WAITERS", "50,500,2000").split(",") if n.strip()
)
PUSH_ROUNDS = 3
SECTIONS = (
    "floor",
    "latency",
    "throughput",
    "contention",
    "claims",
    "messages",
    "hooks",
    "archive",
    "events",
    "push",
    "denials",
    "globs",
    "growth",
    "storm",
    "cost",
    "profiles",
    "sizes",
    "search",
    "paper",
    "redaction",
    "imports",
    "idle",
    "wakes",
)


def sections_wanted() -> tuple[str, ...]:
    raw = os.environ.get("BENCH_ONLY", "").strip()
    if not raw:
        return SECTIONS
    wanted = {s.strip() for s in raw.split(",") if s.strip()}
    unknown = wanted - set(SECTIONS)
    if unknown:
        raise SystemExit(f"BENCH_ONLY: unknown section(s) {sorted(unknown)}; known: {SECTIONS}")
    return tuple(s for s in SECTIONS if s in wanted)


ONLY = sections_wanted()


# --- Bookkeeping ---------------------------------------------------------------------------------


@dataclass
class Failures:
    """Every correctness failure, with a few request/response samples per check."""

    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, check: str, detail: str = "", n: int = 1) -> None:
        self.counts[check] += n
        if detail and len(self.samples[check]) < 3:
            self.samples[check].append(detail)

    def __bool__(self) -> bool:
        return any(self.counts.values())


@dataclass
class Stat:
    p50: float
    p99: float
    n: int
    failed: int = 0

    def cell(self) -> str:
        text = f"{self.p50:6.2f} / {self.p99:6.2f}"
        return text + (f"  ({self.failed} failed)" if self.failed else "")


def stat(seconds: list[float], failed: int = 0) -> Stat:
    p50, p99 = percentile(seconds, 50) * 1000, percentile(seconds, 99) * 1000
    return Stat(p50, p99, len(seconds), failed)


@dataclass
class ModeFigures:
    dispatch: str
    health: Stat | None = None
    redis_ping: Stat | None = None
    plain: dict[str, Stat] = field(default_factory=dict)
    mcp: dict[str, dict[str, Stat]] = field(default_factory=dict)  # mode -> tool -> stat
    mcp_problem: dict[str, str] = field(default_factory=dict)
    load: dict[tuple[str, int], loads.LoadResult] = field(default_factory=dict)
    contention: dict[str, Any] = field(default_factory=dict)
    claims: claims.ClaimFigures | None = None
    messages: messages.FanOutFigures | None = None
    hooks: hooks_bench.HookFigures | None = None
    archive: archives.ArchiveFigures | None = None
    events: dict[str, Any] = field(default_factory=dict)
    push: dict[str, Any] = field(default_factory=dict)  # wait, sse, hook, many
    growth: tenancy.GrowthFigures | None = None
    storm: tenancy.StormFigures | None = None
    cost: cost.CostFigures | None = None
    profiles: profiles_bench.ProfileFigures | None = None
    sizes: sizes.SizeFigures | None = None
    search: search_bench.SearchFigures | None = None
    paper: paper.PaperFigures | None = None
    cross_team: str = ""
    log_problems: list[str] = field(default_factory=list)
    phase_seconds: dict[str, float] = field(default_factory=dict)


@contextlib.contextmanager
def phase(fig: ModeFigures, name: str) -> Iterator[None]:
    print(f"  [{fig.dispatch}] {name} ...", end="", flush=True)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        dt = time.perf_counter() - t0
        fig.phase_seconds[name] = dt
        print(f" {dt:.1f} s", flush=True)


def id_key(event_id: str) -> tuple[int, int]:
    ms, _, seq = event_id.partition("-")
    return int(ms), int(seq or 0)


# --- Floor ---------------------------------------------------------------------------------------


async def measure_health(srv: server.BenchServer, fails: Failures, n: int = 1000) -> Stat:
    conn = wire.Connection(srv.host, srv.port)
    raw = wire.build_request("GET", srv.host, srv.port, "/health")
    times: list[float] = []
    for i in range(n + 100):
        t0 = time.perf_counter()
        try:
            resp = await conn.request(raw)
        except wire.HttpError as exc:
            fails.add("GET /health", str(exc))
            continue
        dt = time.perf_counter() - t0
        if resp.status != 200:
            fails.add("GET /health", f"HTTP {resp.status} {resp.body[:200]!r}")
        elif i >= 100:
            times.append(dt)
    await conn.close()
    return stat(times)


def measure_redis_ping(url: str, n: int = 1000) -> Stat:
    import redis

    r = redis.Redis.from_url(url, socket_timeout=5)
    times: list[float] = []
    try:
        for i in range(n + 100):
            t0 = time.perf_counter()
            r.ping()
            if i >= 100:
                times.append(time.perf_counter() - t0)
    finally:
        r.close()
    return stat(times)


# --- Rooms ---------------------------------------------------------------------------------------


def new_room(label: str) -> str:
    return f"bench-{label}-{secrets.token_hex(4)}"


async def add_tasks(ep: wire.McpEndpoint, room: str, n: int, fails: Failures) -> list[str]:
    conn = ep.connection()
    ids: list[str] = []
    try:
        for i in range(n):
            res = await wire.call_tool(
                conn,
                ep,
                "add_task",
                {
                    "roomId": room,
                    "title": f"Bench task {i + 1}",
                    "description": f"Task {i + 1} of the bench plan.",
                    "agentId": "bench-setup",
                },
            )
            if not res.ok:
                fails.add("setup (add_task)", res.describe())
                continue
            ids.append(res.value["id"])
    finally:
        await conn.close()
    if not ids:
        first = (fails.samples.get("setup (add_task)") or ["no answer"])[0]
        raise RuntimeError(f"could not create any task; the first failure:\n      {first}")
    return ids


def latency_arguments(name: str, room: str, tasks: list[str], i: int, agent: str) -> dict[str, Any]:
    """Arguments of the i-th latency call of `name`. update_task adds no note here (a note
    is appended to the task forever, which would make every later call slower)."""
    if name == "read_plan":
        return {"roomId": room}
    if name == "update_task":
        return {
            "roomId": room,
            "taskId": tasks[i % len(tasks)],
            "status": "in_progress" if i % 2 else "pending",
            "agentId": agent,
        }
    if name == "post_event":
        return {"roomId": room, "type": "bench_latency", "from": agent, "payload": {"i": i}}
    if name == "get_unread_events":
        return {"roomId": room, "agentId": agent, "limit": 20}
    if name == "heartbeat":
        return {"roomId": room, "agentId": agent}
    raise ValueError(name)


# --- Per-tool latency: plain JSON-RPC ------------------------------------------------------------


async def plain_latency(targets: list[Target], fails: Failures, calls: int) -> None:
    """One keep-alive connection per server, the five tools in turn (so get_unread_events
    finds the couple of events the previous round wrote), `calls` timed calls each after a
    warm-up. The servers take turns call by call, so background load hits both alike."""
    warm = max(10, calls // 10)
    conns = [t.ep.connection() for t in targets]
    times: list[dict[str, list[float]]] = [{name: [] for name in TOOLS} for _ in targets]
    failed = [dict.fromkeys(TOOLS, 0) for _ in targets]
    agent = f"lat-{secrets.token_hex(2)}"
    try:
        for i in range(warm + calls):
            for name in TOOLS:
                for k, t in enumerate(targets):
                    args = latency_arguments(name, t.room, t.tasks, i, agent)
                    res = await wire.call_tool(conns[k], t.ep, name, args)
                    if not res.ok:
                        failed[k][name] += 1
                        fails.add(f"latency ({name}, JSON-RPC, {t.fig.dispatch})", res.describe())
                    elif i >= warm:
                        times[k][name].append(res.seconds)
    finally:
        for c in conns:
            await c.close()
    for k, t in enumerate(targets):
        t.fig.plain = {name: stat(times[k][name], failed[k][name]) for name in TOOLS}


# --- Per-tool latency: the official mcp client ---------------------------------------------------


async def mcp_latency(
    srv: server.BenchServer,
    secret: str,
    mode: str,
    room: str,
    tasks: list[str],
    fails: Failures,
    calls: int,
) -> dict[str, Stat]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    warm = max(5, calls // 10)
    times: dict[str, list[float]] = {t: [] for t in TOOLS}
    failed: dict[str, int] = dict.fromkeys(TOOLS, 0)
    agent = f"mcp-{mode[:6]}-{secrets.token_hex(2)}"
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http,
        Client(streamable_http_client(srv.mcp_url, http_client=http), mode=mode) as client,
    ):
        listed = await client.list_tools()
        names = {t.name for t in listed.tools}
        missing = [t for t in TOOLS if t not in names]
        if missing:
            fails.add(f"mcp client ({mode}) tools/list", f"tools/list lacks {missing}")
        for i in range(warm + calls):
            for name in TOOLS:
                args = latency_arguments(name, room, tasks, i, agent)
                t0 = time.perf_counter()
                try:
                    result = await client.call_tool(name, args)
                except Exception as exc:  # the client raises MCPError & co. on protocol errors
                    failed[name] += 1
                    fails.add(
                        f"latency ({name}, mcp client {mode})",
                        f"{type(exc).__name__}: {exc}\n      arguments: {json.dumps(args)}",
                    )
                    continue
                dt = time.perf_counter() - t0
                if result.is_error or result.structured_content is None:
                    failed[name] += 1
                    text = getattr(result.content[0], "text", "") if result.content else ""
                    fails.add(
                        f"latency ({name}, mcp client {mode})",
                        f"isError={result.is_error} {text[:300]}\n"
                        f"      arguments: {json.dumps(args)}",
                    )
                elif i >= warm:
                    times[name].append(dt)
    return {t: stat(times[t], failed[t]) for t in TOOLS}


# --- 32-writer plan contention -------------------------------------------------------------------


async def plan_contention(ep: wire.McpEndpoint, fails: Failures) -> dict[str, Any]:
    """32 connections each make 50 update_task calls, each with a unique note, spread over
    the 80 tasks of one plan (20 notes each, as many as a task keeps), all at once, every
    task written by many writers. Every acknowledged note must be on its task afterwards
    (read_plan): a missing one is a lost update."""
    room = new_room("plan")
    tasks = await add_tasks(ep, room, CONTENTION_TASKS, fails)
    tag = secrets.token_hex(3)
    acked: dict[str, set[str]] = defaultdict(set)
    failed = 0
    ack_without_note = 0
    go = asyncio.Event()

    async def writer(w: int) -> None:
        nonlocal failed, ack_without_note
        conn = ep.connection()
        await conn.open()
        await go.wait()
        try:
            for i in range(CONTENTION_CALLS):
                task = tasks[(w * CONTENTION_CALLS + i) % len(tasks)]
                note = f"{tag}-w{w:02d}-n{i:03d}"
                res = await wire.call_tool(
                    conn,
                    ep,
                    "update_task",
                    {
                        "roomId": room,
                        "taskId": task,
                        "status": "in_progress" if i % 2 else "pending",
                        "note": note,
                        "agentId": f"writer-{w}",
                    },
                )
                if not res.ok:
                    failed += 1
                    fails.add("plan contention: failed calls", res.describe())
                    continue
                acked[task].add(note)
                texts = {n.get("text") for n in res.value.get("notes", [])}
                if res.value.get("id") != task or note not in texts:
                    ack_without_note += 1
                    fails.add(
                        "plan contention: acknowledged result lacks its own note",
                        f"task {task} note {note}: result {json.dumps(res.value)[:400]}",
                    )
        finally:
            await conn.close()

    jobs = [asyncio.create_task(writer(w)) for w in range(CONTENTION_WRITERS)]
    await asyncio.sleep(0.05)  # let every writer open its connection
    t0 = time.perf_counter()
    go.set()
    try:
        async with asyncio.timeout(PHASE_TIMEOUT):
            await asyncio.gather(*jobs)
    finally:
        for job in jobs:
            job.cancel()
    elapsed = time.perf_counter() - t0

    conn = ep.connection()
    plan = await wire.call_tool(conn, ep, "read_plan", {"roomId": room})
    await conn.close()
    lost = duplicated = unacked_present = 0
    if not plan.ok:
        fails.add("plan contention: read_plan", plan.describe())
        lost = sum(len(v) for v in acked.values())
    else:
        by_id = {t["id"]: t for t in plan.value.get("tasks", [])}
        if set(by_id) != set(tasks):
            fails.add(
                "plan contention: plan has the wrong tasks",
                f"expected {len(tasks)} tasks, read_plan has {len(by_id)}",
            )
        for task in tasks:
            texts = [n.get("text") for n in (by_id.get(task) or {}).get("notes", [])]
            mine = [t for t in texts if isinstance(t, str) and t.startswith(tag)]
            lost += len(acked[task] - set(mine))
            duplicated += len(mine) - len(set(mine))
            unacked_present += len(set(mine) - acked[task])
    if lost:
        fails.add(
            "plan contention: lost updates",
            f"{lost} acknowledged notes missing from read_plan",
            lost,
        )
    if duplicated:
        fails.add(
            "plan contention: duplicated notes", f"{duplicated} notes appear twice", duplicated
        )
    total = CONTENTION_WRITERS * CONTENTION_CALLS
    return {
        "room": room,
        "calls": total,
        "acked": sum(len(v) for v in acked.values()),
        "failed": failed,
        "lost": lost,
        "duplicated": duplicated,
        "unacked_present": unacked_present,
        "ack_without_note": ack_without_note,
        "seconds": elapsed,
        "rate": total / elapsed if elapsed else 0.0,
    }


# --- Event exactness -----------------------------------------------------------------------------


async def event_exactness(ep: wire.McpEndpoint, fails: Failures) -> dict[str, Any]:
    """8 writers x 1,000 post_event (payload: writer, seq) while reader agents call
    get_unread_events; reader-1 and reader-2 each read from two connections at once. After
    the writers finish the readers drain. Every reader agent must have received every
    acknowledged event exactly once; each connection must see ids strictly increasing; in
    stream order every writer's seq must run 0..999."""
    room = new_room("events")
    conn = ep.connection()
    first = await wire.call_tool(conn, ep, "heartbeat", {"roomId": room, "agentId": "bench-setup"})
    await conn.close()
    if not first.ok:
        fails.add("event exactness: setup", first.describe())
    acks: dict[int, list[str | None]] = {
        w: [None] * EVENTS_PER_WRITER for w in range(EVENT_WRITERS)
    }
    write_failed = 0
    writers_done = asyncio.Event()
    go = asyncio.Event()
    received: dict[str, list[dict[str, Any]]] = defaultdict(list)
    read_calls = 0
    read_failed = 0
    order_violations = 0

    async def writer(w: int) -> None:
        nonlocal write_failed
        c = ep.connection()
        await c.open()
        await go.wait()
        try:
            for seq in range(EVENTS_PER_WRITER):
                res = await wire.call_tool(
                    c,
                    ep,
                    "post_event",
                    {
                        "roomId": room,
                        "type": "bench_exact",
                        "from": f"writer-{w}",
                        "payload": {"writer": w, "seq": seq},
                    },
                )
                if not res.ok:
                    write_failed += 1
                    fails.add("event exactness: failed post_event", res.describe())
                    continue
                acks[w][seq] = res.value.get("id")
        finally:
            await c.close()

    async def reader(agent: str, k: int) -> None:
        nonlocal read_calls, read_failed, order_violations
        c = ep.connection()
        await c.open()
        await go.wait()
        last: tuple[int, int] = (0, 0)
        limit = 100
        try:
            while True:
                done_before = writers_done.is_set()
                res = await wire.call_tool(
                    c,
                    ep,
                    "get_unread_events",
                    {
                        "roomId": room,
                        "agentId": agent,
                        "limit": limit,
                    },
                )
                read_calls += 1
                if not res.ok:
                    read_failed += 1
                    fails.add("event exactness: failed get_unread_events", res.describe())
                    if read_failed > 50:
                        return
                    await asyncio.sleep(0.01)
                    continue
                events = res.value.get("events", [])
                if res.value.get("count") != len(events):
                    fails.add(
                        "event exactness: count field disagrees with events",
                        f"count={res.value.get('count')} events={len(events)}",
                    )
                for e in events:
                    key = id_key(e["id"])
                    if key <= last:
                        order_violations += 1
                        fails.add(
                            "event exactness: ids not increasing on one connection",
                            f"{agent} conn {k}: {e['id']} after {last}",
                        )
                    last = max(last, key)
                    received[agent].append(e)
                if done_before and not events:
                    return
                if len(events) < limit:
                    await asyncio.sleep(0.005)  # a polling agent, not a spin loop
        finally:
            await c.close()

    jobs = [asyncio.create_task(writer(w)) for w in range(EVENT_WRITERS)]
    readers = [
        asyncio.create_task(reader(agent, k))
        for agent, n in EVENT_READERS.items()
        for k in range(n)
    ]
    await asyncio.sleep(0.05)
    t0 = time.perf_counter()
    go.set()
    try:
        async with asyncio.timeout(PHASE_TIMEOUT):
            await asyncio.gather(*jobs)
            write_seconds = time.perf_counter() - t0
            writers_done.set()
            await asyncio.gather(*readers)
    finally:
        for job in jobs + readers:
            job.cancel()
    total_seconds = time.perf_counter() - t0

    # Writers: each writer's acknowledged ids must increase with seq (posting order).
    expected: dict[str, tuple[int, int]] = {}
    for w, ids in acks.items():
        prev: tuple[int, int] = (0, 0)
        for seq, eid in enumerate(ids):
            if eid is None:
                continue
            expected[eid] = (w, seq)
            if id_key(eid) <= prev:
                fails.add(
                    "event exactness: a writer's ids do not increase",
                    f"writer {w} seq {seq}: {eid}",
                )
            prev = id_key(eid)
    per_agent: dict[str, dict[str, int]] = {}
    for agent in EVENT_READERS:
        got = [e for e in received[agent] if e.get("type") == "bench_exact"]
        ids = [e["id"] for e in got]
        seen = set(ids)
        dup = len(ids) - len(seen)
        missing = len(set(expected) - seen)
        unexpected = len(seen - set(expected))
        # In stream order, each writer's seq must run 0, 1, 2, ...
        seq_errors = 0
        next_seq: dict[int, int] = defaultdict(int)
        for e in sorted({e["id"]: e for e in got}.values(), key=lambda e: id_key(e["id"])):
            p = e.get("payload") or {}
            w, seq = p.get("writer"), p.get("seq")
            if expected.get(e["id"]) != (w, seq):
                seq_errors += 1
            if isinstance(w, int):
                if seq != next_seq[w]:
                    seq_errors += 1
                    next_seq[w] = seq + 1 if isinstance(seq, int) else next_seq[w]
                else:
                    next_seq[w] += 1
        others = len(received[agent]) - len(got)
        per_agent[agent] = {
            "received": len(ids),
            "duplicates": dup,
            "missing": missing,
            "unexpected": unexpected,
            "seq_errors": seq_errors,
            "other_events": others,
        }
        for what, n in (
            ("duplicates", dup),
            ("missing (gaps)", missing),
            ("unexpected ids", unexpected),
            ("per-writer seq out of order", seq_errors),
        ):
            if n:
                fails.add(f"event exactness: {what}", f"{agent}: {n}", n)
    return {
        "room": room,
        "posted": EVENT_WRITERS * EVENTS_PER_WRITER,
        "acked": len(expected),
        "write_failed": write_failed,
        "read_calls": read_calls,
        "read_failed": read_failed,
        "order_violations": order_violations,
        "per_agent": per_agent,
        "write_seconds": write_seconds,
        "total_seconds": total_seconds,
        "write_rate": len(expected) / write_seconds if write_seconds else 0.0,
    }


# --- Cross-team check ----------------------------------------------------------------------------


async def cross_team(ep_other: wire.McpEndpoint, room: str, fails: Failures) -> str:
    """Another team's key must be refused on our room (as a tool error), not served."""
    conn = ep_other.connection()
    res = await wire.call_tool(conn, ep_other, "read_plan", {"roomId": room})
    await conn.close()
    if res.ok:
        fails.add("cross-team read was served", res.describe())
        return "SERVED (wrong)"
    if res.status == 200 and b'"isError":true' in res.response:
        return "refused (tool error)"
    fails.add("cross-team read: unexpected answer", res.describe())
    return f"unexpected answer (HTTP {res.status})"


# --- One dispatch mode ---------------------------------------------------------------------------


@dataclass
class Target:
    """One running server under test and what the bench set up on it."""

    fig: ModeFigures
    srv: server.BenchServer
    ep: wire.McpEndpoint
    ep_other: wire.McpEndpoint
    room: str = ""
    tasks: list[str] = field(default_factory=list)


def step(label: str) -> contextlib.AbstractContextManager[None]:
    return phase(ModeFigures("all"), label)


def latency_phases(
    targets: list[Target], keys: server.Keys, fails: Failures, run: Callable[[Any], Any]
) -> None:
    with step(f"latency, plain JSON-RPC ({LATENCY_CALLS} calls/tool, servers alternating)"):
        run(plain_latency(targets, fails, LATENCY_CALLS))
    for t in targets:
        for mode in ("legacy", "2026-07-28"):
            with phase(t.fig, f"latency, mcp client {mode} ({MCP_CALLS} calls/tool)"):
                try:
                    t.fig.mcp[mode] = run(
                        mcp_latency(t.srv, keys.secret, mode, t.room, t.tasks, fails, MCP_CALLS)
                    )
                except Exception as exc:
                    t.fig.mcp_problem[mode] = f"{type(exc).__name__}: {exc}"
                    fails.add(f"mcp client {mode} could not run", t.fig.mcp_problem[mode])


def throughput_phases(
    targets: list[Target], keys: server.Keys, fails: Failures, run: Callable[[Any], Any]
) -> None:
    wrk = loads.wrk_path()
    gen = "wrk" if wrk else "python load generator"
    runs = len(loads.SCENARIOS) * len(CONNS) * len(targets)
    with step(f"throughput ({gen}, {runs} runs of {WRK_SECONDS} s, servers alternating)"):
        for t in targets:  # warm-up
            if wrk:
                loads.run_wrk(wrk, t.srv.mcp_url, keys.secret, t.room, t.tasks, "mix", 8, 1)
        for scenario in loads.SCENARIOS:
            for conns in CONNS:
                for t in targets:
                    if wrk:
                        res = loads.run_wrk(
                            wrk,
                            t.srv.mcp_url,
                            keys.secret,
                            t.room,
                            t.tasks,
                            scenario,
                            conns,
                            WRK_SECONDS,
                        )
                    else:
                        res = run(
                            loads.run_python(t.ep, t.room, t.tasks, scenario, conns, WRK_SECONDS)
                        )
                    t.fig.load[(scenario, conns)] = res
                    if res.failures:
                        fails.add(
                            f"throughput ({t.fig.dispatch}, {scenario}, {conns} conns): "
                            "failed requests",
                            f"non200={res.non200} rpc_errors={res.rpc_errors} "
                            f"tool_errors={res.tool_errors} "
                            f"socket_errors={res.socket_errors}; first: {res.first_bad}",
                            res.failures,
                        )


def push_phases(t: Target, fails: Failures, run: Callable[[Any], Any]) -> None:
    """Section 6 against one server: the three push paths one after the other (each in a
    room of its own), then the many-waiters rounds."""
    n, warm = PUSH_EVENTS, PUSH_WARM
    with phase(t.fig, f"push latency, wait_for_events ({n} events)"):
        t.fig.push["wait"] = run(push.wait_latency(t.ep, new_room("push-wait"), n, warm, fails))
    with phase(t.fig, f"push latency, SSE ({n} events)"):
        t.fig.push["sse"] = run(push.sse_latency(t.ep, new_room("push-sse"), n, warm, fails))
    with phase(t.fig, f"push latency, webhook ({n} events)"):
        t.fig.push["hook"] = run(push.webhook_latency(t.ep, new_room("push-hook"), n, warm, fails))
    for waiters in PUSH_WAITERS:
        label = f"push, many waiters ({waiters} wait_for_events x {PUSH_ROUNDS} rounds)"
        with phase(t.fig, label):
            t.fig.push[f"many:{waiters}"] = run(
                push.many_waiters(
                    t.ep,
                    new_room(f"push-many-{waiters}"),
                    waiters,
                    PUSH_ROUNDS,
                    t.srv.process.pid,
                    fails,
                )
            )


def bench_all(
    dispatches: list[str],
    var_root: Path,
    keys: server.Keys,
    key_prefix: str,
    fails: Failures,
    run: Callable[[Any], Any],
    figs: list[ModeFigures],
) -> None:
    """Start one server per dispatch mode, run every phase against each, stop them all.
    Latency and throughput runs alternate between the servers so that whatever else the
    machine is doing weighs on both alike."""
    targets: list[Target] = []
    try:
        for dispatch in dispatches:
            print(f"Starting the service ({dispatch}) ...", flush=True)
            srv = server.start(dispatch, var_root, keys, key_prefix)
            print(
                f"  listening on {srv.base_url} (pid {srv.process.pid}), "
                f"Redis {redact(srv.redis_url)}",
                flush=True,
            )
            figs.append(ModeFigures(dispatch))
            targets.append(
                Target(
                    figs[-1],
                    srv,
                    wire.McpEndpoint(srv.host, srv.port, keys.secret),
                    wire.McpEndpoint(srv.host, srv.port, keys.other_secret),
                )
            )
        for t in targets:
            if "floor" in ONLY:
                with phase(t.fig, "floor (GET /health, Redis PING)"):
                    t.fig.health = run(measure_health(t.srv, fails))
                    t.fig.redis_ping = measure_redis_ping(t.srv.redis_url)
            if "latency" in ONLY or "throughput" in ONLY or "cost" in ONLY:
                with phase(t.fig, f"setup ({LOAD_TASKS}-task plan)"):
                    t.room = new_room("load")
                    t.tasks = run(add_tasks(t.ep, t.room, LOAD_TASKS, fails))
        if "latency" in ONLY:
            latency_phases(targets, keys, fails, run)
        if "throughput" in ONLY:
            throughput_phases(targets, keys, fails, run)
        for t in targets:
            if "contention" in ONLY:
                label = f"plan contention ({CONTENTION_WRITERS} writers x {CONTENTION_CALLS} calls)"
                with phase(t.fig, label):
                    t.fig.contention = run(plan_contention(t.ep, fails))
                    t.fig.cross_team = run(cross_team(t.ep_other, t.fig.contention["room"], fails))
            if "claims" in ONLY and t.fig.dispatch == "thin":
                label = f"claim contention ({', '.join(map(str, claims.AGENT_COUNTS))} agents)"
                with phase(t.fig, label):
                    t.fig.claims = run(claims.contention(t.ep, fails))
            if "messages" in ONLY and t.fig.dispatch == "thin":
                label = f"message fan-out (one message to {messages.RECIPIENTS} recipients)"
                with phase(t.fig, label):
                    t.fig.messages = run(messages.fan_out(t.ep, fails))
            if "hooks" in ONLY and t.fig.dispatch == "thin":
                label = "hooks (round trips, presence's cost per write, claude-wait wake-ups)"
                with phase(t.fig, label):
                    t.fig.hooks = run(hooks_bench.measure(t.srv, t.ep, fails))
            if "archive" in ONLY and t.fig.dispatch == "thin":
                with phase(t.fig, "archive and restore (1k and 10k events), the secret check"):
                    own_redis = None if os.environ.get("REDIS_URL") else t.srv.redis_url
                    t.fig.archive = run(archives.archive_figures(t.ep, fails, own_redis))
            if "events" in ONLY:
                label = (
                    f"event exactness ({EVENT_WRITERS} writers x {EVENTS_PER_WRITER} post_event)"
                )
                with phase(t.fig, label):
                    t.fig.events = run(event_exactness(t.ep, fails))
        if "cost" in ONLY and targets:
            t = next((t for t in targets if t.fig.dispatch == "thin"), targets[0])
            with phase(t.fig, "cost (commands per call; CPU per call next to the floor)"):
                t.fig.cost = cost.measure(t.srv, t.ep, keys, t.room, t.tasks, WRK_SECONDS, run)
        if "profiles" in ONLY and targets:
            t = next((t for t in targets if t.fig.dispatch == "thin"), targets[0])
            label = f"profiles (tools/list per profile, {profiles_bench.CALLS} calls per target)"
            with phase(t.fig, label):
                t.fig.profiles = run(profiles_bench.measure(t.srv, t.ep, fails))
        if "push" in ONLY and targets:
            # One server is enough: the thin one (the default), else the first.
            t = next((t for t in targets if t.fig.dispatch == "thin"), targets[0])
            push_phases(t, fails, run)
        if "paper" in ONLY and targets:
            t = next((t for t in targets if t.fig.dispatch == "thin"), targets[0])
            label = (
                f"paper ({paper.HANDOFFS} handoffs over the mcp client, cold starts, "
                f"{paper.UPDATES} updates per push path)"
            )
            with phase(t.fig, label):
                t.fig.paper = run(paper.measure(t.srv.mcp_url, keys.secret, t.ep, fails))
        if targets and ("growth" in ONLY or "storm" in ONLY):
            t = next((t for t in targets if t.fig.dispatch == "thin"), targets[0])
            if "growth" in ONLY:
                with phase(t.fig, "growth (note attack, mixed workload)"):
                    t.fig.growth = run(tenancy.growth(t.srv, t.ep, fails))
            if "storm" in ONLY:
                label = f"storm ({tenancy.STORM_TASKS:,} tasks; idle, misses, hits)"
                with phase(t.fig, label):
                    t.fig.storm = run(tenancy.storm(t.srv, t.ep, fails))
        if ("sizes" in ONLY or "search" in ONLY) and targets:
            t = next((t for t in targets if t.fig.dispatch == "thin"), targets[0])
            big = server.start(
                "thin", var_root, keys, key_prefix, name="sizes", extra_env=sizes.SERVER_ENV
            )
            try:
                ep = wire.McpEndpoint(big.host, big.port, keys.secret)
                if "sizes" in ONLY:
                    label = "sizes (rooms of 1k / 100k / 1M events, 10 / 500 / 5,000 agents)"
                    with phase(t.fig, label):
                        t.fig.sizes = run(sizes.measure(big, ep, new_room("sizes")))
                if "search" in ONLY:
                    with phase(t.fig, "search (rooms of 1k / 100k events)"):
                        found = run(search_bench.measure(big, ep, new_room("search")))
                        t.fig.search = found
                        for n in search_bench.EVENT_SIZES:
                            if not (found.found_oldest.get(n) and found.found_newest.get(n)):
                                fails.add(
                                    f"search ({n:,} events)",
                                    "the oldest or newest event's rare word was not found",
                                )
            finally:
                big.stop()
        for t in targets:
            if not t.srv.alive():
                fails.add(f"server ({t.fig.dispatch}) died during the bench", t.srv.log_tail())
    finally:
        for t in targets:
            code = t.srv.stop()
            t.fig.log_problems = t.srv.log_problems()
            if code not in (0, None, -15):
                print(f"  the {t.fig.dispatch} server exited with status {code}", flush=True)


# --- Report ---------------------------------------------------------------------------------------


def table(rows: list[list[str]], indent: str = "  ") -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        cells = [c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)]
        out.append((indent + "  ".join(cells)).rstrip())
        if n == 0:
            out.append(indent + "  ".join("-" * w for w in widths))
    return "\n".join(out)


def explain(*sentences: str) -> list[str]:
    """What a figure measures, wrapped to the report's width."""
    return textwrap.wrap(
        " ".join(sentences), width=98, initial_indent="   ", subsequent_indent="   "
    )


def redact(url: str) -> str:
    """A store URL without its credentials."""
    scheme, sep, rest = url.partition("://")
    return scheme + sep + rest.rpartition("@")[2] if sep else url


def environment_line() -> str:
    redis_url = os.environ.get("REDIS_URL")
    db = os.environ.get("DATABASE_URL")
    workers = os.environ.get("WEB_CONCURRENCY", "1")
    redis_text = f"REDIS_URL ({redact(redis_url)})" if redis_url else "embedded (unix socket)"
    db_text = db.split(":")[0] if db else "SQLite (embedded)"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    limit = int(server.RATE_LIMIT or 0)
    limiter = f"on, {limit:,} calls/min per team (never trips)" if limit > 0 else "off"
    return (
        f"machine: {os.cpu_count()} CPUs, load average {load} (at the end of the run); "
        f"server: uvicorn, WEB_CONCURRENCY={workers}\n"
        f"Redis: {redis_text}; database: {db_text}; rate limiter: {limiter}"
    )


def _floor_section(figs: list[ModeFigures]) -> list[str]:
    lines = ["1. Floor of the stack (ms, p50 / p99; sequential, one keep-alive connection)"]
    lines += explain(
        "GET /health is answered by the outer ASGI router: HTTP parsing, uvicorn and this client,",
        "no tool and no store. Redis PING is one round trip from this process to the Redis the",
        "server uses (redis-py, same URL).",
    )
    rows = [["figure", *[f.dispatch for f in figs]]]
    rows.append(["GET /health", *[f.health.cell() if f.health else "-" for f in figs]])
    rows.append(["Redis PING", *[f.redis_ping.cell() if f.redis_ping else "-" for f in figs]])
    return [*lines, table(rows), ""]


def _latency_section(figs: list[ModeFigures]) -> list[str]:
    lines = [
        "2. Per-tool latency (ms, p50 / p99), one keep-alive connection, the five tools in turn"
    ]
    lines += explain(
        f"JSON-RPC: a plain tools/call POST ({LATENCY_CALLS} timed calls per tool),",
        "the server's own cost. mcp: the official `mcp` v2 Client over streamable HTTP",
        f"({MCP_CALLS} calls per tool);",
        "legacy = initialize handshake, then 2025-11-25 calls; 2026 = 2026-07-28 single-exchange",
        "requests. Column suffix = the server's dispatch. update_task sets status as its agent",
        "(no note); get_unread_events has limit 20; the plan has 20 tasks. The mcp columns include",
        "the client's own check of every result against the tool's published outputSchema",
        "(jsonschema, in the client process: about 1.3 ms for the 20-task plan).",
    )
    header = ["tool"] + [f"JSON-RPC {f.dispatch}" for f in figs]
    for f in figs:
        header += [f"mcp legacy {f.dispatch}", f"mcp 2026 {f.dispatch}"]
    rows = [header]
    for tool in TOOLS:
        row = [tool] + [f.plain[tool].cell() if tool in f.plain else "-" for f in figs]
        for f in figs:
            for mode in ("legacy", "2026-07-28"):
                row.append(f.mcp[mode][tool].cell() if mode in f.mcp else "error")
        rows.append(row)
    lines.append(table(rows))
    for f in figs:
        for mode, problem in f.mcp_problem.items():
            lines.append(f"   mcp client {mode} against {f.dispatch}: {problem}")
    return [*lines, ""]


def _throughput_section(figs: list[ModeFigures], wrk_used: bool) -> list[str]:
    gen = "wrk (bench/wrk_post.lua)" if wrk_used else "the Python load generator (wrk missing)"
    lines = [f"3. Throughput: tool calls/s from {gen}, {WRK_SECONDS} s per run"]
    lines += explain(
        "Keep-alive connections, each sending its next call as soon as the last one is answered.",
        "mix = read_plan, update_task, post_event, get_unread_events, heartbeat in turn. p50/p99",
        "in ms. Every response is checked (HTTP 200, a JSON-RPC result, isError false).",
    )
    if not wrk_used:
        lines += explain("The Python generator is client-bound: these figures are a floor.")
    modes = [f.dispatch for f in figs]
    rows = [["scenario", "conns", *[f"{m} calls/s" for m in modes]]]
    rows[0] += [*[f"{m} p50 / p99" for m in modes], "failed"]
    for scenario in loads.SCENARIOS:
        for conns in CONNS:
            res = [f.load.get((scenario, conns)) for f in figs]
            rows.append(
                [
                    scenario,
                    str(conns),
                    *[f"{r.rps:,.0f}" if r else "-" for r in res],
                    *[f"{r.p50_ms:.2f} / {r.p99_ms:.2f}" if r else "-" for r in res],
                    str(sum(r.failures for r in res if r)),
                ]
            )
    lines.append(table(rows))
    thin = next((f for f in figs if f.dispatch == "thin"), None)
    if thin and ("mix", 32) in thin.load:
        best = thin.load[("mix", 32)]
        if best.failures:
            verdict = f"not assessed: {best.failures:,} of its calls failed"
        else:
            verdict = "met" if best.rps >= THROUGHPUT_TARGET else "NOT met"
        lines.append(
            f"   Target >= {THROUGHPUT_TARGET:,.0f} tool calls/s (thin, mix, 32 connections): "
            f"{best.rps:,.0f}/s, {verdict}."
        )
    if len(figs) == 2:
        for conns in CONNS:
            pair = [f.load.get(("mix", conns)) for f in figs]
            if pair[0] and pair[1] and pair[1].rps:
                ratio = pair[0].rps / pair[1].rps
                lines.append(f"   {modes[0]} / {modes[1]}, mix, {conns} conns: {ratio:.2f}x")
    return [*lines, ""]


def _contention_section(figs: list[ModeFigures]) -> list[str]:
    lines = [
        f"4. Plan contention: {CONTENTION_WRITERS} writers x {CONTENTION_CALLS} update_task "
        f"on the {CONTENTION_TASKS} tasks of one plan (20 notes each, as many as a task keeps), "
        "all at once"
    ]
    lines += explain(
        "Each writer has its own connection; each call carries a unique note. Lost updates =",
        "acknowledged notes missing from read_plan afterwards; failed = non-200, JSON-RPC error or",
        "isError. Both must be 0. Cross-team: another team's key must be refused on that room.",
    )
    rows = [["figure", *[f.dispatch for f in figs]]]
    for key, label in (
        ("calls", "calls"),
        ("acked", "acknowledged"),
        ("failed", "failed calls"),
        ("lost", "lost updates"),
        ("duplicated", "duplicated notes"),
        ("ack_without_note", "acks lacking own note"),
    ):
        rows.append([label, *[str(f.contention.get(key, "-")) for f in figs]])
    rates = [f"{f.contention['rate']:,.0f}" if f.contention else "-" for f in figs]
    rows.append(["calls/s (Python clients)", *rates])
    rows.append(["cross-team read", *[f.cross_team or "-" for f in figs]])
    return [*lines, table(rows), ""]


def _events_section(figs: list[ModeFigures]) -> list[str]:
    agents = ", ".join(f"{a} ({n} conn{'s' if n > 1 else ''})" for a, n in EVENT_READERS.items())
    lines = [
        f"5. Event exactness: {EVENT_WRITERS} writers x {EVENTS_PER_WRITER:,} post_event "
        "while readers poll get_unread_events"
    ]
    lines += explain(
        f"Readers (limit 100): {agents}. Payloads carry writer and seq. After the writers stop the",
        "readers drain. Each agent must receive every acknowledged event exactly once (no",
        "duplicates, no gaps), ids increasing on each connection, each writer's seq in order.",
    )
    rows = [["figure", *[f.dispatch for f in figs]]]
    for key, label in (
        ("acked", "events acknowledged"),
        ("write_failed", "failed post_event"),
        ("read_calls", "get_unread_events calls"),
        ("read_failed", "failed get_unread_events"),
        ("order_violations", "id order violations"),
    ):
        rows.append([label, *[f"{f.events[key]:,}" if f.events else "-" for f in figs]])
    for agent in EVENT_READERS:
        cells = []
        for f in figs:
            a = (f.events.get("per_agent") or {}).get(agent)
            cells.append(
                f"{a['received']:,} got, {a['duplicates']} dup, {a['missing']} missing, "
                f"{a['seq_errors']} seq err"
                if a
                else "-"
            )
        rows.append([agent, *cells])
    rates = [f"{f.events['write_rate']:,.0f}" if f.events else "-" for f in figs]
    rows.append(["post_event calls/s (8 writers)", *rates])
    return [*lines, table(rows), ""]


def _push_section(figs: list[ModeFigures]) -> list[str]:
    fig = next((f for f in figs if f.push), None)
    lines = [
        "6. Push latency: from a write to the waiting agent's wake-up "
        f"(ms, p50 / p99; {fig.dispatch if fig else '-'} server)"
    ]
    lines += explain(
        f"{PUSH_EVENTS} events per path after {PUSH_WARM} warm-up ones, one at a time, each a",
        "post_event JSON-RPC POST from another agent; the clock starts just before the write is",
        "sent and stops when the waiter has the event. wait_for_events: the waiting call's",
        f"response has arrived (the wait is re-armed {push.PUSH_GAP * 1000:.0f} ms before each",
        "write, on its own keep-alive connection). SSE: one GET .../events/stream held open",
        "throughout, the `id:`/`data:` frame parsed. webhook: a local receiver (127.0.0.1) has",
        "read the delivery POST and checked its HMAC signature; the server runs with",
        "CELERY_TASK_ALWAYS_EAGER=true (deliveries run in the web process, no Celery worker)",
        "and WEBHOOK_ALLOW_PRIVATE_NETWORKS=true. post_event = the write's own round trip in the",
        "same runs, for reference.",
    )
    if fig is None:
        return [*lines, "   (not run)", ""]
    rows = [["path", "write -> wake-up", "post_event itself", "delivered", "problems"]]
    for key, label in (("wait", "wait_for_events"), ("sse", "SSE stream"), ("hook", "webhook")):
        p: push.PushLatency | None = fig.push.get(key)
        if p is None:
            rows.append([label, "-", "-", "-", "not run"])
            continue
        if not p.available:
            rows.append([label, "-", "-", "-", p.note])
            continue
        problems = [
            f"{n} {what}"
            for n, what in (
                (p.missed, "missed"),
                (p.duplicates, "duplicate"),
                (p.unexpected, "unexpected"),
                (p.early, "returned early"),
                (p.bad_signatures, "bad signature"),
            )
            if n
        ]
        if p.note:
            problems.append(p.note)
        rows.append(
            [
                label,
                stat(p.seconds).cell(),
                stat(p.write_seconds).cell(),
                f"{len(p.seconds)}/{p.sent}",
                ", ".join(problems) or "none",
            ]
        )
    lines.append(table(rows))
    hook = fig.push.get("hook")
    if hook is not None and not hook.available:
        lines.append(f"   webhook: {hook.note}")
    counts = ", ".join(f"{n:,}" for n in PUSH_WAITERS)
    lines.append("")
    lines.append(
        f"   Many waiters: {counts} concurrent wait_for_events (distinct agents, one"
        " connection each) on one room"
    )
    lines += explain(
        "of one server process; once every wait is in (the server's CPU has gone quiet with",
        "none answered), one post_event. last = from just before that write to the moment the",
        "last waiter's response has arrived (the figure asked for); first / median likewise.",
        "woken = waiters whose response carried the written event (must be all).",
    )
    rows = [["waiters", "round", "armed in", "first", "median", "last", "woken", "post_event"]]
    summary = []
    for n in PUSH_WAITERS:
        many: push.ManyWaiters | None = fig.push.get(f"many:{n}")
        if many is None or not many.rounds:
            rows.append([f"{n:,}", "-", "(not run)", "", "", "", "", ""])
            continue
        for k, r in enumerate(many.rounds):
            rows.append(
                [
                    f"{n:,}",
                    str(k + 1),
                    f"{r['arm_seconds']:.2f} s",
                    f"{r['first'] * 1000:.1f} ms",
                    f"{r['median'] * 1000:.1f} ms",
                    f"{r['last'] * 1000:.1f} ms",
                    f"{r['woken']}/{many.waiters}",
                    f"{r['write_seconds'] * 1000:.1f} ms",
                ]
            )
        lasts = sorted(r["last"] for r in many.rounds)
        summary.append(
            f"{n:,}: {lasts[len(lasts) // 2] * 1000:.0f} ms (worst {lasts[-1] * 1000:.0f} ms)"
        )
    lines.append(table(rows))
    lines.append("   Last waiter woken, median of the rounds: " + "; ".join(summary) + ".")
    return [*lines, ""]


def report(
    figs: list[ModeFigures],
    fails: Failures,
    wrk_used: bool,
    denial_figs: denials.DenialFigures | None = None,
    glob_figs: globs.GlobFigures | None = None,
) -> str:
    lines = ["", "=" * 100, "Roomservice bench", environment_line(), "=" * 100, ""]
    if "floor" in ONLY:
        lines += _floor_section(figs)
    if "latency" in ONLY:
        lines += _latency_section(figs)
    if "throughput" in ONLY:
        lines += _throughput_section(figs, wrk_used)
    if "contention" in ONLY:
        lines += _contention_section(figs)
    for f in figs:
        if f.claims is not None:
            lines += claims.section(f.claims)
        if f.messages is not None:
            lines += messages.section(f.messages)
        if f.hooks is not None:
            lines += hooks_bench.section(f.hooks)
        if f.archive is not None:
            lines += archives.section(f.archive)
    if "events" in ONLY:
        lines += _events_section(figs)
    if "push" in ONLY:
        lines += _push_section(figs)
    if denial_figs is not None:
        lines += denials.section(denial_figs)
    if glob_figs is not None:
        lines += globs.section(glob_figs)
    for f in figs:
        if f.cost is not None:
            lines += cost.section(f.cost)
        if f.profiles is not None:
            lines += profiles_bench.section(f.profiles)
        if f.sizes is not None:
            lines += sizes.section(f.sizes)
        if f.search is not None:
            lines += search_bench.section(f.search)
        if f.paper is not None:
            lines += paper.section(f.paper)
    for f in figs:
        if f.growth is not None:
            lines += tenancy.growth_section(f.growth)
        if f.storm is not None:
            lines += tenancy.storm_section(f.storm)
    for f in figs:
        if f.log_problems:
            lines.append(f"Server log ({f.dispatch}): {len(f.log_problems)} error line(s), e.g.:")
            lines += ["   " + line[:300] for line in f.log_problems[:5]]
            lines.append("")
    if fails:
        lines.append("CORRECTNESS: FAILED")
        failed_checks = [(check, n) for check, n in fails.counts.items() if n]
        for k, (check, n) in enumerate(failed_checks):
            lines.append(f" - {check}: {n}")
            # Samples (request and response) for the first few checks; the rest by count.
            for sample in fails.samples.get(check, [])[: 2 if k < 6 else 0]:
                lines.append("     " + sample.replace("\n", "\n     "))
    else:
        checked = ["no failed calls"]
        if "contention" in ONLY:
            checked.append("no lost updates")
        if "events" in ONLY:
            checked.append("every event exactly once")
        if "push" in ONLY:
            checked.append("every push delivered once, every waiter woken")
        lines.append(f"CORRECTNESS: all checks passed ({', '.join(checked)}).")
    lines.append("")
    return "\n".join(lines)


# --- Main ----------------------------------------------------------------------------------------


def main() -> int:
    try:
        import uvloop

        loop_factory: Any = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    runner = asyncio.Runner(loop_factory=loop_factory)
    default_dispatch = "thin"  # the one /mcp dispatch (the SDK's was measured and left)
    dispatches = [
        d.strip()
        for d in os.environ.get("BENCH_DISPATCH", default_dispatch).split(",")
        if d.strip()
    ]
    keys = server.Keys.fresh()
    key_prefix = f"rsbench-{secrets.token_hex(4)}"
    var_root = Path(tempfile.mkdtemp(prefix="rs-bench-"))
    fails = Failures()
    figs: list[ModeFigures] = []
    wrk_used = loads.wrk_path() is not None
    if not wrk_used and "throughput" in ONLY:
        print(
            "wrk not found: throughput falls back to the Python load generator (client-bound).",
            flush=True,
        )
    t0 = time.perf_counter()
    status = 0
    denial_figs: denials.DenialFigures | None = None
    glob_figs: globs.GlobFigures | None = None
    try:
        if set(ONLY) - {"denials", "globs", "redaction", "imports", "idle", "wakes"}:
            bench_all(dispatches, var_root, keys, key_prefix, fails, runner.run, figs)
        if "denials" in ONLY:
            with step("  [thin, claiming off] room denials"):
                denial_figs = runner.run(denials.measure(var_root, keys, key_prefix, fails))
        if "globs" in ONLY:
            with step("  [thin] hostile globs"):
                glob_figs = runner.run(globs.measure(var_root, keys, key_prefix, fails))
        if "redaction" in ONLY:
            with step("  redaction (corpus, worst-case throughput)"):
                print("", *redaction_bench.section(redaction_bench.measure(fails)), sep="\n")
        if "imports" in ONLY:
            with step("  [thin, a server of its own] room imports (RSS, another tenant's p99)"):
                lines = imports_bench.run_section(var_root, keys, key_prefix, fails)
                print("", *lines, sep="\n")
        if "idle" in ONLY:
            with step(f"  [thin, a server of its own] {idle.AGENTS} idle agents"):
                idle_figs = runner.run(idle.measure_own(var_root, keys, key_prefix))
                print("", *idle.section(idle_figs), sep="\n")
                for problem in idle_figs.problems:
                    fails.add("idle", problem)
                fails.add("idle", "; ".join(idle_figs.problems), n=len(idle_figs.problems))
        if "wakes" in ONLY:
            label = f"{wakes.AGENTS} agents in {wakes.ROOMS} rooms, one Redis then a cluster"
            with step(f"  [thin, servers of their own, two web processes] {label}"):
                wake_figs = runner.run(wakes.measure(var_root, keys, key_prefix, fails))
                print("", *wakes.section(wake_figs), sep="\n")
    except RuntimeError as exc:
        print(f"\nThe bench could not run: {exc}", file=sys.stderr, flush=True)
        status = 2
    except Exception:  # a server answer the bench did not expect, a phase that timed out, ...
        print("\nThe bench stopped on an unexpected error:", file=sys.stderr, flush=True)
        traceback.print_exc()
        status = 2
    except KeyboardInterrupt:
        print("\nInterrupted.", file=sys.stderr, flush=True)
        status = 130
    finally:
        runner.close()
        _cleanup(var_root, key_prefix, keep=bool(fails) or status != 0)
    if figs or denial_figs or glob_figs:
        print(report(figs, fails, wrk_used, denial_figs, glob_figs), flush=True)
    print(f"Total bench time: {time.perf_counter() - t0:.0f} s", flush=True)
    if status:
        return status
    return 1 if fails else 0


def _cleanup(var_root: Path, key_prefix: str, *, keep: bool) -> None:
    redis_url = os.environ.get("REDIS_URL")
    if redis_url:  # a shared Redis: remove exactly the keys this run wrote
        try:
            import redis

            r = redis.Redis.from_url(redis_url)
            for key in r.scan_iter(match=f"{key_prefix}:*", count=1000):
                r.delete(key)
            r.close()
        except Exception as exc:
            print(f"(could not remove the bench's Redis keys {key_prefix}:*: {exc})", flush=True)
    if keep or os.environ.get("BENCH_KEEP_VAR"):
        print(f"(server logs and data kept in {var_root})", flush=True)
    else:
        shutil.rmtree(var_root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
