"""`make bench` section "imports": what a room import costs the server and the others.

On a server of its own (one web process, as `make run` starts it), a room is filled straight
into Redis with events of agent-sized payloads until its export is just under
ROOM_IMPORT_BYTES_MAX, exported, and imported back through POST /api/v1/rooms/import:

- peak RSS growth of the web process per import (its VmHWM after the import, reset before
  it through /proc/<pid>/clear_refs, less its RSS before), against the body's size;
- another tenant's read_plan p99 (MCP, one connection, a call every 5 ms) idle, and while
  three tenants import the document at once, until each has imported it once (a refused
  import, 429 or 503, is tried again after 0.2 s: clients more eager than Retry-After asks);
- a body over the limit answered 413 before any of it was sent (Content-Length).

Knob: BENCH_IMPORT_MB, the limit under test (default: the server's default).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import redis

from bench import server, wire
from bench.stats import percentile

IMPORTERS = 3


class Fails(Protocol):
    def add(self, check: str, detail: str = "", n: int = 1) -> None: ...


PAYLOAD_WORDS = ("deploy", "schema", "review", "migrate", "parser", "ticket", "build", "cache")
RETRY_SECONDS = 0.2
LIMIT_MB = os.environ.get("BENCH_IMPORT_MB", "")
TARGET = 2.0  # loaded p99 within this many times idle
RSS_TARGET = 3.0  # peak RSS growth within this many times the body


def server_env(keys: server.Keys, tokens: list[str]) -> dict[str, str]:
    teams = ",".join(f"imp{i}:{t}" for i, t in enumerate(tokens))
    env = {
        "API_KEYS": f"{keys.env()},{teams}",
        "ROOM_EVENT_CAP": "1000000",
        "ROOM_EVENT_BYTES_MAX": str(2**31),
        "WEB_CONCURRENCY": "1",
    }
    if LIMIT_MB:
        env["ROOM_IMPORT_BYTES_MAX"] = str(int(float(LIMIT_MB) * 2**20))
    return env


@dataclass
class ImportFigures:
    limit: int = 0
    body: int = 0
    events: int = 0
    rss_growth: list[int] = field(default_factory=list)
    import_seconds: list[float] = field(default_factory=list)
    idle_p99: float = 0.0
    idle_p50: float = 0.0
    loaded_p99: float = 0.0
    loaded_p50: float = 0.0
    loaded_calls: int = 0
    loaded_seconds: float = 0.0
    imported: int = 0
    refused: dict[int, int] = field(default_factory=dict)
    too_large_status: int = 0
    too_large_ms: float = 0.0

    @property
    def rss_ratio(self) -> float:
        return max(self.rss_growth, default=0) / self.body if self.body else 0.0

    @property
    def p99_ratio(self) -> float:
        return self.loaded_p99 / self.idle_p99 if self.idle_p99 else 0.0


def _http(
    srv: server.BenchServer, method: str, path: str, token: str, body: bytes | None = None
) -> tuple[int, bytes, dict[str, str]]:
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=300)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.putrequest(method, path)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(body or b"")))
        conn.endheaders()
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            conn.send(body or b"")  # a refusal may come (and the socket close) before it all
        resp = conn.getresponse()
        return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def _limit(srv: server.BenchServer) -> int:
    if LIMIT_MB:
        return int(float(LIMIT_MB) * 2**20)
    # The server's default, as its settings module says.
    from config import settings as defaults

    return int(defaults.ROOM_IMPORT_BYTES_MAX)


def rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of `pid` in bytes."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) * 1024
    return found["VmRSS"], found["VmHWM"]


def _fill(srv: server.BenchServer, token: str, room: str, limit: int) -> tuple[bytes, int]:
    """A room whose export is just under `limit`: (the export, its events)."""
    status, body, _ = _http(
        srv, "POST", "/api/v1/rooms", token, json.dumps({"roomId": room}).encode()
    )
    assert status in (200, 201), body
    r = redis.Redis.from_url(srv.redis_url.replace("redis+socket://", "unix://"))
    events = f"{srv.key_prefix}:{{{room}}}:events"
    rng = secrets.SystemRandom()
    made = 0
    size = 0
    while True:
        # Agent-sized events: a few hundred bytes to a few KB of words, as agents post them.
        want = int((limit * 0.97 - size) / 1500)
        if want <= 0:
            break
        pipe = r.pipeline(transaction=False)
        for i in range(min(want, 20_000)):
            text = " ".join(rng.choice(PAYLOAD_WORDS) for _ in range(rng.randint(20, 300)))
            payload = json.dumps({"note": text, "n": made + i})
            fields = {"type": "note", "from": f"agent-{i % 7}", "to": "all", "payload": payload}
            pipe.xadd(events, fields)  # type: ignore[arg-type]
        pipe.execute()
        made += min(want, 20_000)
        status, body, _ = _http(srv, "GET", f"/api/v1/rooms/{room}/export", token)
        assert status == 200, body[:300]
        size = len(body)
    while size > limit:
        r.xtrim(events, maxlen=int(made * limit / size * 0.99), approximate=False)
        made = int(r.xlen(events))
        status, body, _ = _http(srv, "GET", f"/api/v1/rooms/{room}/export", token)
        size = len(body)
    return body, made


async def _read_plan_p99(
    ep: wire.McpEndpoint, room: str, stop: threading.Event | None, calls: int
) -> list[float]:
    conn = ep.connection()
    times: list[float] = []
    try:
        while (stop is None and len(times) < calls) or (stop is not None and not stop.is_set()):
            res = await wire.call_tool(conn, ep, "read_plan", {"roomId": room})
            if res.ok:
                times.append(res.seconds * 1000)
            await asyncio.sleep(0.005)
    finally:
        await conn.close()
    return times


def measure(
    start: Callable[[], server.BenchServer], keys: server.Keys, tokens: list[str]
) -> ImportFigures:
    """`start()` starts the section's server (the same var folder each time, so the same
    export key): once to fill and export the room, then afresh, so the first import's RSS
    growth is not hidden by memory the export freed."""
    srv = start()
    try:
        fig = ImportFigures(limit=_limit(srv))
        body, fig.events = _fill(srv, tokens[0], "imports-source", fig.limit)
    finally:
        srv.stop()
    fig.body = len(body)
    srv = start()
    try:
        return _measured(srv, keys, tokens, fig, body)
    finally:
        srv.stop()


def _measured(
    srv: server.BenchServer,
    keys: server.Keys,
    tokens: list[str],
    fig: ImportFigures,
    body: bytes,
) -> ImportFigures:
    pid = srv.process.pid
    n = 0

    def import_once(token: str) -> int:
        nonlocal n
        n += 1
        status, _, _ = _http(
            srv,
            "POST",
            f"/api/v1/rooms/import?roomId=imports-copy-{n}-{secrets.token_hex(3)}",
            token,
            body,
        )
        return status

    for i in range(3):
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        before, _ = rss(pid)
        t0 = time.perf_counter()
        status = import_once(tokens[i % len(tokens)])
        fig.import_seconds.append(time.perf_counter() - t0)
        assert status == 201, status
        _, peak = rss(pid)
        fig.rss_growth.append(peak - before)

    other = wire.McpEndpoint(srv.host, srv.port, keys.other_secret)
    room = f"imports-reader-{secrets.token_hex(3)}"

    async def prepare() -> None:
        conn = other.connection()
        for i in range(20):
            await wire.call_tool(
                conn,
                other,
                "add_task",
                {"roomId": room, "title": f"task {i}", "description": "x" * 200},
            )
        await conn.close()

    asyncio.run(prepare())
    idle = asyncio.run(_read_plan_p99(other, room, None, 600))
    if idle:
        fig.idle_p50, fig.idle_p99 = percentile(idle, 50), percentile(idle, 99)

    stop = threading.Event()
    lock = threading.Lock()

    def importer(token: str) -> None:
        # One import, at once with the others; refused (429 or 503), tried again.
        while True:
            status = import_once(token)
            with lock:
                if status == 201:
                    fig.imported += 1
                    return
                fig.refused[status] = fig.refused.get(status, 0) + 1
            time.sleep(RETRY_SECONDS)

    threads = [threading.Thread(target=importer, args=(t,)) for t in tokens[:IMPORTERS]]
    t0 = time.perf_counter()
    for t in threads:
        t.start()

    def watch() -> None:
        for t in threads:
            t.join()
        stop.set()

    threading.Thread(target=watch).start()
    loaded = asyncio.run(_read_plan_p99(other, room, stop, 0))
    fig.loaded_seconds = time.perf_counter() - t0
    fig.loaded_calls = len(loaded)
    if loaded:
        fig.loaded_p50, fig.loaded_p99 = percentile(loaded, 50), percentile(loaded, 99)

    # Over the limit: answered before the body is sent.
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
    t0 = time.perf_counter()
    conn.putrequest("POST", "/api/v1/rooms/import?roomId=imports-huge")
    conn.putheader("Authorization", f"Bearer {tokens[0]}")
    conn.putheader("Content-Length", str(fig.limit + 2**20))
    conn.endheaders()
    fig.too_large_status = conn.getresponse().status
    fig.too_large_ms = (time.perf_counter() - t0) * 1000
    conn.close()
    return fig


def failures(fig: ImportFigures) -> list[tuple[str, str]]:
    out = []
    if fig.too_large_status != 413:
        out.append(("imports: oversized body", f"answered {fig.too_large_status}, not 413"))
    if fig.imported == 0:
        out.append(("imports: none of the concurrent imports went through", str(fig.refused)))
    return out


def section(fig: ImportFigures) -> list[str]:
    mb = 2**20
    growth = ", ".join(f"{g / mb:.0f}" for g in fig.rss_growth)
    rss_ok = "ok" if fig.rss_ratio <= RSS_TARGET else "OVER"
    p99_ok = "ok" if fig.p99_ratio <= TARGET else "OVER"
    return [
        "Room imports (section imports)",
        f"  limit ROOM_IMPORT_BYTES_MAX {fig.limit / mb:.0f} MiB; document {fig.body / mb:.1f} MiB "
        f"({fig.events:,} events of agent-sized payloads)",
        f"  peak RSS growth of the web process per import (MiB): {growth}; worst "
        f"{fig.rss_ratio:.2f}x the body (target <= {RSS_TARGET:.0f}x: {rss_ok}); "
        f"import took {', '.join(f'{s:.1f}' for s in fig.import_seconds)} s",
        f"  another tenant's read_plan (ms): idle p50 {fig.idle_p50:.2f} p99 {fig.idle_p99:.2f}; "
        f"while {IMPORTERS} tenants import at once ({fig.loaded_seconds:.0f} s) p50 "
        f"{fig.loaded_p50:.2f} p99 {fig.loaded_p99:.2f} ({fig.loaded_calls} calls): "
        f"{fig.p99_ratio:.2f}x idle (target <= {TARGET:.0f}x: {p99_ok})",
        f"  imports meanwhile: {fig.imported} done, refused {dict(sorted(fig.refused.items()))} "
        f"(429: the team's one at a time, 503: the process's)",
        f"  a body over the limit (Content-Length): {fig.too_large_status} in "
        f"{fig.too_large_ms:.1f} ms, before any of it was sent",
        "",
    ]


def run_section(var_root: Path, keys: server.Keys, key_prefix: str, fails: Fails) -> list[str]:
    """The section as `make bench` runs it (bench/run.py): its report lines."""
    tokens = [secrets.token_urlsafe(24) for _ in range(IMPORTERS)]

    def start() -> server.BenchServer:
        env = server_env(keys, tokens)
        return server.start("thin", var_root, keys, key_prefix, name="imports", extra_env=env)

    fig = measure(start, keys, tokens)
    for check, detail in failures(fig):
        fails.add(check, detail)
    return section(fig)
