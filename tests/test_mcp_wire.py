"""The tools/call fast path builds its wire results by hand; here they are held equal to
what the SDK's own models and serializer produce, for every protocol version we serve."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as T
import pytest
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from mcp_gateway import tools
from rooms import errors, registry

VERSIONS = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
VALUES: list[tuple[str, Any]] = [
    ("read_plan", {"project": "p", "tasks": [{"id": "t1", "title": "é ✓", "deps": []}]}),
    ("read_events", [{"id": "1-0", "type": "note", "payload": {"n": None, "deep": [1, [2]]}}]),
    ("get_unread_events", {"events": [], "cursor": None, "count": 0}),
]


def _sdk_result(value: Any, *, wrapped: bool) -> T.CallToolResult:
    """What the result was before the fast path: built from the SDK's own models."""
    return T.CallToolResult(
        content=[
            T.TextContent(
                type="text", text=json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            )
        ],
        structured_content={"result": value} if wrapped else value,
    )


def _sdk_error(exc: errors.DomainError) -> T.CallToolResult:
    content = [T.TextContent(type="text", text=exc.message)]
    if exc.extra:
        detail = json.dumps(
            {"code": exc.code, "extra": exc.extra}, ensure_ascii=False, separators=(",", ":")
        )
        content.append(T.TextContent(type="text", text=detail))
    return T.CallToolResult(content=content, is_error=True)


def _sdk(version: str, result: Any) -> dict[str, Any]:
    return methods.serialize_server_result(
        "tools/call", version, result.model_dump(by_alias=True, mode="json", exclude_none=True)
    )


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("name", "value"), VALUES)
def test_a_result_is_what_the_sdk_would_send(version: str, name: str, value: Any) -> None:
    tool = registry.TOOLS_BY_NAME[name]
    fast = {**tools.result_wire(tool, value), **tools.result_fields(version)}
    assert fast == _sdk(version, _sdk_result(value, wrapped=tool.wraps_output()))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("extra", [{}, {"closest": ["t1"], "retryAfterSeconds": 2}])
def test_an_error_is_what_the_sdk_would_send(version: str, extra: dict[str, Any]) -> None:
    exc = errors.DomainError("Unknown task 'x'; closest: t1.", extra=extra)
    fast = {**tools.error_wire(exc), **tools.result_fields(version)}
    assert fast == _sdk(version, _sdk_error(exc))
    assert fast["isError"] is True and len(fast["content"]) == (2 if extra else 1)


def test_the_modern_revision_says_the_result_is_complete() -> None:
    assert tools.result_fields("2026-07-28") == {"resultType": "complete"}
    assert tools.result_fields("2025-06-18") == {}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("name", "value"), VALUES)
@pytest.mark.parametrize("rid", [1, 'req-é"1', 2**70])
@pytest.mark.parametrize("meta", [False, True])
def test_a_response_spliced_around_the_text_is_the_same_bytes(
    version: str, name: str, value: Any, rid: Any, meta: bool
) -> None:
    """The door encodes a result's value once (its text) and splices the response around
    it: byte for byte what encoding the whole response makes."""
    from mcp_gateway import app

    tool = registry.TOOLS_BY_NAME[name]
    wire = tools.result_wire(tool, value)
    wire.update(tools.result_fields(version))
    if meta:
        wire["_meta"] = {T.SERVER_INFO_META_KEY: {"name": "roomservice", "version": "0.1.0"}}
    whole = app._encoded({"jsonrpc": "2.0", "id": rid, "result": dict(wire)})
    assert app._response_bytes(rid, wire) == whole
    wire["structuredContent"] = {"changed": True}  # a result someone changed: not spliced
    wire["content"] = [{"type": "text", "text": "other"}]
    assert app._response_bytes(rid, wire) is None


@pytest.mark.parametrize("version", VERSIONS)
def test_a_result_that_carries_its_quoted_text_is_the_same_bytes(version: str) -> None:
    """read_plan's plan carries its JSON text and that text quoted (rooms.records.KnownJson):
    the response spliced around them is what encoding the whole response makes."""
    from mcp_gateway import app
    from rooms import records

    plan = records.KnownJson(
        project="r-1",
        created_at="2026-12-04T00:00:00.000Z",
        updated_at="2026-12-04T00:00:00.000Z",
        tasks=[{"id": "t_1", "title": 'é ✓ "q" \\ \u2028 </script>', "depends_on": []}],
    )
    plan.json_text = records.dumps(plan)
    plan.json_quoted = records.quoted(plan.json_text)
    wire = tools.result_wire(registry.TOOLS_BY_NAME["read_plan"], plan)
    wire.update(tools.result_fields(version))
    whole = app._encoded({"jsonrpc": "2.0", "id": 7, "result": dict(wire)})
    assert wire.quoted == plan.json_quoted
    assert app._response_bytes(7, wire) == whole
