"""THE table of tools: every row of rooms/tools, in tools/list's order, and the two lookups
every door makes (a name to its row; arguments to the row's input model).

MCP's tools/list and tools/call, the REST door and its OpenAPI paths, and docs/tools.md are
generated from this one table; no door holds logic of its own. A row is written beside its
adapter in rooms/tools/<domain>.py (rooms/tools/rows.py says how). Tool names and argument
names are roomd's (docs/protocol.md) and meet the service names only in those adapters.
Each row is typed end to end: its operation takes the row's input model and returns the
row's output type, so mypy checks every argument and every result shape.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError

from rooms import errors
from rooms import schemas as s
from rooms.tools import (
    agentroom,
    context,
    events,
    handoffs,
    leases,
    locks,
    messages,
    plan,
    presence,
    reviews,
    room,
    search,
    templates,
    vars,
    verification,
)
from rooms.tools.rows import CallerScope, CallerTool, RoomTool, Tool

__all__ = [
    "TOOLS",
    "TOOLS_BY_NAME",
    "CallerScope",
    "CallerTool",
    "RoomTool",
    "Tool",
    "arguments_parse",
    "tool_get",
]

# The order of tools/list, which a client that carries only its first N tools (Cursor keeps
# 40) goes by: the two tools that name no room, roomd's room tools in roomd's order, then
# ours. A new tool goes into its domain's module and here; the table refuses to build
# when the two disagree.
TOOLS_ORDER: tuple[str, ...] = (
    "list_rooms",
    "list_templates",
    "read_plan",
    "add_task",
    "update_task",
    "claim_task",
    "release_task",
    "get_task",
    "get_unblocked_tasks",
    "get_my_tasks",
    "get_my_summary",
    "write_context",
    "read_context",
    "list_context",
    "update_context",
    "post_event",
    "read_events",
    "get_unread_events",
    "wait_for_events",
    "mark_event_read",
    "get_event_reads",
    "reply_to_event",
    "heartbeat",
    "get_presence",
    "acquire_lock",
    "release_lock",
    "list_locks",
    "set_shared_var",
    "get_shared_var",
    "list_shared_vars",
    "leave_room",
    "get_room_info",
    "delete_task",
    "set_task_priority",
    "add_dependency",
    "delete_context",
    "get_context_history",
    "delete_event",
    "request_review",
    "approve",
    "reject",
    "list_reviews",
    "diff_context",
    "get_room_analytics",
    "search",
    "create_room_from_template",
    "lease_claim",
    "lease_renew",
    "lease_release",
    "lease_check",
    "lease_list",
    "note_read",
    "drift_check",
    "submit_task",
    "verify_task",
    "handoff_task",
    "accept_handoff",
    "decline_handoff",
    "set_room_mode",
    "set_room_status",
    "send_message",
    "inbox",
    "ack_message",
    "sent_messages",
    "room_claim",
    "room_release",
    "room_broadcast",
    "room_state",
    "room_read",
)

_ROWS: dict[str, Tool] = {
    row.name: row
    for domain in (
        room,
        templates,
        plan,
        context,
        events,
        presence,
        locks,
        vars,
        reviews,
        search,
        leases,
        verification,
        handoffs,
        messages,
        agentroom,
    )
    for row in domain.TOOLS
}
if set(_ROWS) != set(TOOLS_ORDER):
    raise RuntimeError(
        "tools without a place in TOOLS_ORDER, or places without a tool: "
        f"{sorted(set(_ROWS) ^ set(TOOLS_ORDER))}"
    )

TOOLS: tuple[Tool, ...] = tuple(_ROWS[name] for name in TOOLS_ORDER)
TOOLS_BY_NAME: dict[str, Tool] = {t.name: t for t in TOOLS}

UNKNOWN_TOOL = "Unknown tool {name!r}. The tools are: {names}."
NOT_AN_OBJECT = "Tool arguments must be a JSON object, got {kind}."
UNKNOWN_ARGUMENT = "unknown argument {name!r} (allowed: {allowed})"
BAD_TEXT = "Arguments contain text that is not valid Unicode (a lone surrogate?)."
TOO_DEEP = "Arguments nest too deeply; keep payloads to a few dozen levels."


def tool_get(name: str) -> Tool:
    found = TOOLS_BY_NAME.get(name)
    if found is None:
        raise errors.UnknownToolError(
            UNKNOWN_TOOL.format(name=name, names=", ".join(TOOLS_BY_NAME)),
            extra={"tool": name},
        )
    return found


def _describe_validation(model: type[BaseModel], exc: ValidationError) -> tuple[str, list[str]]:
    allowed = ", ".join((f.alias or n) for n, f in model.model_fields.items())
    problems: list[str] = []
    fields: list[str] = []
    for e in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"])
        fields.append(loc)
        if e["type"] == "extra_forbidden":
            problems.append(UNKNOWN_ARGUMENT.format(name=loc, allowed=allowed))
        elif e["type"] == "missing":
            problems.append(f"{loc}: required")
        else:
            problems.append(f"{loc}: {e['msg']}")
    return "Invalid arguments: " + "; ".join(problems) + ".", fields


def arguments_parse(tool: Tool, arguments: Any) -> s.ToolInput:
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise errors.ToolArgumentsError(NOT_AN_OBJECT.format(kind=type(arguments).__name__))
    try:
        json.dumps(arguments, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError):
        raise errors.ToolArgumentsError(BAD_TEXT) from None
    except RecursionError:
        raise errors.ToolArgumentsError(TOO_DEEP) from None
    try:
        parsed: s.ToolInput = tool.input_model.model_validate(arguments)
        return parsed
    except RecursionError:
        raise errors.ToolArgumentsError(TOO_DEEP) from None
    except ValidationError as exc:
        message, fields = _describe_validation(tool.input_model, exc)
        raise errors.ToolArgumentsError(message, extra={"fields": fields}) from None
