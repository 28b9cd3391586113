"""`make bench` section "idle": what a waiting agent costs, and what one write waking many
of them costs, on servers of their own (one web process each, the embedded Redis).

Every agent that follows the setup keeps a wait armed, so at scale most of the work is idle
agents waiting. BENCH_IDLE_AGENTS agents (default 1,000) wait in one room, each on its own
connection, with one key:

- arming (MCP door): the web process's CPU, and the Redis commands with the scripts' inner
  calls (MONITOR), from the first wait sent to the last one registered, per wait; the web
  process's resident memory grown per waiting call; then, while they all wait, Redis
  commands and web CPU a second; then one write wakes them all, with MONITOR off (it would
  share the machine's cores with the answers): web CPU per woken waiter, and when the last
  answer came;
- a whole wait that nothing wakes, per door: the MCP door (a tool call: at most 30 s), the
  REST door's long wait (the guard's hooks: keep-alive newlines while it waits, and its
  agent marked present again each half of PRESENCE_ONLINE_SECONDS), and an SSE stream's
  quiet keep-alive period. The servers keep alive every second (SSE_KEEPALIVE_SECONDS=1),
  and the REST waits' marks its agents online for 2 s, so the bench is short; the hour's
  figures count the defaults' 15 s and 120 s.

The hour of one idle agent follows, for each way the Connect page's setups wait: the guard's
claude-wait (one REST wait per 540 s and a keep-alive every 15 s), codex-wait and
cursor-wait (one per 120 s), an MCP client re-arming wait_for_events at the tool's cap (one
per 30 s), an SSE stream (a connection per SSE_MAX_LIFETIME_SECONDS). Bytes are HTTP/1.1
both ways, without TLS or TCP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from bench import floor, imports, server, wire

AGENTS = int(os.environ.get("BENCH_IDLE_AGENTS", "1000"))
SETTLE_SECONDS = 0.5
WAIT_WINDOW_SECONDS = 3.0
KEEPALIVE_SECONDS = 1  # the bench server's; the hour is priced at the default's
DEFAULT_KEEPALIVE_SECONDS = 15
DEFAULT_RECHECK_SECONDS = 300  # CREDENTIAL_RECHECK_SECONDS' default
DEFAULT_ONLINE_SECONDS = 120  # PRESENCE_ONLINE_SECONDS' default
# The REST waits' server: an agent is online for 2 s, so a wait of a few seconds is marked
# present again each second (rooms.services.presence.presence_waiting).
SHORT_ONLINE_SECONDS = 2
TOOL_WAIT_SECONDS = 30  # a tool call's most (rooms.refs.WAIT_MAX_MS)
GUARD_WAIT_SECONDS = 540  # claude-wait's lifetime (docs/hooks.md)
TURN_WAIT_SECONDS = 120  # codex-wait's and cursor-wait's
SSE_LIFETIME_SECONDS = 900  # SSE_MAX_LIFETIME_SECONDS' default


@dataclass
class Cycle:
    """One wait nothing woke, from request to answer, per wait."""

    cpu_ms: float = 0.0
    commands: float = 0.0
    bytes: float = 0.0


@dataclass
class IdleFigures:
    agents: int = 0
    arm_cpu_ms: float = 0.0
    arm_commands: float = 0.0
    arm_bytes_held: float = 0.0
    waiting_commands_per_s: float = 0.0
    waiting_cpu_ms_per_s: float = 0.0
    wake_cpu_ms: float = 0.0  # per woken waiter
    wake_last_ms: float = 0.0
    woken: int = 0
    mcp: Cycle = field(default_factory=Cycle)
    rest: Cycle = field(default_factory=Cycle)
    tick: Cycle = field(default_factory=Cycle)  # one keep-alive (a stream's or a REST wait's)
    renewal: Cycle = field(default_factory=Cycle)  # a long wait's agent marked present again
    sse_open: Cycle = field(default_factory=Cycle)
    problems: list[str] = field(default_factory=list)

    def hour(self, opening: Cycle, seconds: float, *, ticks: bool, renewals: bool) -> Cycle:
        """An hour of waits (or streams) of `seconds` each: their openings, keep-alives
        every DEFAULT_KEEPALIVE_SECONDS, and the agent marked present again each half of
        PRESENCE_ONLINE_SECONDS' default while it waits."""
        parts = [(3600 / seconds, opening)]
        if ticks:
            parts.append((3600 / DEFAULT_KEEPALIVE_SECONDS, self.tick))
        if renewals:
            again = 3600 / (DEFAULT_ONLINE_SECONDS / 2) - 3600 / seconds
            parts.append((max(0.0, again), self.renewal))
        return Cycle(
            cpu_ms=sum(n * c.cpu_ms for n, c in parts),
            commands=sum(n * c.commands for n, c in parts),
            bytes=sum(n * c.bytes for n, c in parts),
        )

    def hours(self) -> dict[str, Cycle]:
        """An hour of one agent waiting, for each way the Connect page's setups wait."""
        return {
            f"Claude Code (the guard's claude-wait, REST, {GUARD_WAIT_SECONDS} s a wait)": (
                self.hour(self.rest, GUARD_WAIT_SECONDS, ticks=True, renewals=True)
            ),
            f"Codex, Cursor (codex-wait, cursor-wait, REST, {TURN_WAIT_SECONDS} s a wait)": (
                self.hour(self.rest, TURN_WAIT_SECONDS, ticks=True, renewals=True)
            ),
            f"VS Code or any MCP client waiting in a loop ({TOOL_WAIT_SECONDS} s a wait)": (
                self.hour(self.mcp, TOOL_WAIT_SECONDS, ticks=False, renewals=False)
            ),
            f"an SSE stream (a room page; a connection every {SSE_LIFETIME_SECONDS} s)": (
                self.hour(self.sse_open, SSE_LIFETIME_SECONDS, ticks=True, renewals=False)
            ),
        }


