"""`make bench` section "paper": the figures the paper says the protocol should be
judged by (docs/protocol.md "Measuring it"), measured on a scripted two-agent handoff
instead of argued.

1. Coordination overhead: tool calls per handoff. A backend agent (A) and a frontend agent
   (B), each with its own session of the official `mcp` client, run HANDOFFS handoffs one
   after the other in one room. Per handoff: A plans two tasks, claims the API task,
   publishes an api_contract, completes the task, claims the client task and offers it to
   B (handoff_task, the contract attached); B looks around (get_my_summary), accepts, reads
   the contract, and mid-stream files a change_request; A wakes on it (wait_for_events),
   answers by updating the contract and replying to the request; B wakes on the update,
   reads the new version and completes its task. Every call either agent makes is counted
   by tool name. The script is sequential (each agent acts once the other has), so the
   count is the designed flow's, like the paper's trace of its Figure 3.
2. Cold start: after the first handoff and after the last, a newcomer in a fresh session
   gets oriented (the plan, every contract's current payload, what happened) two ways: the
   protocol's (get_my_summary, read_plan, list_context of the api_contracts) and replaying
   the log (get_unread_events pages of 100 until a short page, then the same list_context:
   the log carries every task but no context payload). Bytes = the JSON text of the
   results, what an agent would read into its context: the proxy for the paper's tokens.
3. Staleness window: from just before an update_context is sent to the moment the consumer
   has the context_updated event carrying that version, through wait_for_events, the SSE
   stream and a webhook (push.py's stream reader and receiver), UPDATES updates each.
   These use the bench's raw JSON-RPC client, not the `mcp` one, so they describe the
   server's push path and not the client's cost.

Knobs (env): BENCH_PAPER_HANDOFFS (20), BENCH_PAPER_UPDATES (100 per push path),
BENCH_PAPER_MODE ("legacy" or "2026-07-28": the mcp client's protocol mode).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import statistics
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bench import push, wire
from bench.stats import env_int, percentile

HANDOFFS = max(1, env_int("BENCH_PAPER_HANDOFFS", 20))
UPDATES = max(1, env_int("BENCH_PAPER_UPDATES", 100))
MODE = os.environ.get("BENCH_PAPER_MODE", "legacy")
STALE_WARM = 5
REPLAY_PAGE = 100
# An agent that waits for a specific event gives up after this many wait_for_events calls.
WAIT_CALLS_MAX = 5
WAIT_MS = 5_000
# The longest one part of the section may take before it gives up (TimeoutError).
PART_TIMEOUT = 120.0
BACKEND, FRONTEND = "backend", "frontend"


class Fails(Protocol):
    def add(self, check: str, detail: str = "", n: int = 1) -> None: ...


class ScriptError(Exception):
    """A step of the script got an answer the script cannot go on from."""


# --- Figures -------------------------------------------------------------------------------


@dataclass
class ColdStart:
    label: str
    events: int  # in the room's log when the newcomer arrived
    summary_calls: Counter[str] = field(default_factory=Counter)
    summary_bytes: Counter[str] = field(default_factory=Counter)  # tool -> bytes
    replay_calls: Counter[str] = field(default_factory=Counter)
    replay_bytes: Counter[str] = field(default_factory=Counter)


@dataclass
class Staleness:
    """One push path: update_context -> the consumer has that version (seconds)."""

    seconds: list[float] = field(default_factory=list)
    write_seconds: list[float] = field(default_factory=list)  # update_context's round trip
    sent: int = 0
    missed: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    note: str = ""


@dataclass
class PaperFigures:
    mode: str = MODE
    # One Counter per handoff: "<agent>:<tool>" -> calls.
    handoffs: list[Counter[str]] = field(default_factory=list)
    handoff_seconds: float = 0.0
    built_on_latest: int = 0  # handoffs whose consumer read the contract's latest version
    saw_every_version: int = 0  # handoffs whose consumer saw 1.0 and the update
    cold: list[ColdStart] = field(default_factory=list)
    stale: dict[str, Staleness] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


# --- An agent on the official mcp client ----------------------------------------------------


class Agent:
    """One agent's session of the official `mcp` client, counting what it costs: calls by
    tool name and the bytes of the results' JSON text (what a model would read)."""

    def __init__(self, name: str, client: Any) -> None:
        self.name, self.client = name, client
        self.calls: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()  # tool -> bytes of its results

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        self.calls[tool] += 1
        result = await self.client.call_tool(tool, args)
        text = "".join(getattr(c, "text", "") for c in result.content)
        self.bytes[tool] += len(text.encode())
        if result.is_error:
            raise ScriptError(f"{self.name}: {tool} {json.dumps(args)[:300]} -> {text[:400]}")
        return json.loads(text)


