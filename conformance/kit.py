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
import contextlib
import email.utils
import json
import re
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation, TextContent

Kind = Literal["call", "bad input", "behaviour"]
# "protocol": what docs/protocol.md states without marking it; "ours": what it marks **ours**
# (stronger semantics than roomd's, or tools roomd does not have).
Source = Literal["protocol", "ours"]

KIT_VERSION = "1.0"
CLIENT_INFO = Implementation(name="room-protocol-conformance", version=KIT_VERSION)


NOT_OFFERED = "not offered"
NO_KEY_B = "no KEY_B"
NO_BOUND_KEY = "no agent-bound key"


class Skipped(Exception):
    """The check cannot run here: `reason` is why in a few words, for the summary's count
    (NOT_OFFERED, NO_KEY_B, NO_BOUND_KEY), the message the whole story, for its line."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


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
    # (docs/protocol.md asks for the same object): tool -> "missing" or "differs".
    unstructured: dict[str, str] = field(default_factory=dict)
    # Waiting out the server's rate limit: how long in all (overlapping waits of concurrent
    # calls count once), until when, and how long the run may wait before it gives up.
    rate_waited: float = 0.0
    rate_until: float = 0.0
    rate_budget: float = 180.0
    rate_said: bool = False
    rate_waits: int = 0


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


class RateBudgetSpent(Exception):
    """The run waited out the server's rate limit for longer than it may (--rate-wait)."""


async def pace(tally: Tally, wait: float, why: str) -> None:
    """Wait `wait` seconds for the server's rate limit, saying so once per run (the first
    time only: a run under a limit waits many times). Concurrent waits count once."""
    loop = asyncio.get_running_loop()
    now = loop.time()
    until = now + wait
    if until > tally.rate_until:
        tally.rate_waited += until - max(now, tally.rate_until)
        tally.rate_until = until
    tally.rate_waits += 1
    if tally.rate_waited > tally.rate_budget:
        raise RateBudgetSpent(
            f"still rate limited after {tally.rate_waited:.0f} s of waiting ({why}): run the "
            f"kit with a key whose team may make more calls a minute, or a larger --rate-wait"
        )
    if not tally.rate_said:
        tally.rate_said = True
        print(
            f"conformance: the server rate-limits this key ({clip(why, 120)}); pacing: "
            f"waiting {wait:.0f} s as it asks, and after every later limit, up to "
            f"{tally.rate_budget:.0f} s in all (--rate-wait). The report gives the total.",
            file=sys.stderr,
            flush=True,
        )
    await asyncio.sleep(max(0.0, until - now))


def retry_after(header: str | None) -> float:
    """Seconds from a Retry-After header (seconds, or an HTTP date), 5 when absent, and
    at most 65 (a minute's window and a margin)."""
    if header:
        try:
            return min(max(float(header.strip()), 0.0), 65.0)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(header)
                return min(max(when.timestamp() - time.time(), 0.0), 65.0)
            except (TypeError, ValueError):
                pass
    return 5.0


class HttpWatch(httpx2.AsyncBaseTransport):
    """The kit's HTTP transport. It counts HTTP 429 answers and keeps their Retry-After
    (a server may limit before it reads any JSON-RPC, as roomd does: the MCP client then
    says only "Server returned an error response"), so that `Conn.send` can wait and send
    the call again outside the call's timeout; and it keeps the last answer, so that a
    session that cannot open says what it met."""

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.inner = inner or httpx2.AsyncHTTPTransport()
        self.limits = 0
        self.retry = 5.0
        self.last = ""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        self.last = f"{request.method} {request.url} answered HTTP {response.status_code}"
        if response.status_code == 429:
            self.retry = retry_after(response.headers.get("retry-after"))
            self.limits += 1
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _rename(args: dict[str, Any]) -> dict[str, Any]:
    """`from_` (a Python keyword) is sent as `from`; everything else as it is named."""
    return {(k[:-1] if k.endswith("_") else k): v for k, v in args.items()}


