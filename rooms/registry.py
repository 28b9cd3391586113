"""THE table of tools: name -> input model, operation, description, read-only flag.

MCP's tools/list and tools/call and the REST door are generated from this one table; no
door holds logic of its own. Tool names and argument names are roomd's (TOOLS.md) and
meet the service names only here.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ValidationError

from rooms import errors, selectors, services
from rooms import schemas as s
from rooms.refs import RoomRef

Operation = Callable[[Any, Any], Awaitable[Any]]


class Access(Protocol):
    """What a door knows about its caller, as the registry needs it (tenants implements it)."""

    async def room(self, room_id: str, write: bool) -> RoomRef:
        """The access check: a RoomRef, or a DomainError with one text for every denial."""
        ...

    async def rooms(self) -> list[dict[str, Any]]:
        """The rooms this caller may reach."""
        ...


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    input_model: type[s.ToolInput]
    # scope "room": run(RoomRef, args) after the access check; "caller": run(Access, args).
    run: Operation
    description: str
    read_only: bool
    # False for calls that change state even when they only read (cursors move), or whose
    # repetition adds something.
    idempotent: bool = True
    scope: Literal["room", "caller"] = "room"

    def input_schema(self) -> dict[str, Any]:
        schema = self.input_model.model_json_schema(by_alias=True)
        schema.pop("title", None)
        schema.setdefault("properties", {})
        return schema


CONTEXT_TYPES_HELP = (
    "Payload by type — api_contract: {service, version, endpoints: [{method (GET/POST/PUT/"
    "DELETE/PATCH), path, response (object), auth_required (bool), description, request?}], "
    "base_url?}; arch_decision: {title, decision, rationale, alternatives: [str], "
    "consequences: [str]}; task: {task_id, acceptance_criteria: [str], technical_notes}; "
    "change_request: {requested_by, target_agent, description, urgency (low/medium/high), "
    "blocking_task_id?}; note: {text, references?: [str]}."
)

TOOLS: tuple[Tool, ...] = (
    # --- Rooms
    Tool(
        "list_rooms",
        s.ListRoomsInput,
        lambda access, a: access.rooms(),
        "The rooms your key can reach (your team's rooms; for an invite, its one room), with "
        "status and last activity.",
        read_only=True,
        scope="caller",
    ),
    # --- Plan
    Tool(
        "read_plan",
        s.ReadPlanInput,
        lambda room, a: selectors.plan_get(room),
        "Read the room's whole plan: every task in plan order with status, owner and "
        "dependencies. Start here to see what there is to do.",
        read_only=True,
    ),
    Tool(
        "add_task",
        s.AddTaskInput,
        lambda room, a: services.task_add(
            room,
            title=a.title,
            description=a.description,
            depends_on=a.depends_on,
            priority=a.priority,
            agent_id=a.agentId,
        ),
        "Add a pending, unowned task to the plan. depends_on lists task ids that must be done "
        "first (unknown ids are accepted but keep the task blocked; see `warnings`).",
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "update_task",
        s.UpdateTaskInput,
        lambda room, a: services.task_update(
            room,
            task_id=a.taskId,
            status=a.status,
            owner_given="owner" in a.model_fields_set,
            owner=a.owner,
            note=a.note,
            description=a.description,
            agent_id=a.agentId,
        ),
        "Change a task's status (pending/in_progress/done/blocked) and optionally its owner "
        '(set yourself to claim it; "" or null clears it), add a note, or replace the '
        "description. Atomic: no need to take a lock first. Emits task_updated.",
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "get_task",
        s.GetTaskInput,
        lambda room, a: selectors.task_get(room, task_id=a.taskId),
        "Read one task by id.",
        read_only=True,
    ),
    Tool(
        "get_unblocked_tasks",
        s.GetUnblockedTasksInput,
        lambda room, a: selectors.task_list_unblocked(room, agent_id=a.agentId),
        "Pending tasks whose dependencies all exist and are done, by priority then plan order. "
        "With agentId, tasks owned by other agents are left out. Use it to pick your next task.",
        read_only=True,
    ),
    Tool(
        "get_my_tasks",
        s.GetMyTasksInput,
        lambda room, a: selectors.task_list_for_agent(room, agent_id=a.agentId),
        "Tasks whose owner is agentId.",
        read_only=True,
    ),
    Tool(
        "get_my_summary",
        s.GetMySummaryInput,
        lambda room, a: services.agent_summary(room, agent_id=a.agentId),
        "One call for a cold start: your tasks, your unread events (up to 50, marked as "
        "delivered like get_unread_events), how many context entries changed since you last "
        "looked, and who is present.",
        read_only=True,
        idempotent=False,
    ),
    # --- Context
    Tool(
        "write_context",
        s.WriteContextInput,
        lambda room, a: services.context_write(
            room,
            type_=a.type,
            summary=a.summary,
            consuming_agents=a.consuming_agents,
            payload=a.payload,
            author=a.author,
        ),
        "Record a typed artifact (API contract, decision, task note, change request, note) at "
        "version 1.0; each consuming agent gets a context_available event. " + CONTEXT_TYPES_HELP,
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "read_context",
        s.ReadContextInput,
        lambda room, a: selectors.context_get(room, entry_id=a.id),
        "Read one context entry (its current version) by id.",
        read_only=True,
    ),
    Tool(
        "list_context",
        s.ListContextInput,
        lambda room, a: selectors.context_list(room, type_=a.type, author=a.author),
        "List context entries, newest first, optionally of one type or by one author.",
        read_only=True,
    ),
    Tool(
        "update_context",
        s.UpdateContextInput,
        lambda room, a: services.context_update(
            room,
            entry_id=a.id,
            author=a.author,
            summary=a.summary,
            consuming_agents=a.consuming_agents,
            payload=a.payload,
            expected_version=a.expectedVersion,
        ),
        "Revise a context entry in place: the version goes 1.0 -> 1.1 -> 1.2, the previous "
        "version is kept, consumers get context_updated. Pass expectedVersion to refuse the "
        "update if someone changed the entry since you read it. The payload is re-validated "
        "against the entry's type.",
        read_only=False,
        idempotent=False,
    ),
    # --- Events
    Tool(
        "post_event",
        s.PostEventInput,
        lambda room, a: services.event_post(
            room, type_=a.type, from_=a.from_, to=a.to, payload=a.payload
        ),
        "Append an event to the room's log (an open type string such as peer_request). For "
        "durable requests write a change_request context entry instead.",
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "read_events",
        s.ReadEventsInput,
        lambda room, a: selectors.event_list(room, since=a.since, limit=a.limit, order=a.order),
        "Read the log without moving your cursor: the newest `limit` events, newest first; "
        "with since (an ISO time or an event id) only later ones; with order='asc' the first "
        "`limit` after since, to page through the whole log.",
        read_only=True,
    ),
    Tool(
        "get_unread_events",
        s.GetUnreadEventsInput,
        lambda room, a: services.event_take_unread(
            room, agent_id=a.agentId, limit=a.limit, addressed_only=a.addressedOnly
        ),
        "Events you have not been given yet, oldest first, up to limit; your cursor moves past "
        "them, so each event reaches you exactly once. Call again while count == limit.",
        read_only=True,
        idempotent=False,
    ),
    Tool(
        "wait_for_events",
        s.WaitForEventsInput,
        lambda room, a: services.event_wait(
            room,
            agent_id=a.agentId,
            timeout_ms=a.timeoutMs,
            limit=a.limit,
            addressed_only=a.addressedOnly,
        ),
        "Like get_unread_events, but when nothing is unread it waits (up to timeoutMs, at most "
        "30,000) and returns the moment another agent writes to the room; "
        "{events: [], timedOut: true} if nothing came. Use it instead of polling.",
        read_only=True,
        idempotent=False,
    ),
    Tool(
        "mark_event_read",
        s.MarkEventReadInput,
        lambda room, a: services.event_mark_read(room, event_id=a.eventId, agent_id=a.agentId),
        "Record an explicit read receipt for one event (see get_event_reads).",
        read_only=False,
    ),
    Tool(
        "get_event_reads",
        s.GetEventReadsInput,
        lambda room, a: selectors.event_reads_get(room, event_id=a.eventId),
        "Who has marked an event as read, and when.",
        read_only=True,
    ),
    Tool(
        "reply_to_event",
        s.ReplyToEventInput,
        lambda room, a: services.event_post(
            room, type_=a.type, from_=a.from_, to=a.to, payload=a.payload, reply_to=a.replyToId
        ),
        "Post an event that answers another one (linked by reply_to_id).",
        read_only=False,
        idempotent=False,
    ),
    # --- Presence
    Tool(
        "heartbeat",
        s.HeartbeatInput,
        lambda room, a: services.presence_heartbeat(room, agent_id=a.agentId),
        "Say you are here (online for 120 s after each heartbeat); returns who else is.",
        read_only=False,
    ),
    Tool(
        "get_presence",
        s.GetPresenceInput,
        lambda room, a: selectors.presence_list(room),
        "Every agent the room has seen, online (heartbeat within 120 s) or offline, with lastSeen.",
        read_only=True,
    ),
    # --- Locks
    Tool(
        "acquire_lock",
        s.AcquireLockInput,
        lambda room, a: services.lock_acquire(
            room, resource=a.resource, agent_id=a.agentId, ttl_seconds=a.ttlSeconds
        ),
        "Take an advisory lock on a resource name for ttlSeconds (1-300, default 30). Returns "
        "acquired, the actual holder, and a fencingToken that grows with every new grant. "
        "Acquiring a lock you hold renews it. Plan writes do not need it.",
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "release_lock",
        s.ReleaseLockInput,
        lambda room, a: services.lock_release(room, resource=a.resource, agent_id=a.agentId),
        "Release a lock you hold (only the holder can).",
        read_only=False,
    ),
    Tool(
        "list_locks",
        s.ListLocksInput,
        lambda room, a: selectors.lock_list(room),
        "Locks currently held, with owner and expiry.",
        read_only=True,
    ),
    # --- Shared variables
    Tool(
        "set_shared_var",
        s.SetSharedVarInput,
        lambda room, a: services.var_set(room, key=a.key, value=a.value, agent_id=a.agentId),
        "Set a small shared string (a port, a staging URL). Emits shared_var_set.",
        read_only=False,
    ),
    Tool(
        "get_shared_var",
        s.GetSharedVarInput,
        lambda room, a: selectors.var_get(room, key=a.key),
        "Read one shared variable: {key, value, found}; the value is the string that was set.",
        read_only=True,
    ),
    Tool(
        "list_shared_vars",
        s.ListSharedVarsInput,
        lambda room, a: selectors.var_list(room),
        "Every shared variable of the room.",
        read_only=True,
    ),
)

TOOLS_BY_NAME: dict[str, Tool] = {t.name: t for t in TOOLS}

UNKNOWN_TOOL = "Unknown tool {name!r}. The tools are: {names}."
NOT_AN_OBJECT = "Tool arguments must be a JSON object, got {kind}."
UNKNOWN_ARGUMENT = "unknown argument {name!r} (allowed: {allowed})"
BAD_TEXT = "Arguments contain text that is not valid Unicode (a lone surrogate?)."


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
    try:
        return tool.input_model.model_validate(arguments)
    except ValidationError as exc:
        message, fields = _describe_validation(tool.input_model, exc)
        raise errors.ToolArgumentsError(message, extra={"fields": fields}) from None


async def tool_invoke(name: str, arguments: Any, access: Access) -> Any:
    """Validate, check access (the door's `access` makes the RoomRef), run. Raises
    DomainError for anything the caller can correct."""
    tool = tool_get(name)
    args = arguments_parse(tool, arguments)
    if tool.scope == "caller":
        return await tool.run(access, args)
    assert isinstance(args, s.RoomInput)
    room = await access.room(args.roomId, not tool.read_only)
    return await tool.run(room, args)
