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

import difflib
import importlib
import json
import pkgutil
from typing import Any

from pydantic import BaseModel, ValidationError

from rooms import errors
from rooms import schemas as s
from rooms import tools as domains
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

# The one list of tools: their order in tools/list, which a client that carries only its
# first N tools (Cursor keeps 40) goes by: the two tools that name no room, roomd's room
# tools in roomd's order, then ours. Everything else about a tool (its domain, its
# docs/protocol.md section, the profiles that list it) is said by its row, written beside
# its adapter in rooms/tools/<domain>.py. A new tool is that row and its name here; the
# table refuses to build when the two disagree.
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

# Every row of every domain module (rooms/tools/<domain>.py), found where it is written.
_ROWS: dict[str, Tool] = {
    row.name: row
    for found in pkgutil.iter_modules(domains.__path__)
    for row in vars(importlib.import_module(f"{domains.__name__}.{found.name}")).values()
    if isinstance(row, RoomTool | CallerTool)
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
UNKNOWN_ARGUMENT = "unknown argument {name} (allowed: {allowed})"
UNKNOWN_ARGUMENT_NEAR = "unknown argument {name}: did you mean {near!r}? (allowed: {allowed})"
ACTOR_MISSING = "{name}: required (your agent name; agentId is accepted instead)"
MORE_PROBLEMS = "and {count} more"
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


# What a refusal looks at and shows is bounded, whatever the caller sent: a name longer
# than NEAR_NAME_MAX is nobody's near miss (the longest argument name is 20 characters)
# and is not compared; only the first NEAR_LOOKED_AT unknown names are, each against at
# most NEAR_CANDIDATES_MAX allowed names; a message names at most PROBLEMS_SHOWN problems,
# each name cut to NAME_SHOWN characters.
NEAR_NAME_MAX = 64
NEAR_LOOKED_AT = 8
NEAR_CANDIDATES_MAX = 64
PROBLEMS_SHOWN = 12
NAME_SHOWN = 64
# Names agents use for an argument that is called something else here (normalised: lower
# case, no '_' or '-'), each with what it may mean, in order of preference; "@actor" is
# the tool's acting-agent argument, "@id" its one id argument.
_ACTOR, _ID = "@actor", "@id"
_SYNONYMS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        [
            "agent",
            "agentid",
            "agentname",
            "actor",
            "from",
            "author",
            "by",
            "requestedby",
            "sender",
            "requester",
            "me",
            "self",
            "caller",
            "user",
            "username",
        ],
        (_ACTOR,),
    ),
    "id": (_ID,),
    "task": ("taskid",),
    **dict.fromkeys(("message", "msg", "content"), ("body", "text", "note", "payload")),
    "text": ("body", "q", "note"),  # a message's body, a search's words, a task's note
    "data": ("payload",),
    **dict.fromkeys(("comment", "comments", "reason", "notes"), ("note",)),
    **dict.fromkeys(("room", "roomname"), ("roomid",)),
    "name": ("title",),
    **dict.fromkeys(("dependencies", "dependency", "deps", "after", "blockedby"), ("dependson",)),
    **dict.fromkeys(("recipient", "recipients"), ("to",)),
    **dict.fromkeys(
        ("ttl", "ttlms", "timeout", "duration", "seconds", "expires"),
        ("ttlseconds", "leaseseconds", "timeoutms"),
    ),
    **dict.fromkeys(("query", "search", "term", "terms"), ("q",)),
    **dict.fromkeys(("consumers", "consumer", "agents"), ("consumingagents",)),
    "state": ("status",),
    "key": ("resource",),
}


def _normal(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def _near(model: type[BaseModel], name: str, allowed: list[str], given: set[str]) -> str | None:
    """The allowed argument an unknown `name` most likely meant: the same letters in another
    case or with other separators (agent_id, agentID: agentId), then a known synonym
    (task: taskId; agent, from, author: the tool's actor), then a close spelling (difflib);
    never one the call gave already."""
    if len(name) > NEAR_NAME_MAX:
        return None
    free = {_normal(a): a for a in allowed[:NEAR_CANDIDATES_MAX] if a not in given}
    key = _normal(name)
    if key in free:
        return free[key]
    for meant in _SYNONYMS.get(key, ()):
        if meant == _ACTOR:
            actors = [model.model_fields[n].alias or n for n in s.actor_fields(model)]
            found = [_normal(a) for a in actors or ["agentId"]]
        elif meant == _ID:
            ids = [a for a in free.values() if a.endswith("Id") and a not in ("roomId", "agentId")]
            found = [_normal(ids[0])] if len(ids) == 1 else []
        else:
            found = [meant]
        for candidate in found:
            if candidate in free:
                return free[candidate]
    close = difflib.get_close_matches(key, list(free), n=1, cutoff=0.75)
    return free[close[0]] if close else None


def _shown(name: str) -> str:
    if len(name) <= NAME_SHOWN:
        return repr(name)
    return f"{name[:NAME_SHOWN]!r}... ({len(name)} characters)"


def _describe_validation(
    model: type[BaseModel], exc: ValidationError, given: set[str] | None = None
) -> tuple[str, list[str], dict[str, str]]:
    """The refusal's message, the arguments it is about, and for each unknown argument the
    allowed one it most likely meant."""
    allowed_names = [(f.alias or n) for n, f in model.model_fields.items()]
    allowed = ", ".join(allowed_names)
    alternates = s.actor_alternates(model)
    given = given or set()
    problems: list[str] = []
    fields: list[str] = []
    meant: dict[str, str] = {}
    looked_at = 0
    for e in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"])
        if len(problems) >= PROBLEMS_SHOWN:
            problems.append(MORE_PROBLEMS.format(count=exc.error_count() - PROBLEMS_SHOWN))
            break
        if not loc:  # a check of the whole object (an actor given twice, two ways)
            fields.extend(e.get("ctx", {}).get("fields", []))
            problems.append(e["msg"])
            continue
        fields.append(loc[:NAME_SHOWN])
        if e["type"] == "extra_forbidden":
            near = None
            if len(e["loc"]) == 1 and looked_at < NEAR_LOOKED_AT:
                looked_at += 1
                near = _near(model, loc, allowed_names, given)
            if near is None:
                problems.append(UNKNOWN_ARGUMENT.format(name=_shown(loc), allowed=allowed))
            else:
                meant[loc] = near
                problems.append(
                    UNKNOWN_ARGUMENT_NEAR.format(name=_shown(loc), near=near, allowed=allowed)
                )
        elif e["type"] == "missing" and loc in alternates:
            problems.append(ACTOR_MISSING.format(name=loc))
        elif e["type"] == "missing":
            problems.append(f"{loc[:NAME_SHOWN]}: required")
        else:
            problems.append(f"{loc[:NAME_SHOWN]}: {e['msg']}")
    return "Invalid arguments: " + "; ".join(problems) + ".", fields, meant


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
        message, fields, meant = _describe_validation(tool.input_model, exc, set(arguments))
        extra: dict[str, Any] = {"fields": fields}
        if meant:
            extra["didYouMean"] = meant
        raise errors.ToolArgumentsError(message, extra=extra) from None
