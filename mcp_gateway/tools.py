"""The registry, seen through MCP's types: tools/list entries and tools/call results, each
for the connection's tool profile (rooms.profiles)."""

from __future__ import annotations

import json
import logging
from functools import cache
from typing import Any, Literal

import mcp_types as T
from django.conf import settings
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from calls.runner import tool_run
from config import telemetry
from rooms import errors, profiles, registry
from rooms.records import KnownJson
from tenants.budgets import Charge
from tenants.capabilities import Caller

log = logging.getLogger(__name__)

INTERNAL_FAILURE = (
    "The server failed while running this tool (it has been logged). The room was not "
    "changed unless the tool's own result says so; retry shortly."
)


# Profiles whose list declares each tool's outputSchema. A client carries the list in its
# model's context every turn, and of the clients agents use, none hands a tool's
# outputSchema to the model (docs/tools.md "Output schemas"), while it was two thirds of
# core's list; roomd and full keep them for the clients and kits that validate results
# against them. structuredContent is sent on every profile: MCP (2025-06-18 and
# 2026-07-28) requires it to conform to an outputSchema only when one is declared.
OUTPUT_SCHEMAS: frozenset[profiles.Profile] = frozenset({"roomd", "full"})


def _entry(t: registry.Tool, profile: profiles.Profile) -> T.Tool:
    lean = profile not in OUTPUT_SCHEMAS
    return T.Tool(
        name=t.name,
        description=t.description,
        input_schema=t.input_schema(compact=lean),
        output_schema=None if lean else t.output_schema(),
        annotations=T.ToolAnnotations(
            read_only_hint=t.read_only,
            destructive_hint=False,
            idempotent_hint=t.idempotent,
            open_world_hint=False,
        ),
    )


@cache
def tool_list(profile: profiles.Profile) -> list[T.Tool]:
    """The tools of `profile`, in the registry's order; built once per process."""
    return [_entry(registry.TOOLS_BY_NAME[name], profile) for name in profiles.TOOLS[profile]]


@cache
def tool_list_result(profile: profiles.Profile) -> T.ListToolsResult:
    return T.ListToolsResult(tools=tool_list(profile))


CacheScope = Literal["public", "private"]
SERVER_INFO = T.Implementation(name="roomservice", version="0.1.0", title="Roomservice")


@cache
def server_info() -> dict[str, Any]:
    return SERVER_INFO.model_dump(by_alias=True, mode="json", exclude_none=True)


def cache_hint(scope: CacheScope) -> dict[str, Any]:
    """What a 2026-07-28 list result says of its own freshness (ttlMs, cacheScope): the list
    changes only when the service is upgraded; it may be shared ("public") only when the
    URL names its profile, since otherwise the credential's default chose it."""
    return {"ttl_ms": int(settings.MCP_LIST_TTL_SECONDS) * 1000, "cache_scope": scope}


@cache
def tool_list_wire(profile: profiles.Profile, version: str, scope: CacheScope | None) -> bytes:
    """A tools/list result as sent: the same for everyone of a profile, so built once per
    (profile, protocol version, cache scope), equal answers sharing one bytes object. `scope`
    is None in the handshake era, whose lists say nothing of their freshness; `version` is
    one the envelope has accepted, so the keys are few."""
    result = tool_list_result(profile)
    if scope is not None:
        result = result.model_copy(update=cache_hint(scope))
    wire = methods.serialize_server_result(
        "tools/list", version, result.model_dump(by_alias=True, mode="json", exclude_none=True)
    )
    if scope is not None:
        wire.setdefault("_meta", {})[T.SERVER_INFO_META_KEY] = server_info()
    encoded = _dumps(wire).encode("utf-8")
    return _LISTS_SENT.setdefault(encoded, encoded)


_LISTS_SENT: dict[bytes, bytes] = {}


def tool_list_warm() -> None:
    """Builds every list a request can ask for before the first request: built on demand,
    a profile's first list cost 10-116 ms (its tools' JSON schemas), a spike that was the
    p99 of tools/list from outside (bench section profiles: the first list after start)."""
    for profile in profiles.PROFILES:
        for version in {*HANDSHAKE_PROTOCOL_VERSIONS, T.DEFAULT_NEGOTIATED_VERSION}:
            tool_list_wire(profile, version, None)
        for version in MODERN_PROTOCOL_VERSIONS:
            tool_list_wire(profile, version, "private")
            tool_list_wire(profile, version, "public")