class Conn:
    """One MCP session holding one team's key."""

    def __init__(
        self,
        client: Client,
        offered: frozenset[str],
        label: str,
        tally: Tally,
        timeout: float,
        watch: HttpWatch | None = None,
        url: str = "",
    ) -> None:
        self.client = client
        self.url = url
        self.offered = offered
        self.label = label
        self.tally = tally
        self.timeout = timeout
        self.watch = watch

    def room(self, room_id: str) -> Room:
        return Room(self, room_id)

    async def send(self, tool: str, args: dict[str, Any]) -> Answer:
        """Call `tool`; a tool error comes back as an Answer with ok False, while a protocol
        error, a timeout or a broken transport fails the check (it is never what an agent
        that sent a bad argument should meet). A rate-limited call says nothing about the
        contract: it is sent again once the server's Retry-After has passed."""
        if tool not in self.offered:
            raise Skipped(f"needs {tool}, which the server does not offer", reason=NOT_OFFERED)
        while True:
            try:
                return await self._send_once(tool, args)
            except _RateLimited as limited:
                try:
                    await pace(self.tally, limited.wait, f"{tool}: {clip(str(limited), 100)}")
                except RateBudgetSpent as spent:
                    raise Failed(f"{tool}: {spent}") from None

    async def _send_once(self, tool: str, args: dict[str, Any]) -> Answer:
        self.tally.calls += 1
        self.tally.called.add(tool)
        limits = self.watch.limits if self.watch else 0
        try:
            result = await self.client.call_tool(tool, args, read_timeout_seconds=self.timeout)
        except MCPError as exc:
            if _rate_limited(exc.message):
                raise _RateLimited(exc.message) from exc
            if self.watch and self.watch.limits > limits:
                raise _RateLimited(
                    f"HTTP 429 Too Many Requests; retry after {self.watch.retry:.0f} s"
                ) from exc
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
    every structured result against the tool's outputSchema without asking again. A server
    that answers the opening with HTTP 429 is waited out (its Retry-After) and asked again;
    any other failure is raised, with what the server answered (`SessionFailed`)."""
    while True:
        watch = HttpWatch()
        session = AsyncExitStack()
        try:
            http = await session.enter_async_context(
                httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {key}"}, timeout=timeout, transport=watch
                )
            )
            client = await session.enter_async_context(
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
        except Exception as exc:
            with contextlib.suppress(Exception):
                await session.aclose()
            if watch.limits:
                why = f"opening a session at {url}: HTTP 429, Retry-After {watch.retry:.0f}"
                try:
                    await pace(tally, watch.retry, why)
                except RateBudgetSpent as spent:
                    raise SessionFailed(str(spent), watch.last) from exc
                continue
            raise SessionFailed(_innermost_text(exc), watch.last) from exc
        await stack.enter_async_context(session)
        return Conn(client, frozenset(names), label, tally, timeout, watch, url)


class SessionFailed(Exception):
    """No MCP session could be opened: why, and the server's last HTTP answer."""

    def __init__(self, why: str, answered: str) -> None:
        super().__init__(why)
        self.why = why
        self.answered = answered


