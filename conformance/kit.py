"""The kit's machinery: the check registry, one MCP session per team key (`Conn`), rooms
that add their own roomId (`Room`), and what a check is handed (`Ctx`).

A check is an async function that raises `Failed` (through `expect`) or `Skipped`; the
runner turns that into FAIL, SKIP or PASS. Every tool call goes through `Conn.send`, which
is where the kit's two rules live: a tool the server does not list is a SKIP, never a FAIL,
and a protocol error or transport failure where a tool result was due is always a FAIL —
an agent can correct a tool error, it cannot correct a broken connection.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import sys
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation, TextContent

Kind = Literal["call", "bad input", "behaviour"]
# "protocol": what TOOLS.md states without marking it; "ours": what it marks **ours**
# (stronger semantics than roomd's, or tools roomd does not have).
Source = Literal["protocol", "ours"]

KIT_VERSION = "1.0"
CLIENT_INFO = Implementation(name="room-protocol-conformance", version=KIT_VERSION)


class Skipped(Exception):
    """The check cannot run here (a tool it needs is not offered, or KEY_B is missing)."""


class Failed(AssertionError):
    """The server broke the contract; the message says how, for the report."""


def expect(condition: object, message: str) -> None:
    """Fail the check with `message` unless `condition` holds."""
    if not condition:
        raise Failed(message)


def clip(text: str, limit: int = 160) -> str:
    """One line of at most `limit` characters, for the report."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Answer:
    """One tool result: `ok` is False for a tool error (isError), whose `text` is its message."""

    ok: bool
    value: Any
    text: str
    structured: Any


@dataclass
class Tally:
    """What the kit saw across every session, for the report and the checks about it."""

    calls: int = 0
    called: set[str] = field(default_factory=set)
    # Tools whose object result came without structuredContent, or with another one
    # (TOOLS.md asks for the same object): tool -> "missing" or "differs".
    unstructured: dict[str, str] = field(default_factory=dict)
    # Waiting out the server's rate limit: how long in all (overlapping waits of concurrent
    # calls count once), until when, and how long the run may wait before it gives up.
    rate_waited: float = 0.0
    rate_until: float = 0.0
    rate_budget: float = 180.0
    rate_said: bool = False


RATE_LIMIT_WORDS = ("rate limit", "too many requests")
RETRY_AFTER = re.compile(r"retry after (\d+(?:\.\d+)?)\s*s", re.IGNORECASE)


