"""/mcp: MCP's streamable HTTP transport, stateless, JSON responses, as a bare ASGI app.

Why not a Django view or the SDK's session manager: both cap this machine at a few hundred
calls a second (measured with wrk, 32 connections, one worker: a Django async view 250-380,
the SDK's stateless session manager about 375, a bare ASGI app 2,500-3,000; what a call
costs now is in docs/scaling.md "What one call costs"). Every message is parsed and built
with the SDK's types (`mcp_types`). Two eras are served on one URL:

- 2025 revisions: initialize, notifications/initialized, then calls; no session id is
  issued, so every request stands alone.
- 2026-07-28 single-exchange requests: no handshake; each request carries its protocol
  version and client capabilities in `params._meta`, echoed in headers.

The URL may choose a tool profile (`/mcp?tools=core`, rooms.profiles); without one the
credential's default holds, else every tool. tools/list answers the profile's tools from
bytes built once per profile and protocol version; a call of a tool the profile leaves out
is a tool error naming the profiles that have it.

Tool calls go to the registry through our thin dispatcher, one call path (calls.runner);
the SDK's own request handling is not used (it was measured slower in `make bench`, and a
second path is a second thing to keep right).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import anyio
import mcp_types as T
from django.conf import settings
from mcp_types import methods
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)
from pydantic import ValidationError

from config import telemetry
from mcp_gateway import envelope, oauth, origins, tools
from mcp_gateway.envelope import RpcError
from rooms import errors as rooms_errors
from rooms import profiles, traces
from rooms.store import connections as connections_store
from tenants import access
from tenants.auth import UNAUTHORIZED, Admission, Bearer, bearer_from_header, caller_admit
from tenants.capabilities import Caller

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CAPABILITIES = T.ServerCapabilities(tools=T.ToolsCapability(list_changed=False))
# For core and full: it names only core's tools (tests/rooms/test_core_texts.py), and says
# once what the compact list leaves out of each tool's arguments (idempotencyKey).
INSTRUCTIONS = (
    "Roomservice rooms: shared state for agents working on one project; the room, not the "
    "chat, holds the truth. Start a session with get_my_summary (your tasks, unread events, "
    "handoffs) and inbox. Pick work with get_unblocked_tasks and claim_task it before you "
    "work on it (one agent wins; release_task gives it back). Before you edit a file, "
    "lease_claim it. Publish contracts and decisions with write_context; publishing one "
    "again, pass its id as supersedes (its next version). Tell agents things with "
    "send_message; read yours with inbox. When you finish a task, update_task(status: done), "
    "or submit_task where evidence is required; verify_task judges another agent's. To pass "
    "a task on, handoff_task (its receiver calls accept_handoff or decline_handoff). To wait "
    "on others, wait_for_events, never a polling loop. Every call naming you (agentId; from "
    "or author, which take agentId too) keeps your claims and leases alive. Every write takes "
    "an optional idempotencyKey: a retry with the same key within 24 h changes nothing."
)
# For a connection of the roomd profile, which sees roomd's tools only.
ROOMD_INSTRUCTIONS = (
    "Roomservice rooms: shared state for agents working on one project; the room, not the "
    "chat, holds the truth. Start a session with heartbeat and get_my_summary (your tasks, "
    "unread events). Pick work with get_unblocked_tasks and take it with update_task "
    "(owner: you, status: in_progress). Publish contracts and decisions with write_context "
    "(update_context revises them). When you finish a task, update_task(status: done). To "
    "wait on others, wait_for_events, never a polling loop. Every call naming you keeps "
    "your presence alive."
)
INSTRUCTIONS_OF: dict[profiles.Profile, str] = {
    "core": INSTRUCTIONS,
    "roomd": ROOMD_INSTRUCTIONS,
    "full": INSTRUCTIONS,
}
HTTP_STATUS = {
    T.PARSE_ERROR: 400,
    T.INVALID_REQUEST: 400,
    T.INVALID_PARAMS: 400,
    T.HEADER_MISMATCH: 400,
    T.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    T.UNSUPPORTED_PROTOCOL_VERSION: 400,
    T.METHOD_NOT_FOUND: 404,
}


FAILED = "The server failed on this request (it has been logged); retry shortly."


def _rpc_error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err = T.ErrorData(code=code, message=message, data=data).model_dump(
        by_alias=True, mode="json", exclude_none=True
    )
    return {"jsonrpc": "2.0", "id": rid, "error": err}


@dataclass(frozen=True, slots=True)
class Encoded:
    """A response body already encoded (tools/list: built once, sent as bytes)."""

    data: bytes


def _encoded(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_HEAD = ("content", "isError", "structuredContent")


def _response_bytes(rid: Any, wire: tools.ResultWire) -> bytes | None:
    """The response to a successful tools/call, byte for byte what `_encoded` makes of
    {"jsonrpc", "id", "result": wire}, around the value's JSON text that result_wire has
    already made (structuredContent is that same value, so its encoding is that text):
    the value is encoded once, not twice. None when `wire` is not as result_wire built it
    (the caller then encodes it whole)."""
    content = wire.get("content")
    if (
        tuple(wire)[:3] != _HEAD
        or not isinstance(content, list)
        or len(content) != 1
        or content[0].get("text") is not wire.text
        or wire["isError"] is not False
    ):
        return None
    text = wire.text
    rest = {k: v for k, v in wire.items() if k not in _HEAD}
    return "".join(
        (
            '{"jsonrpc":"2.0","id":',
            json.dumps(rid, ensure_ascii=False),
            ',"result":{"content":[{"type":"text","text":',
            _encode_string(text) if wire.quoted is None else '"' + wire.quoted + '"',
            '}],"isError":false,"structuredContent":',
            '{"result":' + text + "}" if wire.wrapped else text,
            "," + _encoded_text(rest)[1:] if rest else "}",
            "}",
        )
    ).encode("utf-8")


def _encoded_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_encode_string = json.encoder.encode_basestring  # json.dumps(str, ensure_ascii=False)


async def _send_json(
    send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = list(extra or [])
    payload = b""
    if body is not None:
        payload = body.data if isinstance(body, Encoded) else _encoded(body)
        headers.append((b"content-type", b"application/json"))
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class BodyTooLarge(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _Unparsable:
    message: str


def _parse(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return _Unparsable("Parse error: the body is not JSON.")
    except RecursionError:
        return _Unparsable("Parse error: the JSON nests too deeply.")


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise anyio.EndOfStream
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


# --- Dispatch: ours -----------------------------------------------------------------------

ROOMS_LISTED = 20


async def instructions_for(caller: Caller, profile: profiles.Profile) -> str:
    """The protocol's instructions for the connection's tool profile (they name only tools it
    sees), and the rooms this credential reaches, so an agent uses an existing roomId instead
    of inventing one."""
    told = INSTRUCTIONS_OF[profile]
    rows = await access.CallerRooms(caller).rooms()
    if not rows:
        return told + " No room yet: the roomId you first use becomes your team's."
    named = ", ".join(
        f"{r['roomId']} ({r['name']})" if r["name"] else r["roomId"] for r in rows[:ROOMS_LISTED]
    )
    more = ""
    if len(rows) > ROOMS_LISTED:
        listing = " (list_rooms)" if "list_rooms" in profiles.TOOLS[profile] else ""
        more = f", and {len(rows) - ROOMS_LISTED} more{listing}"
    return f"{told} Your rooms: {named}{more}. Use one of these roomIds."


async def dispatch_thin(
    admitted: Admission,
    method: str,
    version: str,
    req: Any,
    profile: profiles.Profile,
    scope: tools.CacheScope = "private",
) -> T.Result:
    if method == "tools/call":
        try:
            return await tools.tool_call(
                admitted.caller,
                req.params.name,
                req.params.arguments,
                profile=profile,
                charge=admitted.charge if admitted.charged else None,
            )
        except tools.UnknownTool as exc:
            raise RpcError(T.INVALID_PARAMS, str(exc)) from None
    if method == "initialize":
        requested = req.params.protocol_version
        return T.InitializeResult(
            protocol_version=requested
            if requested in HANDSHAKE_PROTOCOL_VERSIONS
            else LATEST_HANDSHAKE_VERSION,
            capabilities=CAPABILITIES,
            server_info=tools.SERVER_INFO,
            instructions=await instructions_for(admitted.caller, profile),
        )
    if method == "server/discover":
        return T.DiscoverResult(
            supported_versions=list(MODERN_PROTOCOL_VERSIONS),
            capabilities=CAPABILITIES,
            instructions=INSTRUCTIONS_OF[profile],
            **tools.cache_hint(scope),
        )
    if method == "ping":
        return T.EmptyResult()
    raise RpcError(T.METHOD_NOT_FOUND, f"Method not found: {method}", method)


# --- The ASGI application -------------------------------------------------------------------


# The key door's challenge names no metadata, so header clients never switch to OAuth.
REALM = b'Bearer realm="roomservice"'


class McpGateway:
    """/mcp, or with `oauth` /oauth/mcp: the same tools and answers, each door taking only
    its own credentials (mcp_gateway.oauth)."""

    def __init__(self, *, oauth: bool = False) -> None:
        self.oauth = oauth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._serve(scope, receive, send)
        except connections_store.StoreDown:
            # Redis away while resolving the bearer: say which store, and to retry.
            await _send_json(
                send,
                503,
                _rpc_error(None, T.INTERNAL_ERROR, rooms_errors.STORE_UNAVAILABLE),
                [(b"retry-after", b"2")],
            )
        except Exception:
            # A bug: say so as a JSON-RPC error, never a bare 500 page.
            log.exception("/mcp request failed")
            await _send_json(
                send,
                503,
                _rpc_error(None, T.INTERNAL_ERROR, telemetry.with_request_id(FAILED)),
                [(b"retry-after", b"1")],
            )

    async def _unauthorized(self, send: Send, scope: Scope, presented: Bearer) -> None:
        message, header = oauth.refusal(scope, presented) if self.oauth else (UNAUTHORIZED, REALM)
        await _send_json(
            send, 401, _rpc_error(None, T.INVALID_REQUEST, message), [(b"www-authenticate", header)]
        )

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        presented = bearer_from_header(headers.get("authorization"))
        resource = oauth.door_url(scope) if self.oauth else None
        # A client probing the OAuth door with GET learns where to authorize (claude.ai
        # gives up on a bare 405), unless it already holds a token for here.
        if (
            self.oauth
            and scope["method"] != "POST"
            and await caller_admit(presented, charge=False, resource=resource) is None
        ):
            return await self._unauthorized(send, scope, presented)
        if scope["method"] != "POST":
            # Stateless: no session, so no GET stream to resume and nothing to DELETE.
            await _send_json(
                send,
                405,
                _rpc_error(None, T.INVALID_REQUEST, "Only POST is supported (stateless server)."),
                [(b"allow", b"POST")],
            )
            return
        repeated = envelope.mirrored_repeated(scope["headers"])
        if repeated:
            # A proxy may route on the first copy while we would read the last: one only.
            await _send_json(
                send,
                400,
                _rpc_error(
                    None, T.HEADER_MISMATCH, f"Header mismatch: the {repeated} header is repeated."
                ),
            )
            return
        origin = headers.get("origin")
        if origin is not None and not origins.origin_allowed(origin):
            # A page of another site, maybe a DNS-rebinding one: refused before anything
            # else is read (the transport's MUST, 2025-03-26 on).
            await _send_json(
                send,
                403,
                _rpc_error(
                    None,
                    T.INVALID_REQUEST,
                    f"Origin {origin[:200]} is not allowed here (MCP_ALLOWED_ORIGINS).",
                ),
            )
            return
        # The body first: whether the call is charged (a tools/call) decides the caller's
        # one budget step, which also checks what this process remembers of the caller.
        try:
            body = await _read_body(receive, int(settings.MCP_MAX_BODY_BYTES))
        except BodyTooLarge:
            await _send_json(
                send,
                413,
                _rpc_error(
                    None,
                    T.INVALID_REQUEST,
                    f"Body larger than {settings.MCP_MAX_BODY_BYTES} bytes.",
                ),
            )
            return
        except anyio.EndOfStream:
            return
        parsed = _parse(body)
        try:
            asked = _profile_asked(scope)
        except rooms_errors.ToolProfileUnknownError as exc:
            # The URL is wrong whoever calls: said before the bearer is looked at.
            await _send_json(
                send, 400, _rpc_error(_id_of(parsed), T.INVALID_PARAMS, exc.message, exc.extra)
            )
            return
        charge = (
            isinstance(parsed, dict) and parsed.get("method") == "tools/call" and "id" in parsed
        )
        admitted = await caller_admit(presented, charge=charge, resource=resource)
        if admitted is None:
            return await self._unauthorized(send, scope, presented)
        if not _accepts_json(headers.get("accept", "*/*")):
            await _send_json(
                send,
                406,
                _rpc_error(None, T.INVALID_REQUEST, "Accept must include application/json."),
            )
            return
        if not headers.get("content-type", "").lower().startswith("application/json"):
            await _send_json(
                send,
                415,
                _rpc_error(None, T.INVALID_REQUEST, "Content-Type must be application/json."),
            )
            return
        profile = profiles.profile_resolve(asked, admitted.caller.tools_profile)
        answering = self.handle(
            admitted, headers, parsed, profile, "private" if asked is None else "public"
        )
        # A waiting call lives for minutes: the request's body, JSON and headers are not
        # kept through it (here, in handle and in _answer), only what the call needs.
        del body, parsed, headers
        status, response = await answering
        await _send_json(send, status, response)

    async def handle(
        self,
        admitted: Admission,
        headers: dict[str, str],
        raw: Any,
        profile: profiles.Profile,
        scope: tools.CacheScope = "private",
    ) -> tuple[int, Any]:
        """(HTTP status, JSON body or None) for one POSTed JSON-RPC message (`raw`, parsed
        by `_parse`), on a connection of tool profile `profile`; `scope` says whether its
        list results may be shared by caches (the URL chose the profile)."""
        if isinstance(raw, _Unparsable):
            return 400, _rpc_error(None, T.PARSE_ERROR, raw.message)
        if isinstance(raw, list):
            return 400, _rpc_error(
                None, T.INVALID_REQUEST, "Batches are not supported; send one message."
            )
        if (
            not isinstance(raw, dict)
            or raw.get("jsonrpc") != "2.0"
            or not isinstance(raw.get("method"), str)
        ):
            if isinstance(raw, dict) and raw.get("jsonrpc") == "2.0" and "method" not in raw:
                return 202, None  # a response or error from the client: nothing to answer
            return 400, _rpc_error(
                None, T.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message."
            )
        if "id" not in raw:
            return 202, None  # notifications (initialized, cancelled) need no answer
        rid = raw["id"]
        if isinstance(rid, bool) or not isinstance(rid, int | str):
            return 400, _rpc_error(
                None, T.INVALID_REQUEST, "Invalid request: id must be a string or an integer."
            )
        method: str = raw["method"]
        params = raw.get("params")
        if params is not None and not isinstance(params, dict):
            return 400, _rpc_error(rid, T.INVALID_PARAMS, "params must be an object.")
        meta = (params or {}).get("_meta")
        traceparent = (
            traces.traceparent_valid(meta.get("traceparent")) if isinstance(meta, dict) else ""
        )
        token = traces.TRACEPARENT.set(traceparent) if traceparent else None
        answering = self._answer(admitted, headers, rid, method, params, profile, scope)
        del raw, headers, params, meta
        try:
            return await answering
        finally:
            if token is not None:
                traces.TRACEPARENT.reset(token)

    async def _answer(
        self,
        admitted: Admission,
        headers: dict[str, str],
        rid: int | str,
        method: str,
        params: dict[str, Any] | None,
        profile: profiles.Profile,
        scope: tools.CacheScope,
    ) -> tuple[int, Any]:
        header_version = headers.get("mcp-protocol-version")
        modern = header_version is not None and header_version not in HANDSHAKE_PROTOCOL_VERSIONS
        try:
            if modern:
                version = envelope.modern_envelope(header_version or "", headers, method, params)
            else:
                version = header_version or T.DEFAULT_NEGOTIATED_VERSION
                if method == "initialize":
                    pv = (params or {}).get("protocolVersion")
                    version = pv if pv in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
            if method == "tools/list":
                # The same for everyone of the profile: only the request id is spliced in.
                listed = tools.tool_list_wire(profile, version, scope if modern else None)
                return 200, Encoded(
                    b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (_encoded(rid), listed)
                )
            fast = method == "tools/call" and _plain_call(params)
            if fast:
                assert params is not None
                calling = tools.tool_call_wire(
                    admitted.caller,
                    params["name"],
                    params.get("arguments"),
                    version,
                    profile=profile,
                    charge=admitted.charge if admitted.charged else None,
                )
                del headers, params
                try:
                    wire = await calling
                except tools.UnknownTool as exc:
                    raise RpcError(T.INVALID_PARAMS, str(exc)) from None
                if modern:
                    wire["_meta"] = {T.SERVER_INFO_META_KEY: tools.server_info()}
            else:
                try:
                    req = methods.parse_client_request(method, version, params)
                except KeyError:
                    raise RpcError(
                        T.METHOD_NOT_FOUND, f"Method not found: {method}", method
                    ) from None
                except ValidationError as exc:
                    raise RpcError(T.INVALID_PARAMS, _first_problem(exc)) from None
                result = await dispatch_thin(admitted, method, version, req, profile, scope)
                wire = methods.serialize_server_result(
                    method,
                    version,
                    result.model_dump(by_alias=True, mode="json", exclude_none=True),
                )
                if modern:
                    wire.setdefault("_meta", {})[T.SERVER_INFO_META_KEY] = tools.server_info()
        except RpcError as exc:
            status = HTTP_STATUS.get(exc.code, 200) if modern else 200
            return status, _rpc_error(rid, exc.code, exc.message, exc.data)
        if isinstance(wire, tools.ResultWire):
            spliced = _response_bytes(rid, wire)
            if spliced is not None:
                return 200, Encoded(spliced)
        return 200, {"jsonrpc": "2.0", "id": rid, "result": wire}


def _profile_asked(scope: Scope) -> profiles.Profile | None:
    """The profile the URL asks for (`?tools=core`), None when it asks for none;
    ToolProfileUnknownError for a value that names no profile (or more than one value)."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    given = query.get("tools")
    if given is None:
        return None
    return profiles.profile_parse(given[0] if len(given) == 1 else ",".join(given))