def _innermost_text(exc: BaseException) -> str:
    """The first real failure inside the task groups the client opens a session in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {clip(str(exc), 300)}"


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


KeyOpener = Callable[[str, str], Awaitable[Conn]]


class Rest:
    """The server's REST API beside its MCP endpoint (ours: `/api/v1`), for what no tool
    does: minting an agent-bound key, removing a room. A server without one answers 404 or
    405, and the kit then says what it could not do."""

    def __init__(self, mcp_url: str, key: str, tally: Tally, timeout: float) -> None:
        parts = urlsplit(mcp_url)
        prefix = parts.path.rstrip("/").removesuffix("/mcp")
        self.root = urlunsplit((parts.scheme, parts.netloc, prefix, "", ""))  # roomd's /admin
        self.base = f"{self.root}/api/v1"
        self.key = key
        self.tally = tally
        self.timeout = timeout

    async def send(
        self, method: str, path: str, body: Any = None, *, at_root: bool = False
    ) -> httpx2.Response | None:
        """The answer, or None when the server could not be reached at all; an HTTP 429 is
        waited out like a tool's. `path` is under /api/v1 (ours), or under the server's
        root with `at_root` (roomd's /admin routes)."""
        url = f"{self.root if at_root else self.base}{path}"
        headers = {"Authorization": f"Bearer {self.key}"}
        async with httpx2.AsyncClient(timeout=self.timeout) as http:
            while True:
                try:
                    answer = await http.request(method, url, json=body, headers=headers)
                except httpx2.HTTPError:
                    return None
                if answer.status_code != 429:
                    return answer
                wait = retry_after(answer.headers.get("retry-after"))
                try:
                    await pace(self.tally, wait, f"HTTP 429 from {method} {url}")
                except RateBudgetSpent:
                    return answer


def _json_object(answer: httpx2.Response) -> dict[str, Any]:
    """The answer's JSON object, or {} when it is not one."""
    try:
        value = answer.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _said(answer: httpx2.Response | None) -> str:
    if answer is None:
        return "no answer"
    text = (
        answer.text if answer.headers.get("content-type", "").startswith("application/json") else ""
    )
    return f"HTTP {answer.status_code}" + (f" {clip(text, 120)}" if text else "")


class Ctx:
    """What every check is handed: team A's session and main room, other rooms of this
    run, team B's session (when KEY_B was given), extra sessions of team A for races, and
    sessions whose key is bound to one agent (minted through the server's REST API)."""

    def __init__(
        self,
        *,
        base: str,
        a: Conn,
        b: Conn | None,
        open_a: Opener,
        open_key: KeyOpener | None = None,
        rest: Rest | None = None,
    ) -> None:
        self.base = base
        self.conn_a = a
        self.conn_b = b
        self._open_a = open_a
        self._open_key = open_key
        self.rest = rest
        self._pool: list[Conn] = []
        self._serial = 0
        self._bound: dict[str, Conn] = {}
        self.minted: list[Minted] = []  # the keys to revoke at the end
        self.touched: dict[str, None] = {}  # the rooms this run used, in order
        self._undo: list[Callable[[], Awaitable[object]]] = []

    def finally_(self, step: Callable[[], Awaitable[object]]) -> None:
        """Run `step` when the check ends, whatever its outcome (a lock released, a room's
        status put back), so that no check's failure becomes the next one's: the runner
        runs them newest first, and a step's own failure is ignored. Register it before
        the call it undoes, since that call may fail after it took effect."""
        self._undo.append(step)

    async def undo(self, timeout: float) -> None:
        """The current check's cleanup steps (`finally_`), newest first."""
        steps, self._undo = self._undo[::-1], []
        for step in steps:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(timeout):
                    await step()

    @property
    def a(self) -> Room:
        """The run's main room, as team A."""
        self.touched.setdefault(self.base)
        return self.conn_a.room(self.base)

    def room(self, label: str) -> Room:
        """Another room of this run (its own plan, log and settings), as team A."""
        assert label in ROOMS, f"a run's rooms are listed in ROOMS: {label!r} is not"
        self.touched.setdefault(f"{self.base}-{label}")
        return self.conn_a.room(f"{self.base}-{label}")

    def b(self, room: Room) -> Room:
        """The same room id through team B's key."""
        if self.conn_b is None:
            raise Skipped(
                "no KEY_B given: a key of a second team is needed for this check", reason=NO_KEY_B
            )
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

    async def bound(self, agent: str, *, why: str) -> Conn:
        """A session of team A whose key is bound to `agent` (a server may let only such a
        key act as that agent, as roomd does for resolving reviews), minted for the run and
        revoked at its end: through our REST API (`POST /api/v1/keys` with `agentName`),
        else roomd's own (`POST /admin/keys` with `boundAgentId`). Skips, saying `why` the
        check needs one and what each way answered, when neither mints one."""
        if agent in self._bound:
            return self._bound[agent]
        if self.rest is None or self._open_key is None:
            raise Skipped(
                f"{why}; the kit has no way to mint an agent-bound key here", reason=NO_BOUND_KEY
            )
        tried: list[str] = []
        for way in MINTING:
            answer = await self.rest.send(
                "POST",
                way.path,
                way.body(f"conformance {self.base} {agent}", agent),
                at_root=way.at_root,
            )
            made = _json_object(answer) if answer is not None and answer.status_code < 300 else {}
            key_id, secret = made.get(way.id_field), made.get("secret")
            if key_id is not None and isinstance(secret, str):
                self.minted.append(Minted(str(key_id), f"a key bound to {agent}", way))
                conn = await self._open_key(secret, f"bound to {agent}")
                self._bound[agent] = conn
                return conn
            where = self.rest.root if way.at_root else self.rest.base
            tried.append(f"POST {where}{way.path} ({way.server}) answered {_said(answer)}")
        raise Skipped(
            f"{why}; minting a key bound to {agent}: " + "; ".join(tried), reason=NO_BOUND_KEY
        )


@dataclass(frozen=True, slots=True)
class Minting:
    """One server's way to mint an agent-bound key, and to revoke it again."""

    server: str
    path: str
    at_root: bool
    name_field: str
    agent_field: str
    id_field: str
    revoke: tuple[str, str]  # method, path with {id}

    def body(self, name: str, agent: str) -> dict[str, str]:
        return {self.name_field: name, self.agent_field: agent}


MINTING = (
    Minting("ours", "/keys", False, "name", "agentName", "id", ("POST", "/keys/{id}/revoke")),
    Minting(
        "roomd",
        "/admin/keys",
        True,
        "note",
        "boundAgentId",
        "keyId",
        ("DELETE", "/admin/keys/{id}"),
    ),
)


@dataclass(frozen=True, slots=True)
class Minted:
    key_id: str
    what: str
    way: Minting


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
    """The tool's valid call, whose result must have the shape docs/tools.md gives it."""
    return check(tool, tool, kind="call", source=source)


def tool_bad(tool: str, *, source: Source = "protocol") -> Callable[[CheckBody], CheckBody]:
    """The tool's bad-input call, which must be a tool error (isError), never a protocol
    error or a broken transport."""
    return check(tool, tool, kind="bad input", source=source)


def names(items: Iterable[Any], key: str) -> list[Any]:
    """`key` of every object in `items` (the ids of a list of tasks, say)."""
    return [item.get(key) for item in items if isinstance(item, dict)]