class _RateLimited(Exception):
    """The server refused the call for its rate limit: wait, then send it again."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        found = RETRY_AFTER.search(text)
        self.wait = min(float(found.group(1)) if found else 5.0, 65.0)


def _rate_limited(text: str, *, http: bool = False) -> bool:
    said = text.lower()
    return any(word in said for word in RATE_LIMIT_WORDS) or (http and "429" in said)


def _rename(args: dict[str, Any]) -> dict[str, Any]:
    """`from_` (a Python keyword) is sent as `from`; everything else as it is named."""
    return {(k[:-1] if k.endswith("_") else k): v for k, v in args.items()}


class Conn:
    """One MCP session holding one team's key."""

    def __init__(
        self, client: Client, offered: frozenset[str], label: str, tally: Tally, timeout: float
    ) -> None:
        self.client = client
        self.offered = offered
        self.label = label
        self.tally = tally
        self.timeout = timeout

    def room(self, room_id: str) -> Room:
        return Room(self, room_id)

    async def send(self, tool: str, args: dict[str, Any]) -> Answer:
        """Call `tool`; a tool error comes back as an Answer with ok False, while a protocol
        error, a timeout or a broken transport fails the check (it is never what an agent
        that sent a bad argument should meet). A rate-limited call says nothing about the
        contract: it is sent again once the server's Retry-After has passed."""
        if tool not in self.offered:
            raise Skipped(f"needs {tool}, which the server does not offer")
        while True:
            try:
                return await self._send_once(tool, args)
            except _RateLimited as limited:
                await self._wait_out(tool, limited)

    async def _wait_out(self, tool: str, limited: _RateLimited) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        until = now + limited.wait
        tally = self.tally
        if until > tally.rate_until:
            tally.rate_waited += until - max(now, tally.rate_until)
            tally.rate_until = until
        if tally.rate_waited > tally.rate_budget:
            raise Failed(
                f"{tool} was still rate limited after {tally.rate_waited:.0f} s of waiting "
                f"({clip(str(limited), 100)}): run the kit with a key whose team may make "
                f"{tally.calls} calls a minute"
            )
        if not tally.rate_said:  # the first wait of the run: say why it pauses
            tally.rate_said = True
            print(
                f"conformance: rate limited at call {tally.calls}; waiting "
                f"{limited.wait:.0f} s ({clip(str(limited), 100)})",
                file=sys.stderr,
            )
        await asyncio.sleep(until - now)

    async def _send_once(self, tool: str, args: dict[str, Any]) -> Answer:
        self.tally.calls += 1
        self.tally.called.add(tool)
        try:
            result = await self.client.call_tool(tool, args, read_timeout_seconds=self.timeout)
        except MCPError as exc:
            if _rate_limited(exc.message):
                raise _RateLimited(exc.message) from exc
            raise Failed(
                f"{tool} answered a protocol error ({exc.code}: {clip(exc.message, 200)}) "
                "where a tool result (isError for bad input) was due"
            ) from exc
        except RuntimeError as exc:  # the client's check of structuredContent vs outputSchema
            raise Failed(f"{tool}: {clip(str(exc), 300)}") from exc
        except Exception as exc:  # any transport failure is this check's FAIL
            if _rate_limited(str(exc), http=True):
                raise _RateLimited(str(exc)) from exc
            raise Failed(
                f"{tool}: transport failure {type(exc).__name__}: {clip(str(exc))}"
            ) from exc
        texts = [block.text for block in result.content if isinstance(block, TextContent)]
        text = texts[0] if texts else ""
        if result.is_error:
            if _rate_limited(text):
                raise _RateLimited(text)
            return Answer(ok=False, value=None, text=text, structured=result.structured_content)
        expect(texts, f"{tool} returned no text content")
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise Failed(f"{tool} returned text that is not JSON: {clip(text)}") from exc
        structured = result.structured_content
        # Judged once, over the whole run (checks_wire), so one convention missed does not
        # hide every other result of the run.
        if isinstance(value, dict) and structured != value:
            self.tally.unstructured[tool] = "missing" if structured is None else "differs"
        elif isinstance(value, list) and structured not in (None, value, {"result": value}):
            self.tally.unstructured[tool] = "differs"
        return Answer(ok=True, value=value, text=text, structured=structured)

    async def call(self, tool: str, **args: Any) -> Any:
        """A call that must succeed; returns its JSON result."""
        answer = await self.send(tool, _rename(args))
        expect(answer.ok, f"{tool} refused a valid call: {clip(answer.text, 300)}")
        return answer.value

    async def refuse(self, tool: str, **args: Any) -> str:
        """A call that must be answered with a tool error; returns its message."""
        answer = await self.send(tool, _rename(args))
        expect(
            not answer.ok,
            f"{tool} accepted bad input {clip(json.dumps(_rename(args)), 120)}: "
            f"{clip(answer.text, 160)}",
        )
        expect(answer.text.strip(), f"{tool}: a tool error with no message")
        return answer.text

    async def attempt(self, tool: str, **args: Any) -> Answer:
        """A call whose success or tool error are both answers (races, either-way rules)."""
        return await self.send(tool, _rename(args))


@dataclass(frozen=True, slots=True)
class Room:
    """A room seen through one session: every call carries its roomId (unless given)."""

    conn: Conn
    room_id: str

    def _args(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"roomId": self.room_id, **args}

    async def call(self, tool: str, **args: Any) -> Any:
        return await self.conn.call(tool, **self._args(args))

    async def refuse(self, tool: str, **args: Any) -> str:
        return await self.conn.refuse(tool, **self._args(args))

    async def attempt(self, tool: str, **args: Any) -> Answer:
        return await self.conn.attempt(tool, **self._args(args))


