"""`make bench` section "wakes": waiting agents at scale woken by a steady stream of writes
(issue 34, point 2), on one Redis and on a Redis Cluster, each with two web processes.

The issue's figure: 10,000 agents waiting across 1,000 rooms on two web processes, each
room written once a second, woken with p99 at most 100 ms. The bench measures it and
prints what it measured; it fails on no time target, only on a wake that never came (none
arrived for QUIET_SECONDS while it was due; one still arriving GRACE_SECONDS after the
last write is late, not lost), an event delivered twice or a failed call. Past the
machine's capacity the figures say so: latencies of seconds, writes sent late (a room's
writer sends one write at a time), answers that carry several events.

Each run has a server of its own (WEB_CONCURRENCY=2: two uvicorn processes behind one
port). BENCH_WAKE_AGENTS agents (10,000) are spread evenly over BENCH_WAKE_ROOMS rooms
(1,000); each has read its room once (get_unread_events) so its cursor is current, as a
re-arming agent's is. Every agent keeps one wait_for_events (timeoutMs 30,000) armed on a
keep-alive connection of its own and arms the next one as soon as it is answered, as
agents do. Once both processes hold every wait (their /metrics gauge, summed; or once
that count stops growing: the first waits time out while the last are sent), each room
is written once a second (post_event), the rooms' writes spread evenly across the second,
for WARM_SECONDS and then BENCH_WAKE_SECONDS (10) measured. For every event an agent
receives: write sent -> answer received. Printed: p50 / p99 / max, events delivered
against expected (each write to a room, to each of its agents), the web processes' CPU
per woken waiter (both together), the Redis CPU (INFO cpu; on the cluster, every node),
and this client's own CPU (the bench shares the machine's cores with the server).

Beside them, for comparison: one write waking 50 waiters in one room on one web process,
the p99 over 20 rounds (bench/push.py many_waiters; the issue's target there is 20 ms).

The cluster is the test suite's (tests/redis_cluster.py: three primaries, a replica each,
on loopback); when it cannot start, its run is skipped and the reason printed.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from bench import floor, idle, push, server, wire
from bench.stats import env_int, percentile

AGENTS = max(1, env_int("BENCH_WAKE_AGENTS", 10_000))
ROOMS = max(1, env_int("BENCH_WAKE_ROOMS", 1_000))
WINDOW_SECONDS = max(1, env_int("BENCH_WAKE_SECONDS", 10))
WARM_SECONDS = 1  # writes before the measured window: every process's paths warm
# After the last write the bench waits for the wakes still due while they keep arriving: a
# wake that has not come once nothing more arrived for QUIET_SECONDS is lost; one still due
# after GRACE_SECONDS is late (a server past its capacity answers each agent less often,
# with more events an answer) and counted as neither.
QUIET_SECONDS = 5.0
GRACE_SECONDS = 60.0
# After the window, the longest the writes still under way (a room's writer sends one at a
# time) are waited for; those unanswered by then count in no figure but their own.
WRITE_TAIL_SECONDS = 15.0
WAIT_MS = 30_000  # each wait's timeoutMs (the MCP door's most)
ARM_TIMEOUT = 180.0  # for every wait to be held
# ... or for the count held to stop growing this long: with 30 s waits, the first ones time
# out and are armed again while the last are sent, so some are always on their way back.
ARM_QUIET_SECONDS = 5.0
SETUP_CONNECTIONS = 32
LATE_SECONDS = 0.1  # a write sent this long after its turn counts as late
ONE_ROOM_WAITERS = 50
ONE_ROOM_ROUNDS = 20
# Each run's server: two web processes, no Celery worker or relay beside them (nothing
# here delivers webhooks), room for every wait and room.
SERVER_ENV = {
    "WEB_CONCURRENCY": "2",
    "RUN_WORKER": "0",
    "RUN_RELAY": "0",
    "WAITERS_PER_TEAM": "50000",
    "PROCESS_WAITERS_MAX": "50000",
    "TEAM_ROOMS_MAX": "50000",
}


@dataclass
class Write:
    room: int
    sent: float  # perf_counter just before the request went out (its turn until then)
    measured: bool
    answered: bool = False  # post_event answered ok: it landed, and woke its room


@dataclass
class WakeRun:
    """One run: an agent count, a room count, a Redis."""

    redis: str
    agents: int = 0
    rooms: int = 0
    skipped: str = ""
    arm_seconds: float = 0.0
    held: int = 0  # waits the web processes held as the writes began
    writes: list[Write] = field(default_factory=list)
    writes_late: int = 0
    writes_failed: int = 0
    expected: int = 0  # (agent, measured write answered) pairs
    delivered: int = 0  # of those, received
    deliveries: list[tuple[int, float]] = field(default_factory=list)  # (write, latency s)
    writes_unanswered: int = 0  # measured writes not answered WRITE_TAIL_SECONDS after
    still_due: int = 0  # of those, still arriving GRACE_SECONDS after the last write
    latencies: list[float] = field(default_factory=list)  # seconds, measured writes only
    write_seconds: list[float] = field(default_factory=list)  # post_event's round trips
    answers: int = 0  # wait answers with events, in the CPU window
    events_in_window: int = 0  # events those answers carried
    batched: int = 0  # answers that carried more than one event
    duplicates: int = 0
    timed_out: int = 0
    errors: int = 0
    error_sample: str = ""
    web_cpu_s: float = 0.0
    web_cpu_split: list[float] = field(default_factory=list)  # each web process's
    redis_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    window_s: float = 0.0
    seconds: float = 0.0  # the whole run, setup and teardown included
    problems: list[str] = field(default_factory=list)


@dataclass
class OneRoom:
    waiters: int = ONE_ROOM_WAITERS
    rounds: int = 0
    latencies: list[float] = field(default_factory=list)
    failed: int = 0


@dataclass
class WakeFigures:
    runs: list[WakeRun] = field(default_factory=list)
    one_room: OneRoom | None = None
    seconds: float = 0.0


def _note(run: WakeRun, text: str, since: float) -> None:
    """Where a long run is (a run at full scale on a small machine takes minutes)."""
    print(f"\n    {run.redis}: {text} ({time.perf_counter() - since:.1f} s)", end="", flush=True)


def room_of(agent: int, agents: int, rooms: int) -> int:
    """Agents spread evenly over the rooms: agent i waits in room i * rooms // agents."""
    return agent * rooms // agents