def _accepts_json(accept: str) -> bool:
    """The Accept header's media ranges take application/json (parameters ignored)."""
    ranges = {a.split(";")[0].strip().lower() for a in accept.split(",")}
    return bool(ranges & {"application/json", "application/*", "*/*"})


def _id_of(parsed: Any) -> Any:
    """The request's id when it has a usable one (for an error said before dispatch)."""
    rid = parsed.get("id") if isinstance(parsed, dict) else None
    return rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None


def _plain_call(params: Any) -> bool:
    """tools/call params the fast path takes as they are: a name, arguments that are an
    object (or none), nothing else but _meta. Anything else goes through the SDK's models,
    for their exact error."""
    return (
        isinstance(params, dict)
        and isinstance(params.get("name"), str)
        and isinstance(params.get("arguments", {}), dict | None)
        and isinstance(params.get("_meta", {}), dict)
        and params.keys() <= {"name", "arguments", "_meta"}
    )


def _first_problem(exc: ValidationError) -> str:
    errs = exc.errors(include_url=False)
    if not errs:
        return "Invalid params."
    e = errs[0]
    return "Invalid params: " + ".".join(str(p) for p in e["loc"]) + ": " + e["msg"]


def build_server(*, oauth: bool = False) -> McpGateway:
    """The /mcp application, or /oauth/mcp's."""
    return McpGateway(oauth=oauth)