async def open_conn(
    stack: AsyncExitStack,
    url: str,
    key: str,
    *,
    label: str,
    mode: str,
    tally: Tally,
    timeout: float,
) -> Conn:
    """A session with `key` (Bearer), its tools listed once so that the client validates
    every structured result against the tool's outputSchema without asking again."""
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=timeout)
    )
    client = await stack.enter_async_context(
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            client_info=CLIENT_INFO,
            read_timeout_seconds=timeout,
        )
    )
    names: set[str] = set()
    cursor: str | None = None
    while True:
        listed = await client.list_tools(cursor=cursor)
        names.update(tool.name for tool in listed.tools)
        cursor = listed.next_cursor
        if not cursor:
            break
    return Conn(client, frozenset(names), label, tally, timeout)


Opener = Callable[[str], Awaitable[Conn]]

# Besides its main room (conf-<8 hex>), a run uses only these, named conf-<8 hex>-<label>:
# on a server that caps a team's rooms, every run costs this many plus one.
ROOMS = {
    "tpl": "made from a template, then counted (get_room_info, get_my_summary)",
    "settings": "its mode and status change (evidenceRequired, paused, completed, archived)",
    "events": "an event log of the event checks' own",
    "mail": "a presence list of its own, for the message selectors",
    "team": "team A's room, which team B tries to read and write",
}


class Ctx:
    """What every check is handed: team A's session and main room, other rooms of this
    run, team B's session (when KEY_B was given), and extra sessions of team A for races."""

    def __init__(
        self,
        *,
        base: str,
        a: Conn,
        b: Conn | None,
        open_a: Opener,
    ) -> None:
        self.base = base
        self.conn_a = a
        self.conn_b = b
        self._open_a = open_a
        self._pool: list[Conn] = []
        self._serial = 0

    @property
    def a(self) -> Room:
        """The run's main room, as team A."""
        return self.conn_a.room(self.base)

    def room(self, label: str) -> Room:
        """Another room of this run (its own plan, log and settings), as team A."""
        assert label in ROOMS, f"a run's rooms are listed in ROOMS: {label!r} is not"
        return self.conn_a.room(f"{self.base}-{label}")

    def b(self, room: Room) -> Room:
        """The same room id through team B's key."""
        if self.conn_b is None:
            raise Skipped("no KEY_B given: a key of a second team is needed for this check")
        return self.conn_b.room(room.room_id)

    def unique(self, label: str) -> str:
        """A name no earlier call of this run used."""
        self._serial += 1
        return f"{label}-{self._serial}-{secrets.token_hex(3)}"

    async def sessions(self, count: int) -> list[Conn]:
        """`count` separate sessions of team A (opened once, reused by every race)."""
        while len(self._pool) < count:
            self._pool.append(await self._open_a(f"agent-{len(self._pool) + 1}"))
        return self._pool[:count]


CheckBody = Callable[[Ctx], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report. `tools` are what it is about: when any is not offered it is
    a SKIP "not offered"; `needs_b` checks skip without KEY_B."""

    name: str
    kind: Kind
    source: Source
    tools: tuple[str, ...]
    needs_b: bool
    body: CheckBody
    why: str

    @property
    def module(self) -> str:
        return self.body.__module__


CHECKS: list[Check] = []


def check(
    name: str,
    *tools: str,
    kind: Kind = "behaviour",
    source: Source = "protocol",
    needs_b: bool = False,
) -> Callable[[CheckBody], CheckBody]:
    """Register a check; its docstring says why it matters (shown by --list)."""

    def register(body: CheckBody) -> CheckBody:
        why = " ".join((body.__doc__ or "").split())
        CHECKS.append(Check(name, kind, source, tools, needs_b, body, why))
        return body

    return register


def tool_call(tool: str, *, source: Source = "protocol") -> Callable[[CheckBody], CheckBody]:
    """The tool's valid call, whose result must have the shape TOOLS.md gives it."""
    return check(tool, tool, kind="call", source=source)


def tool_bad(tool: str, *, source: Source = "protocol") -> Callable[[CheckBody], CheckBody]:
    """The tool's bad-input call, which must be a tool error (isError), never a protocol
    error or a broken transport."""
    return check(tool, tool, kind="bad input", source=source)


def names(items: Iterable[Any], key: str) -> list[Any]:
    """`key` of every object in `items` (the ids of a list of tasks, say)."""
    return [item.get(key) for item in items if isinstance(item, dict)]