@contextlib.asynccontextmanager
async def session(url: str, secret: str, name: str) -> AsyncIterator[Agent]:
    """A fresh client session, opened as tests/e2e/mcp_clients.py opens one."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=MODE) as client,
    ):
        yield Agent(name, client)


async def wait_until(
    agent: Agent, room: str, wanted: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """wait_for_events (addressed to the agent) until an event `wanted` accepts arrives:
    how an idle agent learns something happened without polling."""
    for _ in range(WAIT_CALLS_MAX):
        got = await agent.call(
            "wait_for_events",
            {
                "roomId": room,
                "agentId": agent.name,
                "timeoutMs": WAIT_MS,
                "addressedOnly": True,
            },
        )
        for event in got.get("events", []):
            if wanted(event):
                return dict(event)
    raise ScriptError(f"{agent.name}: the awaited event never came ({WAIT_CALLS_MAX} waits)")


# --- 1. The scripted handoff ------------------------------------------------------------------


def contract(service: str, revision: int) -> dict[str, Any]:
    """An api_contract payload; revision 1 on adds the `currency` the client asked for."""
    order: dict[str, Any] = {"id": "string", "total": "number", "createdAt": "string"}
    if revision:
        order["currency"] = "string (ISO 4217)"
    return {
        "service": service,
        "version": f"1.{revision}",
        "base_url": f"/api/{service}",
        "endpoints": [
            {
                "method": "GET",
                "path": "/orders",
                "response": {"orders": [order], "next": "string|null"},
                "auth_required": True,
                "description": "The caller's orders, newest first, 50 a page.",
            },
            {
                "method": "POST",
                "path": "/orders",
                "request": {"items": [{"sku": "string", "qty": "integer"}]},
                "response": order,
                "auth_required": True,
                "description": "Place an order.",
            },
        ],
    }


async def handoff(a: Agent, b: Agent, room: str, k: int, figs: PaperFigures) -> Counter[str]:
    """One handoff, feature k; returns the calls each agent made, "<agent>:<tool>"."""
    before = {a.name: Counter(a.calls), b.name: Counter(b.calls)}
    r = {"roomId": room}
    service = f"orders-{k}"
    # B is in the room (a handoff goes only to an agent the room knows); A starts its shift.
    await b.call("heartbeat", {**r, "agentId": b.name})
    await a.call("heartbeat", {**r, "agentId": a.name})
    api = await a.call(
        "add_task",
        {
            **r,
            "title": f"Feature {k}: {service} API",
            "description": "List and place orders.",
            "agentId": a.name,
        },
    )
    ui = await a.call(
        "add_task",
        {
            **r,
            "title": f"Feature {k}: {service} client",
            "description": "The orders page, against the published contract.",
            "depends_on": [api["id"]],
            "agentId": a.name,
        },
    )
    await a.call("claim_task", {**r, "taskId": api["id"], "agentId": a.name})
    entry = await a.call(
        "write_context",
        {
            **r,
            "type": "api_contract",
            "summary": f"{service}: list and place orders",
            "consuming_agents": [b.name],
            "payload": contract(service, 0),
            "author": a.name,
        },
    )
    await a.call(
        "update_task",
        {
            **r,
            "taskId": api["id"],
            "status": "done",
            "note": f"Live; contract {entry['id']}",
            "agentId": a.name,
        },
    )
    await a.call("claim_task", {**r, "taskId": ui["id"], "agentId": a.name})
    await a.call(
        "handoff_task",
        {
            **r,
            "taskId": ui["id"],
            "from": a.name,
            "to": b.name,
            "note": "The API is done; build the page against the contract.",
            "contextIds": [entry["id"]],
        },
    )

    summary = await b.call("get_my_summary", {**r, "agentId": b.name})
    offers = [h for h in summary.get("pendingHandoffs", []) if h.get("taskId") == ui["id"]]
    if not offers:
        raise ScriptError(f"get_my_summary lacks the handoff of {ui['id']}: {summary}")
    await b.call("accept_handoff", {**r, "handoffId": offers[0]["id"], "agentId": b.name})
    first = await b.call("read_context", {**r, "id": entry["id"], "agentId": b.name})
    seen = {first["version"]}
    request = await b.call(
        "write_context",
        {
            **r,
            "type": "change_request",
            "summary": f"{service}: the page needs each order's currency",
            "consuming_agents": [a.name],
            "payload": {
                "requested_by": b.name,
                "target_agent": a.name,
                "description": "Totals are shown with their currency: add it to the order.",
                "urgency": "high",
                "blocking_task_id": ui["id"],
            },
            "author": b.name,
        },
    )

    asked = await wait_until(
        a,
        room,
        lambda e: (
            e.get("type") == "context_available"
            and (e.get("payload") or {}).get("id") == request["id"]
        ),
    )
    updated = await a.call(
        "update_context",
        {
            **r,
            "id": entry["id"],
            "author": a.name,
            "payload": contract(service, 1),
            "expectedVersion": entry["version"],
        },
    )
    await a.call(
        "reply_to_event",
        {
            **r,
            "replyToId": asked["id"],
            "type": "change_done",
            "from": a.name,
            "to": b.name,
            "payload": {"contextId": entry["id"], "version": updated["version"]},
        },
    )

    told = await wait_until(
        b,
        room,
        lambda e: (
            e.get("type") == "context_updated" and (e.get("payload") or {}).get("id") == entry["id"]
        ),
    )
    seen.add(told["payload"].get("version"))
    latest = await b.call("read_context", {**r, "id": entry["id"], "agentId": b.name})
    seen.add(latest["version"])
    await b.call(
        "update_task",
        {
            **r,
            "taskId": ui["id"],
            "status": "done",
            "note": f"Built against {entry['id']} v{latest['version']}",
            "agentId": b.name,
        },
    )

    if seen == {entry["version"], updated["version"]}:
        figs.saw_every_version += 1
    endpoints = latest.get("payload", {}).get("endpoints", [{}])
    if latest["version"] == updated["version"] and "currency" in endpoints[-1].get("response", {}):
        figs.built_on_latest += 1
    calls: Counter[str] = Counter()
    for agent in (a, b):
        for tool, n in (agent.calls - before[agent.name]).items():
            calls[f"{agent.name}:{tool}"] += n
    return calls


# --- 2. Cold start ---------------------------------------------------------------------------


async def cold_start(
    url: str,
    secret: str,
    ep: wire.McpEndpoint,
    room: str,
    label: str,
    latest: dict[str, str],
    fails: Fails,
) -> ColdStart:
    """Two newcomers, each in a fresh session: one orients with the summary, the other by
    replaying the log. Both must end up with every contract at its latest version."""
    conn = ep.connection()
    try:
        info = await wire.call_tool(conn, ep, "get_room_info", {"roomId": room})
    finally:
        await conn.close()
    events = int(info.value.get("eventCount", 0)) if info.ok else -1
    out = ColdStart(label, events)
    tag = secrets.token_hex(2)
    r = {"roomId": room}

    def check(arm: str, listed: list[dict[str, Any]]) -> None:
        have = {e["id"]: e["version"] for e in listed}
        stale = {cid: (v, have.get(cid)) for cid, v in latest.items() if have.get(cid) != v}
        if stale:
            fails.add(
                f"paper: cold start ({arm}) lacks a contract's latest version",
                f"{label}: {len(stale)} of {len(latest)}, e.g. {next(iter(stale.items()))}",
            )

    async with session(url, secret, f"replayer-{tag}") as n:
        got = 0
        while True:
            page = await n.call("get_unread_events", {**r, "agentId": n.name, "limit": REPLAY_PAGE})
            got += page["count"]
            if page["count"] < REPLAY_PAGE:
                break
        check("replay", await n.call("list_context", {**r, "type": "api_contract"}))
        out.replay_calls, out.replay_bytes = n.calls, n.bytes
        if events >= 0 and got != events:
            fails.add("paper: the replay missed events", f"{label}: {got} of {events}")

    async with session(url, secret, f"newcomer-{tag}") as n:
        summary = await n.call("get_my_summary", {**r, "agentId": n.name})
        plan = await n.call("read_plan", r)
        check("summary", await n.call("list_context", {**r, "type": "api_contract"}))
        out.summary_calls, out.summary_bytes = n.calls, n.bytes
        if summary.get("newContextCount", 0) < len(latest):
            fails.add(
                "paper: get_my_summary's newContextCount misses entries",
                f"{label}: {summary.get('newContextCount')} < {len(latest)} contracts",
            )
        if any(t.get("status") != "done" for t in plan.get("tasks", [])):
            fails.add("paper: read_plan after the handoffs has unfinished tasks", label)
    return out


async def contract_versions(ep: wire.McpEndpoint, room: str) -> dict[str, str]:
    """Every api_contract's current version: the bench's own look (no agent's call)."""
    conn = ep.connection()
    try:
        res = await wire.call_tool(
            conn, ep, "list_context", {"roomId": room, "type": "api_contract"}
        )
    finally:
        await conn.close()
    if not res.ok:
        raise ScriptError(res.describe())
    listed = res.value if isinstance(res.value, list) else res.value.get("result", [])
    return {e["id"]: e["version"] for e in listed}


async def handoffs_and_cold_start(
    url: str, secret: str, ep: wire.McpEndpoint, figs: PaperFigures, fails: Fails
) -> None:
    room = f"bench-paper-{secrets.token_hex(4)}"
    latest: dict[str, str] = {}
    t0 = time.perf_counter()
    async with session(url, secret, BACKEND) as a, session(url, secret, FRONTEND) as b:
        for k in range(1, HANDOFFS + 1):
            figs.handoffs.append(await handoff(a, b, room, k, figs))
            if k == 1 or k == HANDOFFS:
                figs.handoff_seconds += time.perf_counter() - t0
                latest = await contract_versions(ep, room)
                label = f"after {k} handoff{'s' if k > 1 else ''}"
                figs.cold.append(await cold_start(url, secret, ep, room, label, latest, fails))
                t0 = time.perf_counter()
    done = len(figs.handoffs)
    if figs.saw_every_version != done:
        fails.add(
            "paper: the consumer did not see every contract version",
            f"{done - figs.saw_every_version} of {done} handoffs",
            done - figs.saw_every_version,
        )
    if figs.built_on_latest != done:
        fails.add(
            "paper: the consumer did not build against the latest contract",
            f"{done - figs.built_on_latest} of {done} handoffs",
            done - figs.built_on_latest,
        )


# --- 3. Staleness window ---------------------------------------------------------------------


class Consumer(Protocol):
    """A way of observing context_updated: armed before each update, then asked for the
    arrival time of the event carrying `version` of `entry` (None: it never came)."""

    async def arm(self) -> None: ...

    async def observe(self, entry: str, version: str, deadline: float) -> float | None: ...


def _version_of(event: Any, entry: str) -> str | None:
    """The version a context_updated event of `entry` announces, else None."""
    if not isinstance(event, dict) or event.get("type") != "context_updated":
        return None
    payload = event.get("payload") or {}
    return str(payload.get("version")) if payload.get("id") == entry else None


class WaitConsumer:
    """A wait_for_events re-armed before each update, on its own keep-alive connection."""

    def __init__(self, ep: wire.McpEndpoint, room: str, agent: str, out: Staleness) -> None:
        self.ep, self.room, self.agent, self.out = ep, room, agent, out
        self.conn = wire.Connection(ep.host, ep.port, timeout=push.WAIT_TIMEOUT_MS / 1000 + 10)
        self.task: asyncio.Task[tuple[float, wire.Response]] | None = None

    async def arm(self) -> None:
        raw = push._wait_raw(self.ep, self.room, self.agent, push.WAIT_TIMEOUT_MS)
        self.task = asyncio.create_task(push._timed(self.conn.request(raw)))
        await asyncio.sleep(push.PUSH_GAP)
        if self.task.done():
            self.out.note = "a wait returned before the update"

    async def observe(self, entry: str, version: str, deadline: float) -> float | None:
        assert self.task is not None
        try:
            t1, resp = await asyncio.wait_for(self.task, max(0.0, deadline - time.perf_counter()))
        except (TimeoutError, wire.HttpError):
            await self.conn.close()
            return None
        ok, value, _ = wire.parse_call(resp)
        versions = [_version_of(e, entry) for e in (value or {}).get("events", [])] if ok else []
        return t1 if version in versions else None

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        await self.conn.close()


class FrameConsumer:
    """The SSE stream's frames or the webhook receiver's deliveries: a queue of
    (arrival, event JSON) that stays armed throughout."""

    def __init__(self, out: Staleness) -> None:
        self.out = out
        self.queue: asyncio.Queue[tuple[float, str]] = asyncio.Queue()
        self.seen: set[str] = set()

    async def arm(self) -> None:
        await asyncio.sleep(push.PUSH_GAP)

    async def observe(self, entry: str, version: str, deadline: float) -> float | None:
        while True:
            try:
                at, data = await asyncio.wait_for(
                    self.queue.get(), max(0.0, deadline - time.perf_counter())
                )
            except TimeoutError:
                return None
            try:
                got = _version_of(json.loads(data), entry)
            except ValueError:
                got = None
            if got is None:
                continue
            if got in self.seen:
                self.out.duplicates += 1
                continue
            self.seen.add(got)
            if got == version:
                return at
            self.out.out_of_order += 1


async def _pump_sse(stream: push.SseStream, into: FrameConsumer) -> None:
    while True:
        at, _, data = await stream.frames.get()
        into.queue.put_nowait((at, data))


async def _pump_hook(receiver: push.HookReceiver, into: FrameConsumer) -> None:
    while True:
        at, _, body = await receiver.arrivals.get()
        into.queue.put_nowait((at, body.decode("utf-8", "replace")))


async def _update_loop(
    ep: wire.McpEndpoint, room: str, entry: str, consumer: Consumer, out: Staleness
) -> list[str]:
    """STALE_WARM + UPDATES updates, one at a time; returns the versions written."""
    writer = ep.connection()
    written: list[str] = []
    misses_in_row = 0
    try:
        await writer.open()
        for i in range(STALE_WARM + UPDATES):
            await consumer.arm()
            args = {
                "roomId": room,
                "id": entry,
                "author": "producer",
                "payload": contract("stale", i + 1),
            }
            raw = ep.raw_call("update_context", args)
            t0 = time.perf_counter()
            resp = await writer.request(raw)
            dt = time.perf_counter() - t0
            ok, value, problem = wire.parse_call(resp)
            if not ok:
                raise ScriptError(f"update_context: {problem} {resp.body[:300]!r}")
            written.append(str(value["version"]))
            counted = i >= STALE_WARM
            out.sent += counted
            at = await consumer.observe(entry, written[-1], t0 + push.PUSH_TIMEOUT)
            if at is None:
                out.missed += counted
                misses_in_row += 1
                if misses_in_row >= push.GIVE_UP_AFTER:
                    out.missed += STALE_WARM + UPDATES - i - 1
                    out.note = f"gave up after {push.GIVE_UP_AFTER} misses in a row"
                    break
                continue
            misses_in_row = 0
            if counted:
                out.seconds.append(at - t0)
                out.write_seconds.append(dt)
    finally:
        await writer.close()
    return written


async def _stale_room(ep: wire.McpEndpoint, label: str) -> tuple[str, str]:
    """A room with one api_contract whose consumer is "consumer"; (room, entry id)."""
    room = f"bench-paper-{label}-{secrets.token_hex(3)}"
    conn = ep.connection()
    try:
        for agent in ("consumer", "producer"):
            await wire.call_tool(conn, ep, "heartbeat", {"roomId": room, "agentId": agent})
        res = await wire.call_tool(
            conn,
            ep,
            "write_context",
            {
                "roomId": room,
                "type": "api_contract",
                "summary": "The contract the staleness runs keep changing",
                "consuming_agents": ["consumer"],
                "payload": contract("stale", 0),
                "author": "producer",
            },
        )
        if not res.ok:
            raise ScriptError(res.describe())
        # The consumer is caught up: its next wait_for_events sees only the updates.
        while True:
            page = await wire.call_tool(
                conn, ep, "get_unread_events", {"roomId": room, "agentId": "consumer", "limit": 100}
            )
            if not page.ok or not page.value.get("count"):
                break
    finally:
        await conn.close()
    return room, str(res.value["id"])


async def stale_wait(ep: wire.McpEndpoint) -> Staleness:
    out = Staleness()
    room, entry = await _stale_room(ep, "wait")
    consumer = WaitConsumer(ep, room, "consumer", out)
    try:
        await _update_loop(ep, room, entry, consumer, out)
    finally:
        await consumer.close()
    return out


async def stale_sse(ep: wire.McpEndpoint) -> Staleness:
    out = Staleness()
    room, entry = await _stale_room(ep, "sse")
    stream = push.SseStream(ep.host, ep.port, room, ep.token)
    await stream.open()
    consumer = FrameConsumer(out)
    pump = asyncio.create_task(_pump_sse(stream, consumer))
    try:
        await _update_loop(ep, room, entry, consumer, out)
        if stream.error:
            out.note = stream.error
    finally:
        pump.cancel()
        await stream.close()
    return out


async def stale_hook(ep: wire.McpEndpoint) -> Staleness:
    out = Staleness()
    room, entry = await _stale_room(ep, "hook")
    receiver = push.HookReceiver()
    await receiver.start()
    path = f"/api/v1/rooms/{room}/webhooks"
    hook_id: Any = None
    pump: asyncio.Task[None] | None = None
    try:
        url = f"http://127.0.0.1:{receiver.port}/paper-hook"
        resp = await push._api(ep, "POST", path, {"url": url, "eventTypes": ["context_updated"]})
        reg = json.loads(resp.body) if resp.status in (200, 201) else {}
        if not isinstance(reg, dict) or not reg.get("secret"):
            raise ScriptError(f"webhook registration: HTTP {resp.status} {resp.body[:300]!r}")
        receiver.secret, hook_id = str(reg["secret"]), reg.get("id")
        consumer = FrameConsumer(out)
        pump = asyncio.create_task(_pump_hook(receiver, consumer))
        await _update_loop(ep, room, entry, consumer, out)
    finally:
        if pump is not None:
            pump.cancel()
        if hook_id is not None:  # stop deliveries before the receiver goes away
            with contextlib.suppress(wire.HttpError):
                await push._api(ep, "POST", f"{path}/{hook_id}/disable")
        await receiver.stop()
    if receiver.bad_signatures:
        out.note = f"{receiver.bad_signatures} bad signature(s)"
    return out


# --- The section -----------------------------------------------------------------------------


async def measure(url: str, secret: str, ep: wire.McpEndpoint, fails: Fails) -> PaperFigures:
    """Each part on its own: one that cannot run is reported, the others still are."""
    figs = PaperFigures()
    try:
        async with asyncio.timeout(PART_TIMEOUT):
            await handoffs_and_cold_start(url, secret, ep, figs, fails)
    except Exception as exc:  # a refused step, the mcp client's MCPError, a timeout, ...
        problem = f"handoffs: {type(exc).__name__}: {exc}"
        figs.problems.append(problem)
        fails.add("paper: the scripted handoff could not run", problem[:600])
    for key, run in (("wait", stale_wait), ("sse", stale_sse), ("hook", stale_hook)):
        try:
            async with asyncio.timeout(PART_TIMEOUT):
                figs.stale[key] = out = await run(ep)
        except Exception as exc:
            problem = f"staleness ({key}): {type(exc).__name__}: {exc}"
            figs.problems.append(problem)
            fails.add("paper: a staleness run could not run", problem[:600])
            continue
        bad = out.missed + out.duplicates + out.out_of_order
        if bad or out.note:
            fails.add(
                f"paper: staleness ({key}): an update not observed exactly once, in order",
                f"missed {out.missed}, duplicates {out.duplicates}, out of order "
                f"{out.out_of_order}; {out.note}",
                max(bad, 1),
            )
    return figs


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        cells = [c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)]
        out.append(("    " + "  ".join(cells)).rstrip())
        if n == 0:
            out.append("    " + "  ".join("-" * w for w in widths))
    return out


