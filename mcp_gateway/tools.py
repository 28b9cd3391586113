"""The registry, seen through MCP's types: tools/list entries and tools/call results."""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from typing import Any

import mcp_types as T

from rooms import errors, registry
from tenants.access import tool_run
from tenants.auth import Caller

log = logging.getLogger(__name__)

INTERNAL_FAILURE = (
    "The server failed while running this tool (it has been logged). The room was not "
    "changed unless the tool's own result says so; retry shortly."
)


@lru_cache(maxsize=1)
def tool_list() -> list[T.Tool]:
    return [
        T.Tool(
            name=t.name,
            description=t.description,
            input_schema=t.input_schema(),
            annotations=T.ToolAnnotations(
                read_only_hint=t.read_only,
                destructive_hint=False,
                idempotent_hint=t.idempotent,
                open_world_hint=False,
            ),
        )
        for t in registry.TOOLS
    ]


class UnknownTool(Exception):
    """tools/call named no tool: a protocol error (-32602), not a tool error."""


def _text_result(value: Any) -> T.CallToolResult:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return T.CallToolResult(
        content=[T.TextContent(type="text", text=text)],
        structured_content=value if isinstance(value, dict) else None,
    )


def _error_result(message: str) -> T.CallToolResult:
    return T.CallToolResult(content=[T.TextContent(type="text", text=message)], is_error=True)


async def tool_call(caller: Caller, name: str, arguments: Any) -> T.CallToolResult:
    """Run one tool for `caller`. Every failure the agent can correct is a tool error."""
    if name not in registry.TOOLS_BY_NAME:
        raise UnknownTool(
            registry.UNKNOWN_TOOL.format(name=name, names=", ".join(registry.TOOLS_BY_NAME))
        )
    try:
        value = await tool_run(caller, name, arguments)
    except errors.DomainError as exc:
        return _error_result(exc.message)
    except Exception:
        log.exception("tool %s failed", name)
        return _error_result(INTERNAL_FAILURE)
    return _text_result(value)