def open_waiters(srv: server.BenchServer) -> int:
    """Waiting calls the web process holds (its /metrics gauge)."""
    try:
        with urllib.request.urlopen(f"{srv.base_url}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    except OSError:  # a metrics file being created as it is read: look again
        return 0
    found = re.search(r'^roomservice_open\{kind="waiters"\} ([0-9.e+]+)', text, re.M)
    return int(float(found.group(1))) if found else 0


class CommandCount:
    """Every command Redis runs, a script's inner calls included (MONITOR)."""

    def __init__(self, url: str) -> None:
        self.seen = 0
        self._watcher = aioredis.Redis.from_url(url, decode_responses=True, socket_timeout=None)
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def __aenter__(self) -> CommandCount:
        self._task = asyncio.get_running_loop().create_task(self._pump())
        await asyncio.wait_for(self._ready.wait(), 10)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._watcher.aclose()

    async def _pump(self) -> None:
        async with self._watcher.monitor() as monitor:
            self._ready.set()
            while True:
                try:
                    await monitor.next_command()
                except (AttributeError, ValueError, aioredis.TimeoutError):
                    continue
                self.seen += 1

    async def settled(self) -> int:
        """The count once nothing new arrived for SETTLE_SECONDS."""
        last = -1
        while last != self.seen:
            last = self.seen
            await asyncio.sleep(SETTLE_SECONDS)
        return self.seen


def _size(raw: bytes, resp: wire.Response) -> int:
    head = sum(len(k) + len(v) + 4 for k, v in resp.headers.items()) + 17
    return len(raw) + head + len(resp.body)


async def _request(srv: server.BenchServer, raw: bytes, seconds: float) -> tuple[float, int, Any]:
    """(when answered, bytes both ways, the parsed body) of one request on its own
    connection."""
    conn = wire.Connection(srv.host, srv.port, timeout=seconds + 30)
    try:
        resp = await conn.request(raw)
        return time.perf_counter(), _size(raw, resp), json.loads(resp.body)
    finally:
        await conn.close()


def _mcp_wait(ep: wire.McpEndpoint, room: str, agent: str, timeout_ms: int) -> bytes:
    args = {"roomId": room, "agentId": agent, "timeoutMs": timeout_ms}
    return ep.raw_call("wait_for_events", args)


def _rest_wait(ep: wire.McpEndpoint, room: str, agent: str, timeout_ms: int) -> bytes:
    body = json.dumps({"agentId": agent, "timeoutMs": timeout_ms}).encode()
    headers = {"Authorization": f"Bearer {ep.token}", "Content-Type": "application/json"}
    path = f"/api/v1/rooms/{room}/tools/wait_for_events"
    return wire.build_request("POST", ep.host, ep.port, path, headers=headers, body=body)


async def _measured(
    srv: server.BenchServer, count: CommandCount, run: Callable[[], Awaitable[list[int]]]
) -> tuple[float, float, float]:
    """(CPU ms, commands, bytes) of `run`, each summed over its requests."""
    pid = srv.process.pid
    start = await count.settled()
    cpu = floor.cpu_seconds(pid)
    sizes = await run()
    end = await count.settled()
    return (floor.cpu_seconds(pid) - cpu) * 1000, end - start, float(sum(sizes))


async def _cycles(
    srv: server.BenchServer,
    count: CommandCount,
    build: Callable[[str, int], bytes],
    agents: list[str],
    timeout_ms: int,
) -> Cycle:
    async def run() -> list[int]:
        done = await asyncio.gather(
            *(_request(srv, build(a, timeout_ms), timeout_ms / 1000) for a in agents)
        )
        return [size for _, size, _ in done]

    cpu, commands, size = await _measured(srv, count, run)
    n = len(agents)
    return Cycle(cpu_ms=cpu / n, commands=commands / n, bytes=size / n)


async def _streams(
    srv: server.BenchServer,
    count: CommandCount,
    ep: wire.McpEndpoint,
    room: str,
    n: int,
    seconds: float,
) -> tuple[Cycle, Cycle]:
    """(opening one stream, one quiet keep-alive period of one stream): n streams opened,
    held `seconds`, closed."""
    pid = srv.process.pid
    raw = wire.build_request(
        "GET",
        ep.host,
        ep.port,
        f"/api/v1/rooms/{room}/events/stream",
        headers={"Authorization": f"Bearer {ep.token}", "Accept": "text/event-stream"},
    )
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    start = await count.settled()
    cpu0 = floor.cpu_seconds(pid)
    read = 0
    for _ in range(n):
        reader, writer = await asyncio.open_connection(ep.host, ep.port)
        writer.write(raw)
        head = await reader.readuntil(b"\r\n\r\n")
        first = await reader.readuntil(b"\n\n")  # retry: and the stream's comment
        read += len(raw) + len(head) + len(first)
        opened.append((reader, writer))
    opening = await count.settled() - start
    cpu1 = floor.cpu_seconds(pid)
    await asyncio.sleep(seconds)
    got = 0
    for reader, _ in opened:
        with contextlib.suppress(TimeoutError):
            while True:
                got += len(await asyncio.wait_for(reader.read(65536), 0.001))
    cpu2 = floor.cpu_seconds(pid)
    quiet = count.seen - start - opening
    for _, writer in opened:
        writer.close()
    ticks = n * (seconds / KEEPALIVE_SECONDS)
    return (
        Cycle(cpu_ms=(cpu1 - cpu0) * 1000 / n, commands=opening / n, bytes=read / n),
        Cycle(cpu_ms=(cpu2 - cpu1) * 1000 / ticks, commands=quiet / ticks, bytes=got / ticks),
    )


async def measure_rest(
    srv: server.BenchServer, ep: wire.McpEndpoint, room: str, fig: IdleFigures
) -> None:
    """The REST door's long wait (on a server whose agents are online for
    SHORT_ONLINE_SECONDS): a wait under a keep-alive period, then one three periods longer;
    each period of the longer is a keep-alive and the agent marked present again, and the
    presence step is the period less a stream's keep-alive."""
    agents = [f"idle-{i}" for i in range(AGENTS)]
    conn = ep.connection()
    await wire.call_tool(
        conn, ep, "post_event", {"roomId": room, "type": "bench_idle", "from": "w", "payload": {}}
    )
    for agent in agents:
        await wire.call_tool(conn, ep, "get_unread_events", {"roomId": room, "agentId": agent})
    await conn.close()
    url = srv.redis_url.replace("redis+socket://", "unix://")
    async with CommandCount(url) as count:
        short = await _cycles(srv, count, lambda a, ms: _rest_wait(ep, room, a, ms), agents, 500)
        long = await _cycles(srv, count, lambda a, ms: _rest_wait(ep, room, a, ms), agents, 3_500)
    fig.rest = short
    period = Cycle(
        cpu_ms=(long.cpu_ms - short.cpu_ms) / 3,
        commands=(long.commands - short.commands) / 3,
        bytes=(long.bytes - short.bytes) / 3,
    )
    fig.renewal = Cycle(
        cpu_ms=max(0.0, period.cpu_ms - fig.tick.cpu_ms),
        commands=max(0.0, period.commands - fig.tick.commands),
    )


async def measure(srv: server.BenchServer, ep: wire.McpEndpoint, room: str) -> IdleFigures:
    fig = IdleFigures(agents=AGENTS)
    pid = srv.process.pid
    agents = [f"idle-{i}" for i in range(AGENTS)]
    conn = ep.connection()
    post = {"roomId": room, "type": "bench_idle", "from": "writer", "payload": {}}
    await wire.call_tool(conn, ep, "post_event", post)
    for agent in agents:  # warm: each agent has read the room, as a re-arming agent has
        await wire.call_tool(conn, ep, "get_unread_events", {"roomId": room, "agentId": agent})
    url = srv.redis_url.replace("redis+socket://", "unix://")
    async with CommandCount(url) as count:
        start = await count.settled()
        cpu0, rss0 = floor.cpu_seconds(pid), imports.rss(pid)[0]
        waits = [
            asyncio.ensure_future(
                _request(srv, _mcp_wait(ep, room, a, TOOL_WAIT_SECONDS * 1000), TOOL_WAIT_SECONDS)
            )
            for a in agents
        ]
        deadline = time.monotonic() + 60
        while open_waiters(srv) < AGENTS and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        armed = await count.settled()
        cpu1, rss1 = floor.cpu_seconds(pid), imports.rss(pid)[0]
        fig.arm_cpu_ms = (cpu1 - cpu0) * 1000 / AGENTS
        fig.arm_commands = (armed - start) / AGENTS
        fig.arm_bytes_held = (rss1 - rss0) / AGENTS
        await asyncio.sleep(WAIT_WINDOW_SECONDS)
        cpu2 = floor.cpu_seconds(pid)
        fig.waiting_commands_per_s = (count.seen - armed) / WAIT_WINDOW_SECONDS
        fig.waiting_cpu_ms_per_s = (cpu2 - cpu1) * 1000 / WAIT_WINDOW_SECONDS
    if any(w.done() for w in waits):
        fig.problems.append("a wait returned before the write")
    # The wake is watched without MONITOR, which makes Redis send every command to the bench
    # and, on a small machine, takes the cores the wake's answers need.
    cpu_before = floor.cpu_seconds(pid)
    t0 = time.perf_counter()
    await wire.call_tool(conn, ep, "post_event", post)
    answered = await asyncio.gather(*waits)
    cpu_after = floor.cpu_seconds(pid)
    fig.woken = sum(1 for _, _, body in answered if body["result"]["structuredContent"]["count"])
    fig.wake_last_ms = (max(t for t, _, _ in answered) - t0) * 1000
    fig.wake_cpu_ms = (cpu_after - cpu_before) * 1000 / max(fig.woken, 1)
    for agent in agents:  # each has read the write that woke it
        await wire.call_tool(conn, ep, "get_unread_events", {"roomId": room, "agentId": agent})

    async with CommandCount(url) as count:
        fig.mcp = await _cycles(srv, count, lambda a, ms: _mcp_wait(ep, room, a, ms), agents, 1500)
        fig.sse_open, fig.tick = await _streams(
            srv, count, ep, room, min(AGENTS, 200), WAIT_WINDOW_SECONDS
        )
    await conn.close()
    if fig.woken != AGENTS:
        fig.problems.append(f"one write woke {fig.woken} of {AGENTS} waiters")
    return fig


def section(fig: IdleFigures) -> list[str]:
    lines = [
        "",
        f"## Idle agents [idle] ({fig.agents} waiting in one room, one web process, one key)",
        f"  arming one wait (MCP): {fig.arm_cpu_ms:.2f} ms web CPU, {fig.arm_commands:.1f} Redis "
        f"commands (scripts' inner calls counted), {fig.arm_bytes_held / 1024:.1f} KB of the "
        "web process held while it waits",
        f"  while all wait: {fig.waiting_commands_per_s:.1f} Redis commands/s, "
        f"{fig.waiting_cpu_ms_per_s:.1f} ms web CPU/s together",
        f"  one write waking all: {fig.wake_cpu_ms:.3f} ms web CPU per woken waiter "
        f"({fig.woken} woken), the last answered {fig.wake_last_ms:.0f} ms after the write",
        "  one whole wait nothing woke: "
        f"MCP {fig.mcp.cpu_ms:.2f} ms CPU, {fig.mcp.commands:.1f} commands, "
        f"{fig.mcp.bytes:.0f} bytes; REST {fig.rest.cpu_ms:.2f} ms, {fig.rest.commands:.1f}, "
        f"{fig.rest.bytes:.0f} bytes; opening an SSE stream {fig.sse_open.cpu_ms:.2f} ms, "
        f"{fig.sse_open.commands:.1f}, {fig.sse_open.bytes:.0f} bytes",
        f"  one keep-alive (a stream's; a REST wait's is the same): {fig.tick.cpu_ms * 1000:.0f} "
        f"µs CPU, {fig.tick.commands:.1f} commands, {fig.tick.bytes:.0f} bytes; a long wait's "
        f"agent marked present again: {fig.renewal.cpu_ms * 1000:.0f} µs CPU, "
        f"{fig.renewal.commands:.1f} commands",
        f"  one idle agent for an hour (keep-alive every {DEFAULT_KEEPALIVE_SECONDS} s; with a "
        f"key of its own, {3600 // DEFAULT_RECHECK_SECONDS} database queries besides, its "
        f"credential re-checked every {DEFAULT_RECHECK_SECONDS} s):",
    ]
    for name, hour in fig.hours().items():
        lines.append(
            f"    {name}: {hour.cpu_ms / 1000:.3f} CPU s, {hour.commands:.0f} Redis commands, "
            f"{hour.bytes / 1024:.1f} KB"
        )
    lines += [f"  PROBLEM: {p}" for p in fig.problems]
    return lines


async def measure_own(var_root: Path, keys: server.Keys, key_prefix: str) -> IdleFigures:
    """The section on servers of its own, which keep alive every KEEPALIVE_SECONDS: one
    for the MCP door and streams, one for the REST door's waits (SHORT_ONLINE_SECONDS)."""
    fig: IdleFigures | None = None
    for name, env in (
        ("idle", {}),
        ("idle-rest", {"PRESENCE_ONLINE_SECONDS": str(SHORT_ONLINE_SECONDS)}),
    ):
        srv = server.start(
            "thin",
            var_root,
            keys,
            key_prefix,
            name=name,
            extra_env={
                "SSE_KEEPALIVE_SECONDS": str(KEEPALIVE_SECONDS),
                "RUN_WORKER": "0",
                **env,
            },
        )
        try:
            ep = wire.McpEndpoint(srv.host, srv.port, keys.secret)
            room = f"bench-{name}-{secrets.token_hex(4)}"
            if fig is None:
                fig = await measure(srv, ep, room)
            else:
                await measure_rest(srv, ep, room, fig)
        finally:
            srv.stop()
    assert fig is not None
    return fig
