"""Push latency: from a write (a post_event JSON-RPC POST) to the waiting agent's wake-up,
for wait_for_events, the SSE stream and a webhook to a local receiver, plus the "many
waiters" figure (hundreds of wait_for_events on one server, one write wakes them all).

Every measurement keeps its waiter armed before the write: a wait_for_events request is
sent, then (after PUSH_GAP) the write; the SSE stream stays open throughout; the webhook
receiver listens for the whole run. t0 is taken just before the write request is sent; t1
when the waiter has the event (the wait_for_events response read, the SSE frame parsed,
the webhook POST's body read by the receiver).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bench import wire

# Seconds between arming the waiter (or the previous wake-up) and the next write: long
# enough for the server to register the wait, short enough to keep the run brief.
PUSH_GAP = 0.02
# Longest a single push may take before it counts as missed.
PUSH_TIMEOUT = 5.0
# A wait_for_events in the latency loop waits at most this long (the tool's cap is 30 s).
WAIT_TIMEOUT_MS = 20_000
# Consecutive missed pushes after which a measurement gives up (the rest count as missed).
GIVE_UP_AFTER = 3
WEBHOOK_UNAVAILABLE = (404, 405, 501)


class FailureSink(Protocol):
    def add(self, check: str, detail: str = "", n: int = 1) -> None: ...


@dataclass
class PushLatency:
    """One push path: latencies (s) of the events it delivered, and what went wrong."""

    seconds: list[float] = field(default_factory=list)
    write_seconds: list[float] = field(default_factory=list)  # post_event's own round trip
    sent: int = 0
    missed: int = 0
    duplicates: int = 0
    unexpected: int = 0
    early: int = 0  # wait_for_events that returned before the write
    bad_signatures: int = 0
    note: str = ""  # e.g. "not available (HTTP 404)"
    available: bool = True


@dataclass
class ManyWaiters:
    waiters: int
    rounds: list[dict[str, Any]] = field(default_factory=list)


# --- Helpers -------------------------------------------------------------------------------


async def _timed(aw: Awaitable[wire.Response]) -> tuple[float, wire.Response]:
    resp = await aw
    return time.perf_counter(), resp


async def _post_event(
    conn: wire.Connection, ep: wire.McpEndpoint, room: str, agent: str, i: int, kind: str
) -> tuple[float, float, wire.CallResult]:
    """(t0, round trip, result): t0 is taken just before the write request is sent."""
    args = {"roomId": room, "type": "bench_push", "from": agent, "payload": {"kind": kind, "i": i}}
    raw = ep.raw_call("post_event", args)
    t0 = time.perf_counter()
    try:
        resp = await conn.request(raw)
    except wire.HttpError as exc:
        return t0, time.perf_counter() - t0, wire.CallResult(False, problem=str(exc), request=raw)
    dt = time.perf_counter() - t0
    ok, value, problem = wire.parse_call(resp)
    return t0, dt, wire.CallResult(ok, value, resp.status, problem, raw, resp.body, dt)


async def _touch(ep: wire.McpEndpoint, room: str, agent: str, fails: FailureSink) -> None:
    """Claim the room (first touch) without writing an event."""
    conn = ep.connection()
    try:
        res = await wire.call_tool(conn, ep, "heartbeat", {"roomId": room, "agentId": agent})
    finally:
        await conn.close()
    if not res.ok:
        fails.add("push: setup (heartbeat)", res.describe())
        raise RuntimeError(f"push: could not claim room {room}:\n{res.describe()}")


def _wait_raw(ep: wire.McpEndpoint, room: str, agent: str, timeout_ms: int) -> bytes:
    return ep.raw_call(
        "wait_for_events",
        {"roomId": room, "agentId": agent, "timeoutMs": timeout_ms, "limit": 10},
    )


# --- wait_for_events -----------------------------------------------------------------------


async def wait_latency(
    ep: wire.McpEndpoint, room: str, events: int, warm: int, fails: FailureSink
) -> PushLatency:
    out = PushLatency()
    await _touch(ep, room, "push-writer", fails)
    writer = ep.connection()
    waiter = wire.Connection(ep.host, ep.port, timeout=WAIT_TIMEOUT_MS / 1000 + 10)
    agent = "push-waiter"
    misses_in_row = 0
    try:
        await writer.open()
        await waiter.open()
        for i in range(warm + events):
            task = asyncio.create_task(_timed(waiter.request(_wait_raw(ep, room, agent, 20_000))))
            await asyncio.sleep(PUSH_GAP)
            if task.done():
                out.early += 1
                exc = task.exception()
                fails.add(
                    "push (wait_for_events): returned before the write",
                    f"event {i}: {exc or task.result()[1].body[:300]!r}",
                )
                continue
            t0, dt, res = await _post_event(writer, ep, room, "push-writer", i, "wait")
            if not res.ok:
                fails.add("push (wait_for_events): failed post_event", res.describe())
                task.cancel()
                await waiter.close()
                continue
            eid = res.value.get("id")
            counted = i >= warm
            out.sent += counted
            try:
                t1, resp = await asyncio.wait_for(task, PUSH_TIMEOUT)
            except (TimeoutError, wire.HttpError) as exc:
                await waiter.close()
                out.missed += counted
                misses_in_row += 1
                fails.add(
                    "push (wait_for_events): missed events",
                    f"event {eid}: no wake-up ({type(exc).__name__} {exc})",
                    0,
                )
                if misses_in_row >= GIVE_UP_AFTER:
                    out.missed += warm + events - i - 1 if counted else events
                    out.note = f"gave up after {GIVE_UP_AFTER} missed wake-ups in a row"
                    break
                continue
            ok, value, problem = wire.parse_call(resp)
            got = [e.get("id") for e in (value or {}).get("events", [])] if ok else []
            if not ok or eid not in got:
                out.missed += counted
                misses_in_row += 1
                fails.add(
                    "push (wait_for_events): missed events",
                    f"event {eid}: the wake-up lacks it: {problem} {resp.body[:400]!r}",
                    0,
                )
                if misses_in_row >= GIVE_UP_AFTER:
                    out.missed += warm + events - i - 1 if counted else events
                    out.note = f"gave up after {GIVE_UP_AFTER} missed wake-ups in a row"
                    break
                continue
            misses_in_row = 0
            if len(got) > 1:
                out.unexpected += len(got) - 1
                fails.add(
                    "push (wait_for_events): events besides the written one",
                    f"wrote {eid}, got {got}",
                    len(got) - 1,
                )
            if counted:
                out.seconds.append(t1 - t0)
                out.write_seconds.append(dt)
    finally:
        await writer.close()
        await waiter.close()
    if out.missed:
        fails.add("push (wait_for_events): missed events", "", out.missed)
    return out


# --- SSE -----------------------------------------------------------------------------------


class SseStream:
    """One GET .../events/stream on a raw connection; a task parses frames as they arrive
    and queues (arrival time, id, data)."""

    def __init__(self, host: str, port: int, room: str, token: str) -> None:
        self.host, self.port, self.room, self.token = host, port, room, token
        self.frames: asyncio.Queue[tuple[float, str, str]] = asyncio.Queue()
        self.comments = 0
        self.opened = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.error = ""

    async def open(self) -> None:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self._writer = writer
        writer.write(
            wire.build_request(
                "GET",
                self.host,
                self.port,
                f"/api/v1/rooms/{self.room}/events/stream",
                headers={"Authorization": f"Bearer {self.token}", "Accept": "text/event-stream"},
            )
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if status != 200:
            body = b""
            with contextlib.suppress(Exception):
                n = int(headers.get("content-length", "0"))
                body = await asyncio.wait_for(reader.readexactly(n), 5)
            await self.close()
            raise wire.HttpError(f"HTTP {status} {body[:300]!r}")
        chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        self._task = asyncio.create_task(self._read(reader, chunked))
        await asyncio.wait_for(self.opened.wait(), 10)

    async def _read(self, reader: asyncio.StreamReader, chunked: bool) -> None:
        buf = b""
        try:
            while True:
                if chunked:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    if size == 0:
                        self.error = "the stream ended"
                        return
                    data = await reader.readexactly(size)
                    await reader.readexactly(2)
                else:
                    data = await reader.read(65536)
                    if not data:
                        self.error = "the stream ended"
                        return
                buf += data
                while b"\n\n" in buf:
                    frame, buf = buf.split(b"\n\n", 1)
                    now = time.perf_counter()
                    eid, data_lines = "", []
                    for line in frame.decode("utf-8").split("\n"):
                        if line.startswith(":"):
                            self.comments += 1
                        elif line.startswith("id:"):
                            eid = line[3:].strip()
                        elif line.startswith("data:"):
                            data_lines.append(line[5:].lstrip(" "))
                    self.opened.set()
                    if data_lines:
                        self.frames.put_nowait((now, eid, "\n".join(data_lines)))
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()


async def sse_latency(
    ep: wire.McpEndpoint, room: str, events: int, warm: int, fails: FailureSink
) -> PushLatency:
    out = PushLatency()
    await _touch(ep, room, "push-writer", fails)
    stream = SseStream(ep.host, ep.port, room, ep.token)
    try:
        await stream.open()
    except (wire.HttpError, OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
        fails.add("push (SSE): could not open the stream", f"{type(exc).__name__}: {exc}")
        out.available = False
        out.note = f"could not open the stream: {exc}"
        return out
    writer = ep.connection()
    seen: set[str] = set()
    misses_in_row = 0
    try:
        await writer.open()
        for i in range(warm + events):
            await asyncio.sleep(PUSH_GAP)
            t0, dt, res = await _post_event(writer, ep, room, "push-writer", i, "sse")
            if not res.ok:
                fails.add("push (SSE): failed post_event", res.describe())
                continue
            eid = res.value.get("id")
            counted = i >= warm
            out.sent += counted
            t1 = None
            deadline = time.perf_counter() + PUSH_TIMEOUT
            while t1 is None:
                try:
                    at, fid, data = await asyncio.wait_for(
                        stream.frames.get(), max(0.0, deadline - time.perf_counter())
                    )
                except TimeoutError:
                    break
                if fid in seen:
                    out.duplicates += 1
                    fails.add("push (SSE): an event arrived twice", f"id {fid}")
                    continue
                seen.add(fid)
                if fid == eid:
                    t1 = at
                    with contextlib.suppress(ValueError):
                        if json.loads(data).get("id") != eid:
                            fails.add("push (SSE): data id differs from the SSE id", data[:300])
                else:
                    out.unexpected += 1
                    fails.add("push (SSE): an unexpected event", f"waiting for {eid}, got {fid}")
            if t1 is None:
                out.missed += counted
                misses_in_row += 1
                fails.add(
                    "push (SSE): missed events",
                    f"event {eid}: no frame within {PUSH_TIMEOUT:.0f} s; "
                    f"stream: {stream.error or 'open'}",
                    0,
                )
                if misses_in_row >= GIVE_UP_AFTER or stream.error:
                    out.missed += warm + events - i - 1 if counted else events
                    out.note = "gave up: " + (stream.error or f"{GIVE_UP_AFTER} misses in a row")
                    break
                continue
            misses_in_row = 0
            if counted:
                out.seconds.append(t1 - t0)
                out.write_seconds.append(dt)
    finally:
        await writer.close()
        await stream.close()
    if out.missed:
        fails.add("push (SSE): missed events", "", out.missed)
    return out


# --- Webhook -------------------------------------------------------------------------------


class HookReceiver:
    """A tiny HTTP/1.1 server on 127.0.0.1 that records each POST's arrival time and checks
    its X-Roomservice-Signature; answers 200 at once."""

    def __init__(self) -> None:
        self.secret = ""
        self.arrivals: asyncio.Queue[tuple[float, set[str], bytes]] = asyncio.Queue()
        self.posts = 0
        self.bad_signatures = 0
        self.bad_samples: list[str] = []
        self.delivery_ids: list[str] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop, hanging up on the server's keep-alive delivery connections first: a handler
        still reading at the loop's shutdown is cancelled there, and asyncio logs that as
        an error in the middle of the report."""
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        await asyncio.sleep(0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if line:
                        k, _, v = line.partition(":")
                        headers[k.strip().lower()] = v.strip()
                if headers.get("expect", "").lower() == "100-continue":
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                if "content-length" in headers:
                    body = await reader.readexactly(int(headers["content-length"]))
                elif headers.get("transfer-encoding", "").lower() == "chunked":
                    parts = []
                    while True:
                        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                        if size == 0:
                            await reader.readuntil(b"\r\n")
                            break
                        parts.append(await reader.readexactly(size))
                        await reader.readexactly(2)
                    body = b"".join(parts)
                else:
                    body = b""
                now = time.perf_counter()
                self.posts += 1
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                self._check(lines[0], headers, body)
                self.arrivals.put_nowait((now, _event_ids(body), body))
                if headers.get("connection", "").lower() == "close":
                    break
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def _check(self, request_line: str, headers: dict[str, str], body: bytes) -> None:
        self.delivery_ids.append(headers.get("x-roomservice-delivery", ""))
        sig = headers.get("x-roomservice-signature", "")
        ts = headers.get("x-roomservice-timestamp", "")
        expected = (
            "sha256="
            + hmac.new(self.secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
        )
        if not self.secret or not ts or not hmac.compare_digest(sig, expected):
            self.bad_signatures += 1
            if len(self.bad_samples) < 3:
                self.bad_samples.append(
                    f"{request_line}; X-Roomservice-Signature={sig!r} "
                    f"X-Roomservice-Timestamp={ts!r}; body {body[:200]!r}"
                )


def _event_ids(body: bytes) -> set[str]:
    """The event id(s) a delivery carries: the event JSON itself, or an envelope around it."""
    try:
        doc = json.loads(body)
    except ValueError:
        return set()
    found: set[str] = set()
    docs = [doc]
    if isinstance(doc, dict):
        docs += [v for k, v in doc.items() if k in ("event", "data") and isinstance(v, dict)]
        for k in ("eventId", "event_id"):
            if isinstance(doc.get(k), str):
                found.add(doc[k])
    for d in docs:
        if isinstance(d, dict) and isinstance(d.get("id"), str):
            found.add(d["id"])
    return found


async def _api(
    ep: wire.McpEndpoint, method: str, path: str, body: dict[str, Any] | None = None
) -> wire.Response:
    conn = ep.connection()
    raw_body = json.dumps(body).encode() if body is not None else b""
    headers = {"Authorization": f"Bearer {ep.token}", "Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        return await conn.request(
            wire.build_request(method, ep.host, ep.port, path, headers=headers, body=raw_body)
        )
    finally:
        await conn.close()


async def webhook_latency(
    ep: wire.McpEndpoint, room: str, events: int, warm: int, fails: FailureSink
) -> PushLatency:
    out = PushLatency()
    await _touch(ep, room, "push-writer", fails)
    receiver = HookReceiver()
    await receiver.start()
    url = f"http://127.0.0.1:{receiver.port}/bench-hook"
    path = f"/api/v1/rooms/{room}/webhooks"
    hook_id: Any = None
    writer = ep.connection()
    try:
        try:
            resp = await _api(ep, "POST", path, {"url": url})
        except wire.HttpError as exc:
            fails.add("push (webhook): registration failed", f"POST {path}: {exc}")
            out.available, out.note = False, f"registration failed: {exc}"
            return out
        try:
            reg = json.loads(resp.body)
        except ValueError:
            reg = None
        # No such route (Django's own 404 page, not one of the API's JSON errors such as
        # "room not found"): webhooks are not built on this server.
        if resp.status in WEBHOOK_UNAVAILABLE and not (isinstance(reg, dict) and "code" in reg):
            out.available, out.note = False, f"not available (POST {path} answered {resp.status})"
            return out
        if resp.status not in (200, 201) or not isinstance(reg, dict) or not reg.get("secret"):
            fails.add(
                "push (webhook): registration refused or without a secret",
                f"POST {path} {{url: {url}}} -> HTTP {resp.status} {resp.body[:400]!r}",
            )
            out.available, out.note = False, f"registration answered HTTP {resp.status}"
            return out
        receiver.secret = str(reg["secret"])
        hook_id = reg.get("id")
        await writer.open()
        delivered: set[str] = set()
        misses_in_row = 0
        for i in range(warm + events):
            await asyncio.sleep(PUSH_GAP)
            t0, dt, res = await _post_event(writer, ep, room, "push-writer", i, "hook")
            if not res.ok:
                fails.add("push (webhook): failed post_event", res.describe())
                continue
            eid = res.value.get("id")
            counted = i >= warm
            out.sent += counted
            # The first delivery may carry a cold start (Celery app, HTTP client): be patient.
            deadline = time.perf_counter() + (PUSH_TIMEOUT * 2 if i == 0 else PUSH_TIMEOUT)
            t1 = None
            while t1 is None:
                try:
                    at, ids, body = await asyncio.wait_for(
                        receiver.arrivals.get(), max(0.0, deadline - time.perf_counter())
                    )
                except TimeoutError:
                    break
                if ids & delivered:
                    out.duplicates += 1
                    continue
                delivered |= ids
                if eid in ids:
                    t1 = at
                else:
                    out.unexpected += 1
                    if not ids:
                        fails.add("push (webhook): delivery without an event id", repr(body[:300]))
            if t1 is None:
                out.missed += counted
                misses_in_row += 1
                fails.add(
                    "push (webhook): missed events",
                    f"event {eid}: no delivery within {PUSH_TIMEOUT:.0f} s "
                    f"({receiver.posts} POSTs received so far)",
                    0,
                )
                if misses_in_row >= GIVE_UP_AFTER:
                    out.missed += warm + events - i - 1 if counted else events
                    out.note = f"gave up after {GIVE_UP_AFTER} missed deliveries in a row"
                    break
                continue
            misses_in_row = 0
            if counted:
                out.seconds.append(t1 - t0)
                out.write_seconds.append(dt)
        # Late duplicates (a retry of something the receiver already answered 200 to).
        await asyncio.sleep(0.5)
        while not receiver.arrivals.empty():
            _, ids, _ = receiver.arrivals.get_nowait()
            if ids & delivered:
                out.duplicates += 1
            else:
                out.unexpected += 1
            delivered |= ids
    finally:
        await writer.close()
        if hook_id is not None:  # stop deliveries before the receiver goes away
            with contextlib.suppress(wire.HttpError):
                await _api(ep, "POST", f"{path}/{hook_id}/disable")
        await receiver.stop()
        out.bad_signatures = receiver.bad_signatures
        if receiver.bad_signatures:
            for sample in receiver.bad_samples:
                fails.add("push (webhook): bad signatures", sample, 0)
            fails.add("push (webhook): bad signatures", "", receiver.bad_signatures)
        if out.missed:
            fails.add("push (webhook): missed events", "", out.missed)
        if out.duplicates:
            fails.add(
                "push (webhook): an event delivered twice (receiver had answered 200)",
                f"{out.duplicates} duplicate deliveries",
                out.duplicates,
            )
    return out


# --- Many waiters --------------------------------------------------------------------------


def _tree_cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of `pid` and its descendants (the uvicorn workers and the
    embedded Redis), from /proc; None where /proc is not there."""
    try:
        tick = os.sysconf("SC_CLK_TCK")
        parents: dict[int, int] = {}
        times: dict[int, float] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read().decode("latin-1")
            except OSError:
                continue
            fields = stat.rpartition(")")[2].split()
            parents[int(name)] = int(fields[1])
            times[int(name)] = (int(fields[11]) + int(fields[12])) / tick
    except (OSError, ValueError):
        return None
    tree, frontier = {pid}, [pid]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(times.get(p, 0.0) for p in tree)


async def _settle(pid: int, pending: list[asyncio.Task[Any]]) -> float:
    """Wait until the server has taken in every wait: its CPU goes quiet (under 5% of a core
    over 300 ms; /proc counts in 10 ms ticks) with none of them answered. At least 0.5 s,
    at most 15 s."""
    t0 = time.perf_counter()
    await asyncio.sleep(0.5)
    history: list[tuple[float, float]] = []
    while time.perf_counter() - t0 < 15:
        cpu = _tree_cpu_seconds(pid)
        if cpu is None:
            await asyncio.sleep(max(0.0, 2.0 - (time.perf_counter() - t0)))
            break
        now = time.perf_counter()
        history.append((now, cpu))
        old = [h for h in history if now - h[0] >= 0.3]
        if old and (cpu - old[-1][1]) / (now - old[-1][0]) < 0.05:
            break
        if any(t.done() for t in pending):
            break
        await asyncio.sleep(0.05)
    return time.perf_counter() - t0


async def many_waiters(
    ep: wire.McpEndpoint, room: str, n: int, rounds: int, server_pid: int, fails: FailureSink
) -> ManyWaiters:
    """`n` connections, each a distinct agent in wait_for_events on one room; once all are
    in, one post_event; the time until the last waiter has its response. `rounds` times,
    on the same connections."""
    out = ManyWaiters(n)
    await _touch(ep, room, "many-writer", fails)
    conns = [wire.Connection(ep.host, ep.port, timeout=60) for _ in range(n)]
    writer = ep.connection()
    try:
        for k in range(0, n, 100):  # open in batches: no SYN burst beyond the backlog
            await asyncio.gather(*(c.open() for c in conns[k : k + 100]))
        await writer.open()
        for r in range(rounds):
            raws = [_wait_raw(ep, room, f"many-{i:03d}", 25_000) for i in range(n)]
            t_arm = time.perf_counter()
            tasks = [
                asyncio.create_task(_timed(c.request(raw)))
                for c, raw in zip(conns, raws, strict=True)
            ]
            settle = await _settle(server_pid, tasks)
            early = [t for t in tasks if t.done()]
            if early:
                sample = early[0].exception() or early[0].result()[1].body[:300]
                fails.add(
                    "push (many waiters): returned before the write",
                    f"round {r + 1}: {len(early)} of {n}; first: {sample!r}",
                    len(early),
                )
            t0, dt, res = await _post_event(writer, ep, room, "many-writer", r, "many")
            if not res.ok:
                fails.add("push (many waiters): failed post_event", res.describe())
                for t in tasks:
                    t.cancel()
                break
            eid = res.value.get("id")
            _, pending = await asyncio.wait(tasks, timeout=30)
            for t, c in zip(tasks, conns, strict=True):
                if t in pending:
                    t.cancel()
                    await c.close()  # half-read: start afresh next round
            got, missed, timed_out, errors = [], 0, 0, 0
            first_bad = ""
            for t in tasks:
                if t in pending or t.cancelled() or t.exception() is not None:
                    errors += 1
                    first_bad = first_bad or (
                        "no answer within 30 s"
                        if t in pending or t.cancelled()
                        else f"{type(t.exception()).__name__}: {t.exception()}"
                    )
                    continue
                t1, resp = t.result()
                ok, value, problem = wire.parse_call(resp)
                if not ok:
                    errors += 1
                    first_bad = first_bad or f"{problem} {resp.body[:300]!r}"
                elif value.get("timedOut"):
                    timed_out += 1
                elif eid not in [e.get("id") for e in value.get("events", [])]:
                    missed += 1
                    first_bad = first_bad or f"events {value.get('events')!r}"[:300]
                else:
                    got.append(t1 - t0)
            for what, count in (
                ("failed or unanswered wait_for_events", errors),
                ("timed out instead of waking", timed_out),
                ("woke without the written event", missed),
            ):
                if count:
                    fails.add(
                        f"push (many waiters): {what}",
                        f"round {r + 1}: {count} of {n}; first: {first_bad}",
                        count,
                    )
            got.sort()
            out.rounds.append(
                {
                    "arm_seconds": settle,
                    "arm_started": t_arm,
                    "write_seconds": dt,
                    "woken": len(got),
                    "first": got[0] if got else float("nan"),
                    "median": got[len(got) // 2] if got else float("nan"),
                    "last": got[-1] if got else float("nan"),
                    "early": len(early),
                    "failed": errors + timed_out + missed,
                    "seconds": got,  # every woken waiter's, sorted (bench/wakes.py's p99)
                }
            )
            # Any connection that failed is closed by wire.Connection; it reopens next round.
    finally:
        await writer.close()
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
    return out