def _client_cpu() -> float:
    t = os.times()
    return t.user + t.system


def _web_cpu(pid: int) -> list[float]:
    """CPU seconds of each web process of the server `pid` (its children running
    uvicorn's workers: Python processes that are not multiprocessing's resource tracker)."""
    found = []
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    for child in children:
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(floor.cpu_seconds(int(child)))
        except OSError:  # gone since the list was read
            continue
    return found


def _redis_cpu(urls: list[str]) -> float:
    """used_cpu_user + used_cpu_sys summed over these Redis servers (INFO cpu)."""
    total = 0.0
    for url in urls:
        r = redis.Redis.from_url(url.replace("redis+socket://", "unix://"), socket_timeout=5)
        try:
            info = r.info("cpu")
        finally:
            r.close()
        total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


class _WaitConnection(wire.Connection):
    """A connection whose opening counts as its last use, so the first request does not
    open it again (wire.Connection reopens one idle for IDLE_REOPEN_SECONDS)."""

    async def open(self) -> None:
        await super().open()
        self._used = time.monotonic()


class Agents:
    """Every agent's wait, armed again as soon as it is answered; what the answers held."""

    def __init__(self, run: WakeRun, ep: wire.McpEndpoint, rooms: list[str]) -> None:
        self.run = run
        self.ep = ep
        self.rooms = rooms
        self.conns: list[wire.Connection] = [
            _WaitConnection(ep.host, ep.port, timeout=WAIT_MS / 1000 + 30)
            for _ in range(run.agents)
        ]
        self.received: list[set[int]] = [set() for _ in range(run.agents)]
        self.counting = False  # answers and events are counted for the CPU window
        self.tasks: list[asyncio.Task[None]] = []

    def name(self, i: int) -> str:
        return f"a{i:05d}"

    async def arm(self) -> None:
        """Open the connections a hundred at a time (no SYN burst past the server's
        backlog), each batch's waits sent as soon as it is open."""
        loop = asyncio.get_running_loop()
        for k in range(0, len(self.conns), 100):
            batch = range(k, min(k + 100, len(self.conns)))
            await asyncio.gather(*(self.conns[i].open() for i in batch))
            self.tasks += [loop.create_task(self._wait_again(i)) for i in batch]

    async def _wait_again(self, i: int) -> None:
        run = self.run
        room = self.rooms[room_of(i, run.agents, run.rooms)]
        raw = self.ep.raw_call(
            "wait_for_events", {"roomId": room, "agentId": self.name(i), "timeoutMs": WAIT_MS}
        )
        conn, seen = self.conns[i], self.received[i]
        while True:
            try:
                resp = await conn.request(raw)
            except wire.HttpError as exc:
                self._failed(f"wait_for_events: {exc}")
                await asyncio.sleep(0.5)
                continue
            answered = time.perf_counter()
            ok, value, problem = wire.parse_call(resp)
            if not ok:
                self._failed(f"wait_for_events: {problem} {resp.body[:300]!r}")
                await asyncio.sleep(0.5)
                continue
            events = value.get("events") or []
            if not events:
                run.timed_out += 1
                continue
            if self.counting:
                run.answers += 1
                run.events_in_window += len(events)
            if len(events) > 1:
                run.batched += 1
            for event in events:
                n = (event.get("payload") or {}).get("i")
                if not isinstance(n, int) or n >= len(run.writes):
                    continue
                if n in seen:
                    run.duplicates += 1
                    continue
                seen.add(n)
                write = run.writes[n]
                if write.measured:
                    run.deliveries.append((n, answered - write.sent))

    def _failed(self, detail: str) -> None:
        self.run.errors += 1
        self.run.error_sample = self.run.error_sample or detail

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in self.conns), return_exceptions=True)