def _calls(calls: Counter[str], sizes: Counter[str]) -> str:
    return ", ".join(
        f"{tool}{f' x{n}' if n > 1 else ''} {sizes[tool]:,} B" for tool, n in calls.items()
    )


def section(figs: PaperFigures) -> list[str]:
    lines = [
        "Paper figures (section paper): the paper's metrics on a scripted backend -> frontend "
        f"handoff with a mid-stream change request, official mcp client ({figs.mode})"
    ]
    n = len(figs.handoffs)
    if n:
        totals = [sum(c.values()) for c in figs.handoffs]
        per_agent = {
            who: statistics.mean(
                sum(v for k, v in c.items() if k.startswith(f"{who}:")) for c in figs.handoffs
            )
            for who in (BACKEND, FRONTEND)
        }
        lines.append(
            f"  1. Coordination tool calls per handoff ({n} handoffs, one room, "
            f"{figs.handoff_seconds / n * 1000:.0f} ms each): mean {statistics.mean(totals):.1f} "
            f"(min {min(totals)}, max {max(totals)}): backend {per_agent[BACKEND]:.1f}, "
            f"frontend {per_agent[FRONTEND]:.1f}"
        )
        summed: Counter[str] = sum(figs.handoffs, Counter())
        # In the order the script first calls them: the backend's, then the frontend's.
        tools = list(dict.fromkeys(k.split(":", 1)[1] for c in figs.handoffs for k in c))
        rows = [["tool (mean per handoff)", "backend", "frontend"]]
        for tool in tools:
            rows.append(
                [tool]
                + [
                    f"{summed[f'{who}:{tool}'] / n:.1f}" if summed[f"{who}:{tool}"] else "-"
                    for who in (BACKEND, FRONTEND)
                ]
            )
        lines += _table(rows)
        lines.append(
            f"     The frontend saw every contract version in {figs.saw_every_version}/{n} "
            f"handoffs and built against the latest in {figs.built_on_latest}/{n}; human "
            "interventions: 0 (scripted). The paper's trace of its Figure 3, without the change "
            "request: about 9 + 4."
        )
    if figs.cold:
        lines.append(
            "  2. Cold start: a newcomer in a fresh session gets oriented (plan, current "
            "contracts, what happened); bytes = the results' JSON text"
        )
        rows = [
            ["room", "events", "summary calls", "bytes", "replay calls", "bytes", "replay/summary"]
        ]
        for c in figs.cold:
            s_calls, r_calls = c.summary_calls.total(), c.replay_calls.total()
            s_bytes, r_bytes = c.summary_bytes.total(), c.replay_bytes.total()
            rows.append(
                [
                    c.label,
                    f"{c.events:,}",
                    str(s_calls),
                    f"{s_bytes:,}",
                    str(r_calls),
                    f"{r_bytes:,}",
                    f"{r_bytes / s_bytes if s_bytes else 0:.1f}x bytes, "
                    f"{r_calls / s_calls if s_calls else 0:.1f}x calls",
                ]
            )
        lines += _table(rows)
        for c in figs.cold:
            lines.append(
                f"     {c.label}: summary = {_calls(c.summary_calls, c.summary_bytes)}; "
                f"replay = {_calls(c.replay_calls, c.replay_bytes)}"
            )
        lines.append(
            f"     (replay: get_unread_events pages of {REPLAY_PAGE} until a short one; the log "
            "carries every task but no context payload. get_my_summary hands a newcomer the "
            "oldest 50 unread events.)"
        )
    if figs.stale:
        lines.append(
            f"  3. Staleness window: update_context -> the consumer has that version (ms, "
            f"p50 / p99; {UPDATES} updates per path after {STALE_WARM} warm-up, raw JSON-RPC)"
        )
        rows = [["path", "update -> observed", "update_context itself", "observed", "problems"]]
        for key, label in (("wait", "wait_for_events"), ("sse", "SSE stream"), ("hook", "webhook")):
            st = figs.stale.get(key)
            if st is None:
                rows.append([label, "-", "-", "-", "did not run"])
                continue
            problems = [
                f"{v} {what}"
                for v, what in (
                    (st.missed, "missed"),
                    (st.duplicates, "duplicate"),
                    (st.out_of_order, "out of order"),
                )
                if v
            ] + ([st.note] if st.note else [])
            cell = (
                f"{percentile(st.seconds, 50) * 1000:6.2f} / "
                f"{percentile(st.seconds, 99) * 1000:6.2f}"
                if st.seconds
                else "-"
            )
            wcell = (
                f"{percentile(st.write_seconds, 50) * 1000:6.2f} / "
                f"{percentile(st.write_seconds, 99) * 1000:6.2f}"
                if st.write_seconds
                else "-"
            )
            rows.append(
                [label, cell, wcell, f"{len(st.seconds)}/{st.sent}", ", ".join(problems) or "none"]
            )
        lines += _table(rows)
    for problem in figs.problems:
        lines.append(f"  could not run: {problem[:300]}")
    lines.append("")
    return lines
