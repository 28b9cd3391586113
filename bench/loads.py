"""Throughput: wrk with bench/wrk_post.lua, or (when wrk is missing) a Python load
generator that sends the same requests. Both report tool calls/s and latency percentiles."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import wire
from bench.stats import percentile

LUA = Path(__file__).resolve().parent / "wrk_post.lua"
SCENARIOS = ("mix", "read_plan", "heartbeat")
MIX = ("read_plan", "update_task", "post_event", "get_unread_events", "heartbeat")


@dataclass
class LoadResult:
    scenario: str
    conns: int
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    non200: int
    rpc_errors: int
    tool_errors: int
    socket_errors: int
    first_bad: str = ""
    generator: str = "wrk"

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def failures(self) -> int:
        return self.non200 + self.rpc_errors + self.tool_errors + self.socket_errors


def wrk_path() -> str | None:
    return shutil.which("wrk") or (("/usr/bin/wrk") if Path("/usr/bin/wrk").exists() else None)


def run_wrk(
    wrk: str,
    url: str,
    token: str,
    room: str,
    tasks: list[str],
    scenario: str,
    conns: int,
    seconds: int,
) -> LoadResult:
    threads = 1 if conns == 1 else 2
    cmd = [
        wrk,
        f"-t{threads}",
        f"-c{conns}",
        f"-d{seconds}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA),
        url,
        "--",
        scenario,
        token,
        room,
        ",".join(tasks),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    fields: dict[str, int] = {}
    first_bad = ""
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH "):
            for part in line.split()[1:]:
                k, _, v = part.partition("=")
                fields[k] = int(float(v))
        elif line.startswith("BENCH_FIRST_BAD "):
            first_bad = line[len("BENCH_FIRST_BAD ") :]
    if proc.returncode != 0 or "requests" not in fields:
        raise RuntimeError(
            f"wrk failed ({proc.returncode}): {' '.join(cmd[:-4])}\n{proc.stdout}\n{proc.stderr}"
        )
    return LoadResult(
        scenario=scenario,
        conns=conns,
        requests=fields["requests"],
        seconds=fields["duration_us"] / 1e6,
        p50_ms=fields["p50_us"] / 1000,
        p99_ms=fields["p99_us"] / 1000,
        non200=fields["non200"],
        rpc_errors=fields["rpc_errors"],
        tool_errors=fields["tool_errors"],
        socket_errors=fields["connect"] + fields["read"] + fields["write"] + fields["timeout"],
        first_bad=first_bad,
    )


def scenario_arguments(
    name: str, room: str, tasks: list[str], agent: str, i: int
) -> dict[str, Any]:
    """The same calls wrk_post.lua sends."""
    if name == "read_plan":
        return {"roomId": room}
    if name == "heartbeat":
        return {"roomId": room, "agentId": agent}
    if name == "update_task":
        status = "in_progress" if i % 2 == 0 else "pending"
        return {
            "roomId": room,
            "taskId": tasks[(i - 1) % len(tasks)],
            "status": status,
            "agentId": agent,
        }
    if name == "post_event":
        return {"roomId": room, "type": "bench_load", "from": agent, "payload": {"n": i}}
    if name == "get_unread_events":
        return {"roomId": room, "agentId": agent, "limit": 20}
    raise ValueError(name)


async def run_python(
    ep: wire.McpEndpoint, room: str, tasks: list[str], scenario: str, conns: int, seconds: int
) -> LoadResult:
    """The fallback load generator: `conns` keep-alive connections on one event loop. It is
    client-bound well before the server is, so its figures are a floor."""
    latencies: list[float] = []
    counts = {"non200": 0, "rpc": 0, "tool": 0, "socket": 0}
    first_bad: list[str] = []

    async def worker(n: int) -> None:
        agent = f"py-{n}"
        names = MIX if scenario == "mix" else (scenario,)
        raws = [
            ep.raw_call(name, scenario_arguments(name, room, tasks, agent, i))
            for i in range(1, 4 * len(tasks) + 1)
            for name in names
        ]
        conn = ep.connection()
        k = 0
        while time.perf_counter() < deadline:
            raw = raws[k % len(raws)]
            k += 1
            t0 = time.perf_counter()
            try:
                resp = await conn.request(raw)
            except wire.HttpError as exc:
                counts["socket"] += 1
                first_bad.append(str(exc))
                continue
            latencies.append(time.perf_counter() - t0)
            ok, _, problem = wire.parse_call(resp)
            if not ok:
                key = (
                    "non200" if resp.status != 200 else ("tool" if "isError" in problem else "rpc")
                )
                counts[key] += 1
                first_bad.append(f"HTTP {resp.status} {resp.body[:300]!r}")
        await conn.close()

    start = time.perf_counter()
    deadline = start + seconds
    await asyncio.gather(*(worker(n) for n in range(conns)))
    elapsed = time.perf_counter() - start

    return LoadResult(
        scenario=scenario,
        conns=conns,
        requests=len(latencies),
        seconds=elapsed,
        p50_ms=percentile(latencies, 50) * 1000 if latencies else 0.0,
        p99_ms=percentile(latencies, 99) * 1000 if latencies else 0.0,
        non200=counts["non200"],
        rpc_errors=counts["rpc"],
        tool_errors=counts["tool"],
        socket_errors=counts["socket"],
        first_bad=first_bad[0] if first_bad else "",
        generator="python",
    )