async def _calls(ep: wire.McpEndpoint, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Run the calls over SETUP_CONNECTIONS connections; the failures, described."""
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
    for call in calls:
        queue.put_nowait(call)
    failed: list[str] = []

    async def drain() -> None:
        conn = ep.connection()
        try:
            while not queue.empty():
                name, args = queue.get_nowait()
                res = await wire.call_tool(conn, ep, name, args)
                if not res.ok:
                    failed.append(res.describe())
        finally:
            await conn.close()

    await asyncio.gather(*(drain() for _ in range(SETUP_CONNECTIONS)))
    return failed


class RoomWriter:
    """A room's writer: one agent on one keep-alive connection, one post_event at a time (a
    write whose turn comes while the last is unanswered goes out after it, late)."""

    def __init__(self, ep: wire.McpEndpoint, room: int, room_id: str) -> None:
        self.ep, self.room, self.room_id = ep, room, room_id
        self.conn = _WaitConnection(ep.host, ep.port)
        self.lock = asyncio.Lock()

    async def write(self, run: WakeRun, n: int, due: float) -> None:
        args = {"roomId": self.room_id, "type": "bench_wake", "from": "wake-writer"}
        raw = self.ep.raw_call("post_event", {**args, "payload": {"i": n}})
        async with self.lock:
            sent = time.perf_counter()
            run.writes[n].sent = sent
            run.writes_late += run.writes[n].measured and sent - due > LATE_SECONDS
            try:
                res = await self.conn.request(raw)
            except wire.HttpError as exc:
                run.writes_failed += 1
                run.error_sample = run.error_sample or f"post_event: {exc}"
                return
        if run.writes[n].measured:
            run.write_seconds.append(time.perf_counter() - sent)
        ok, _, problem = wire.parse_call(res)
        run.writes[n].answered = ok
        if not ok:
            run.writes_failed += 1
            run.error_sample = run.error_sample or f"post_event: {problem} {res.body[:300]!r}"


async def _write_rooms(
    ep: wire.McpEndpoint,
    run: WakeRun,
    rooms: list[str],
    on_window: Callable[[bool], None],
) -> None:
    """Each room once a second, the rooms' turns spread evenly across the second, for
    WARM_SECONDS then WINDOW_SECONDS; on_window(True) as the measured window opens,
    on_window(False) as it closes."""
    writers = [RoomWriter(ep, r, room) for r, room in enumerate(rooms)]
    for k in range(0, len(writers), 100):
        await asyncio.gather(*(w.conn.open() for w in writers[k : k + 100]))
    sending: set[asyncio.Task[None]] = set()
    loop = asyncio.get_running_loop()
    start = time.perf_counter() + 0.05
    try:
        for second in range(WARM_SECONDS + WINDOW_SECONDS):
            measured = second >= WARM_SECONDS
            if second == WARM_SECONDS:
                await asyncio.sleep(max(0.0, start + second - time.perf_counter()))
                on_window(True)
            for writer in writers:
                due = start + second + writer.room / len(writers)
                ahead = due - time.perf_counter()
                if ahead > 0.001:
                    await asyncio.sleep(ahead)
                n = len(run.writes)
                run.writes.append(Write(writer.room, due, measured))
                task = loop.create_task(writer.write(run, n, due))
                sending.add(task)
                task.add_done_callback(sending.discard)
        await asyncio.sleep(max(0.0, start + WARM_SECONDS + WINDOW_SECONDS - time.perf_counter()))
        on_window(False)
        if sending:
            await asyncio.wait(list(sending), timeout=WRITE_TAIL_SECONDS)
        for task in list(sending):
            task.cancel()
        await asyncio.gather(*sending, return_exceptions=True)
        run.writes_unanswered = sum(1 for w in run.writes if w.measured and not w.answered)
    finally:
        await asyncio.gather(*(w.conn.close() for w in writers), return_exceptions=True)


async def measure_run(
    srv: server.BenchServer,
    ep: wire.McpEndpoint,
    run: WakeRun,
    redis_urls: list[str],
    *,
    redis_in_tree: bool,
) -> None:
    """One run against a started server; `redis_urls` are the Redis servers whose CPU is
    priced. The web CPU is its two processes'; where /proc does not tell them apart, the
    server's whole process tree's, less the Redis's when it is in that tree
    (`redis_in_tree`: the server's embedded Redis)."""
    tag = secrets.token_hex(3)
    rooms = [f"bench-wakes-{tag}-{r:04d}" for r in range(run.rooms)]
    agents = Agents(run, ep, rooms)
    first = [
        ("post_event", {"roomId": room, "type": "bench_wake", "from": "wake-writer"})
        for room in rooms
    ]
    t0 = time.perf_counter()
    failed = await _calls(ep, first)
    _note(run, f"{run.rooms} rooms made (their first write)", t0)
    reads = [
        (
            "get_unread_events",
            {"roomId": rooms[room_of(i, run.agents, run.rooms)], "agentId": agents.name(i)},
        )
        for i in range(run.agents)
    ]
    failed += await _calls(ep, reads)
    _note(run, f"and {run.agents} cursors read (each agent's get_unread_events)", t0)
    if failed:
        run.problems.append(f"{len(failed)} setup calls failed; the first: {failed[0]}")
        return
    per_room = [0] * run.rooms
    for i in range(run.agents):
        per_room[room_of(i, run.agents, run.rooms)] += 1
    try:
        t_arm = time.perf_counter()
        await agents.arm()
        run.held = await _held(srv, run.agents)
        run.arm_seconds = time.perf_counter() - t_arm
        _note(run, f"{run.held} of {run.agents} waits held", t_arm)
        if run.held < run.agents * 0.9:
            run.problems.append(f"only {run.held} of {run.agents} waits held as the writes began")
        pid = srv.process.pid
        marks: dict[bool, tuple[float, float, float, float]] = {}
        split: dict[bool, list[float]] = {}

        def on_window(opening: bool) -> None:
            agents.counting = opening
            tree = push._tree_cpu_seconds(pid) or 0.0
            marks[opening] = (time.perf_counter(), tree, _redis_cpu(redis_urls), _client_cpu())
            split[opening] = _web_cpu(pid)

        await _write_rooms(ep, run, rooms, on_window)
        (t0, tree0, redis0, client0), (t1, tree1, redis1, client1) = marks[True], marks[False]
        if len(split[True]) == len(split[False]):
            run.web_cpu_split = [b - a for a, b in zip(split[True], split[False], strict=True)]
        run.window_s = t1 - t0
        run.redis_cpu_s = redis1 - redis0
        run.web_cpu_s = sum(run.web_cpu_split) or (
            (tree1 - tree0) - (run.redis_cpu_s if redis_in_tree else 0.0)
        )
        run.client_cpu_s = client1 - client0
        run.expected = sum(per_room[w.room] for w in run.writes if w.measured and w.answered)
        _note(run, f"{len(run.writes)} writes sent, waiting for their wakes", t_arm)
        await _drain(run)
        _note(run, f"{run.delivered} of {run.expected} wakes", t_arm)
    finally:
        await agents.close()
    _count(run)
    lost = run.expected - run.delivered - run.still_due
    if lost:
        run.problems.append(
            f"{lost} of {run.expected} wakes never came (nothing more arrived for "
            f"{QUIET_SECONDS:.0f} s)"
        )
    if run.duplicates:
        run.problems.append(f"{run.duplicates} events delivered twice to the same agent")
    if run.errors or run.writes_failed:
        run.problems.append(
            f"{run.errors} failed waits, {run.writes_failed} failed writes; the first: "
            f"{run.error_sample}"
        )


async def _held(srv: server.BenchServer, agents: int) -> int:
    """The waits both web processes hold (their /metrics gauge, summed) once it reaches
    `agents`, stops growing for ARM_QUIET_SECONDS, or ARM_TIMEOUT passed."""
    deadline = time.monotonic() + ARM_TIMEOUT
    best, best_at = 0, time.monotonic()
    while True:
        held = await asyncio.to_thread(idle.open_waiters, srv)
        now = time.monotonic()
        if held > best:
            best, best_at = held, now
        if held >= agents or now - best_at > ARM_QUIET_SECONDS or now > deadline:
            return held
        await asyncio.sleep(0.2)


def _count(run: WakeRun) -> None:
    """run.delivered and run.latencies: the wakes of the measured writes that were
    answered."""
    kept = [seconds for n, seconds in run.deliveries if run.writes[n].answered]
    run.delivered, run.latencies = len(kept), kept


async def _drain(run: WakeRun) -> None:
    """Wait for the wakes still due while they keep arriving (QUIET_SECONDS, GRACE_SECONDS)."""
    now = time.perf_counter()
    deadline, last_arrival, seen = now + GRACE_SECONDS, now, len(run.deliveries)
    _count(run)
    while run.delivered < run.expected:
        await asyncio.sleep(0.2)
        now = time.perf_counter()
        if len(run.deliveries) != seen:
            seen, last_arrival = len(run.deliveries), now
            _count(run)
        elif now - last_arrival > QUIET_SECONDS:
            return
        if now > deadline:
            run.still_due = run.expected - run.delivered
            return


async def _one_run(
    label: str,
    var_root: Path,
    keys: server.Keys,
    key_prefix: str,
    env: dict[str, str],
    redis_urls: list[str] | None,
) -> WakeRun:
    """A server of its own (two web processes) and one run against it; `redis_urls` None:
    the server's own Redis."""
    run = WakeRun(redis=label, agents=AGENTS, rooms=min(ROOMS, AGENTS))
    t0 = time.perf_counter()
    srv = server.start(
        "thin",
        var_root,
        keys,
        key_prefix,
        name=f"wakes-{len(env)}-{secrets.token_hex(2)}",
        extra_env={**SERVER_ENV, **env},
    )
    try:
        ep = wire.McpEndpoint(srv.host, srv.port, keys.secret)
        own = redis_urls is None and srv.embedded_redis
        await measure_run(srv, ep, run, redis_urls or [srv.redis_url], redis_in_tree=own)
    finally:
        srv.stop()
    run.seconds = time.perf_counter() - t0
    return run


async def _one_room(
    var_root: Path, keys: server.Keys, key_prefix: str, fails: push.FailureSink
) -> OneRoom:
    """ONE_ROOM_WAITERS waiters in one room on one web process, one write wakes them,
    ONE_ROOM_ROUNDS times (push.many_waiters)."""
    out = OneRoom()
    srv = server.start(
        "thin", var_root, keys, key_prefix, name="wakes-one-room", extra_env={"RUN_WORKER": "0"}
    )
    try:
        ep = wire.McpEndpoint(srv.host, srv.port, keys.secret)
        room = f"bench-wakes-one-{secrets.token_hex(3)}"
        many = await push.many_waiters(
            ep, room, ONE_ROOM_WAITERS, ONE_ROOM_ROUNDS, srv.process.pid, fails
        )
    finally:
        srv.stop()
    out.rounds = len(many.rounds)
    for r in many.rounds:
        out.latencies += r["seconds"]
        out.failed += r["failed"]
    return out


def _cluster_start() -> tuple[Any, str]:
    """(the test suite's local cluster, started; "") or (None, why it could not start)."""
    try:
        from tests.redis_cluster import LocalCluster
    except ImportError as exc:
        return None, f"the cluster harness (tests/redis_cluster.py) cannot be imported: {exc}"
    cluster = LocalCluster()
    try:
        cluster.start()
    except (RuntimeError, OSError, redis.RedisError) as exc:
        cluster.stop()
        return None, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # redis-cli --cluster create failing, for one
        cluster.stop()
        return None, f"{type(exc).__name__}: {exc}"
    return cluster, ""


async def measure(
    var_root: Path, keys: server.Keys, key_prefix: str, fails: push.FailureSink
) -> WakeFigures:
    figs = WakeFigures()
    t0 = time.perf_counter()
    figs.runs.append(await _one_run("one Redis", var_root, keys, key_prefix, {}, None))
    cluster, why = await asyncio.to_thread(_cluster_start)
    label = "Redis Cluster (3 primaries, a replica each)"
    if cluster is None:
        figs.runs.append(WakeRun(redis=label, skipped=why))
    else:
        try:
            env = {"REDIS_URL": cluster.url, "REDIS_CLUSTER": "true"}
            urls = [f"redis://127.0.0.1:{p}/0" for p in cluster.alive_ports()]
            figs.runs.append(await _one_run(label, var_root, keys, key_prefix, env, urls))
        finally:
            await asyncio.to_thread(cluster.stop)
    figs.one_room = await _one_room(var_root, keys, key_prefix, fails)
    figs.seconds = time.perf_counter() - t0
    for run in figs.runs:
        for problem in run.problems:
            fails.add(f"wakes ({run.redis})", problem)
    return figs


def section(figs: WakeFigures) -> list[str]:
    lines = [
        "",
        "## Wakes at scale [wakes] (two web processes, each room written once a second, "
        f"{WINDOW_SECONDS} s measured after {WARM_SECONDS} s warm)",
    ]
    for run in figs.runs:
        if run.skipped:
            lines.append(f"  {run.redis}: skipped ({run.skipped})")
            continue
        measured = [w for w in run.writes if w.measured]
        woken = max(run.events_in_window, 1)
        lines += [
            f"  {run.redis}: {run.agents:,} agents in {run.rooms:,} rooms "
            f"({run.agents / max(run.rooms, 1):.0f} a room); {run.held:,} waits held "
            f"{run.arm_seconds:.1f} s after the first was sent, as the writes began",
            "    wake latency (write sent -> answer received): p50 "
            f"{percentile(run.latencies, 50) * 1000:.1f} ms, p99 "
            f"{percentile(run.latencies, 99) * 1000:.1f} ms, max "
            f"{percentile(run.latencies, 100) * 1000:.1f} ms; the write's own round trip p50 "
            f"{percentile(run.write_seconds, 50) * 1000:.1f} ms, p99 "
            f"{percentile(run.write_seconds, 99) * 1000:.1f} ms",
            f"    wakes: {run.delivered:,} of {run.expected:,} expected (of {len(measured):,} "
            f"writes due in the window, {run.writes_late} sent over {LATE_SECONDS * 1000:.0f} ms "
            f"late and {run.writes_unanswered} unanswered {WRITE_TAIL_SECONDS:.0f} s after it, "
            "which count in no wake); "
            f"{run.batched} answers carried more than one event, {run.timed_out} timed out",
            f"    CPU over the window: web {run.web_cpu_s * 1000 / woken:.3f} ms per woken "
            f"waiter ({run.web_cpu_s / run.window_s:.2f} cores, both processes: "
            + " + ".join(f"{c / run.window_s:.2f}" for c in run.web_cpu_split)
            + "), Redis "
            f"{run.redis_cpu_s / run.window_s:.2f} cores, this client "
            f"{run.client_cpu_s / run.window_s:.2f} cores (the machine has {os.cpu_count()})",
            f"    at that CPU, 10,000 agents each woken once a second take "
            f"{10_000 * run.web_cpu_s / woken:.1f} cores of web processes; "
            f"run time {run.seconds:.0f} s (setup and teardown included)",
        ]
        if run.still_due:
            lines.append(
                f"    {run.still_due:,} wakes still arriving {GRACE_SECONDS:.0f} s after the last "
                "write (late, not lost: the server was past its capacity)"
            )
        lines += [f"    PROBLEM: {p}" for p in run.problems]
    one = figs.one_room
    if one is not None:
        lines.append(
            f"  for comparison, one write waking {one.waiters} waiters in one room on one web "
            f"process, {one.rounds} rounds: p50 {percentile(one.latencies, 50) * 1000:.1f} ms, "
            f"p99 {percentile(one.latencies, 99) * 1000:.1f} ms, max "
            f"{percentile(one.latencies, 100) * 1000:.1f} ms"
            + (f" ({one.failed} failed)" if one.failed else "")
        )
    lines.append(f"  section run time {figs.seconds:.0f} s")
    return lines