class UnknownTool(Exception):
    """tools/call named no tool: a protocol error (-32602), not a tool error."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class ResultWire(dict[str, Any]):
    """A successful result's wire dict that remembers its value's JSON text (`text`, which
    is also content[0].text), that text already quoted when the value came with it
    (`quoted`, else None), and whether structuredContent wraps it: the door encodes the
    response around that text instead of encoding the value a second time (app.py)."""

    __slots__ = ("quoted", "text", "wrapped")
    text: str
    quoted: str | None
    wrapped: bool


def result_wire(tool: registry.Tool, value: Any) -> ResultWire:
    """roomd's shape as the text; the same value as structuredContent (a list wrapped as
    {"result": [...]}, since structured content is an object). Built as the wire dict
    itself: a result is not copied through the SDK's models (tests/test_mcp_wire.py holds
    it equal to what they would produce, for every protocol version)."""
    wrapped = tool.wraps_output()
    # A value whose text is made already (read_plan's plan: rooms.records.KnownJson).
    known = isinstance(value, KnownJson)
    text = value.json_text if known else _dumps(value)
    wire = ResultWire(
        content=[{"type": "text", "text": text}],
        isError=False,
        structuredContent={"result": value} if wrapped else value,
    )
    wire.text, wire.wrapped = text, wrapped
    wire.quoted = value.json_quoted if known else None
    return wire


def error_wire(exc: errors.DomainError) -> dict[str, Any]:
    """The message an agent acts on; its machine-readable detail (the closest ids, the
    bound agent, a retry time) follows as a second text block when there is any."""
    content = [{"type": "text", "text": exc.message}]
    if exc.extra:
        content.append({"type": "text", "text": _dumps({"code": exc.code, "extra": exc.extra})})
    return {"content": content, "isError": True}


@cache
def result_fields(version: str) -> dict[str, Any]:
    """What the protocol `version` adds to every tools/call result beyond content, isError
    and structuredContent (2026-07-28: resultType), as the SDK serializes it."""
    sample = T.CallToolResult(content=[], is_error=False)
    wire = methods.serialize_server_result(
        "tools/call", version, sample.model_dump(by_alias=True, mode="json", exclude_none=True)
    )
    return {k: v for k, v in wire.items() if k not in ("content", "isError", "structuredContent")}


async def _answer(
    caller: Caller,
    name: str,
    arguments: Any,
    profile: profiles.Profile,
    charge: Charge | None,
) -> dict[str, Any]:
    """One tools/call's result as a wire dict (before any protocol version's own fields).
    Every failure the agent can correct is a tool error, a tool its profile leaves out
    too; a name of no tool at all is UnknownTool (naming the profile's tools)."""
    tool = registry.TOOLS_BY_NAME.get(name)
    if tool is None:
        names = ", ".join(profiles.TOOLS[profile])
        raise UnknownTool(registry.UNKNOWN_TOOL.format(name=name, names=names))
    try:
        profiles.profile_admit(profile, name)
        value = await tool_run(caller, tool, arguments, charge=charge)
    except errors.DomainError as exc:
        return error_wire(exc)
    except Exception:
        log.exception("tool %s failed", name)
        text = telemetry.with_request_id(INTERNAL_FAILURE)
        return {"content": [{"type": "text", "text": text}], "isError": True}
    return result_wire(tool, value)


async def tool_call_wire(
    caller: Caller,
    name: str,
    arguments: Any,
    version: str,
    *,
    profile: profiles.Profile,
    charge: Charge | None = None,
) -> dict[str, Any]:
    """`tool_call`, answered as the wire result of protocol `version` directly (the thin
    dispatcher's path)."""
    wire = await _answer(caller, name, arguments, profile, charge)
    wire.update(result_fields(version))  # a fresh dict (or ResultWire) of this call's own
    return wire


async def tool_call(
    caller: Caller,
    name: str,
    arguments: Any,
    *,
    profile: profiles.Profile,
    charge: Charge | None = None,
) -> T.CallToolResult:
    """Run one tool of `profile` for `caller`, as the SDK's model (a tools/call that is not
    plain: app._plain_call)."""
    wire = await _answer(caller, name, arguments, profile, charge)
    return T.CallToolResult.model_validate(wire)
