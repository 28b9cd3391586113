"""THE table of tools: name -> input model, output type, operation, description, flags.

MCP's tools/list and tools/call, the REST door and its OpenAPI paths are generated from
this one table; no door holds logic of its own. Tool names and argument names are roomd's
(docs/protocol.md) and meet the service names only here. Each row is typed end to end: its
operation takes the row's input model and returns the row's output type, so mypy checks
every argument and every result shape.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Generic, Literal, Protocol, TypeVar, cast

from pydantic import BaseModel, TypeAdapter, ValidationError

from rooms import (
    errors,
    handoffs,
    leases,
    lifecycle,
    memory,
    messages,
    search,
    selectors,
    services,
    templates,
    verification,
)
from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef

In = TypeVar("In", bound=s.ToolInput)
RoomIn = TypeVar("RoomIn", bound=s.RoomInput)
Out = TypeVar("Out")


class CallerScope(Protocol):
    """What a tool that names no room may ask of its caller (tenants.access implements it)."""

    async def rooms(self) -> list[r.RoomRow]:
        """The rooms this caller may reach."""
        ...


@dataclass(frozen=True, slots=True)
class _Row(Generic[In, Out]):
    name: str
    input_model: type[In]
    output: TypeAdapter[Out] = field(repr=False)
    description: str
    # True: the tool needs no write capability (it reads; cursor tools move only the
    # caller's own cursor).
    read_only: bool
    # False for calls that change state even when they only read (cursors move), or whose
    # repetition adds something.
    idempotent: bool = True
    # True for calls that wait (wait_for_events): they hold a waiter slot and end when the
    # credential is revoked.
    waits: bool = False
    # What the caller must be allowed to manage besides writing ("rooms": set_room_mode),
    # checked with every other permission, in tenants.access, for every door.
    manages: str | None = None
    # True: it runs on a paused or completed room too (set_room_status), and the door
    # records what it changed (tenants.access.room_status_recorded).
    lifecycle: bool = False
    # For a tool whose roomId may be left out (create_room_from_template): the id of the
    # room the door makes for it, from its arguments and the caller's team (tenants.access.
    # room_made creates it whether or not first touch claims rooms).
    makes_room: Callable[[Any, int], str] | None = field(default=None, repr=False)

    def input_schema(self) -> dict[str, Any]:
        return _input_schema(self.input_model)

    def output_schema(self) -> dict[str, Any]:
        schema = _output_schema(self.name, self.output)
        if self.read_only or _wraps(self.name, self.output):
            return schema
        # Every write's answer may say what was redacted from it (rooms.redaction).
        properties = {**schema.get("properties", {}), "redacted": REDACTED_SCHEMA}
        return {**schema, "properties": properties}

    def wraps_output(self) -> bool:
        """MCP's structuredContent is an object: a list result goes in as {"result": [...]}
        (the SDK's convention), while the text content stays roomd's bare list."""
        return _wraps(self.name, self.output)

    def actors(self) -> tuple[str, ...]:
        """The argument fields that name who acts (bound credentials act only as their agent)."""
        return s.actor_fields(self.input_model)


@dataclass(frozen=True, slots=True)
class RoomTool(_Row[RoomIn, Out]):
    """A tool on one room: run(RoomRef, args) after the access check made the RoomRef."""

    run: Callable[[RoomRef, RoomIn], Awaitable[Out]] = field(kw_only=True, repr=False)

    @property
    def scope(self) -> Literal["room"]:
        return "room"

    @property
    def names_room(self) -> bool:
        """False for a tool whose room may be left out (create_room_from_template makes
        one): its REST door is also POST /api/v1/tools/<tool>."""
        return "roomId" in self.input_schema().get("required", [])


@dataclass(frozen=True, slots=True)
class CallerTool(_Row[In, Out]):
    """A tool that names no room: run(the caller's scope, args)."""

    run: Callable[[CallerScope, In], Awaitable[Out]] = field(kw_only=True, repr=False)

    @property
    def scope(self) -> Literal["caller"]:
        return "caller"


Tool = RoomTool[Any, Any] | CallerTool[Any, Any]


@cache
def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _plain(node: Any, defs: dict[str, Any]) -> Any:
    """A schema as cheap to validate as it can be without losing a constraint: references
    inlined, titles dropped, `anyOf` of bare types folded into one `type` list. Clients
    (the official SDK among them) validate every structured result against it."""
    if isinstance(node, list):
        return [_plain(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _plain(defs[ref.rsplit("/", 1)[-1]], defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):  # names, not keywords
            out[key] = {name: _plain(sub, defs) for name, sub in value.items()}
        elif key not in ("title", "$defs"):
            out[key] = _plain(value, defs)
    any_of = out.get("anyOf")
    if isinstance(any_of, list) and all(
        isinstance(a, dict) and set(a) == {"type"} and isinstance(a["type"], str) for a in any_of
    ):
        del out["anyOf"]
        out["type"] = [a["type"] for a in any_of]
    return out


@cache
def _output_schema(name: str, output: TypeAdapter[Any]) -> dict[str, Any]:
    raw = output.json_schema(by_alias=True)
    schema: dict[str, Any] = _plain(raw, raw.get("$defs", {}))
    if schema.get("type") == "object":
        return schema
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


REDACTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Secrets found in what you wrote, replaced by markers before it was stored.",
    "properties": {
        "count": {"type": "integer"},
        "places": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"where": {"type": "string"}, "kind": {"type": "string"}},
                "required": ["where", "kind"],
            },
        },
        "message": {"type": "string"},
    },
    "required": ["count", "places", "message"],
}


@cache
def _wraps(name: str, output: TypeAdapter[Any]) -> bool:
    return output.json_schema(by_alias=True).get("type") != "object"


CONTEXT_TYPES_HELP = (
    "Payload by type — api_contract: {service, version, endpoints: [{method (GET/POST/PUT/"
    "DELETE/PATCH), path, response (object), auth_required (bool), description, request?}], "
    "base_url?}; arch_decision: {title, decision, rationale, alternatives: [str], "
    "consequences: [str]}; task: {task_id, acceptance_criteria: [str], technical_notes}; "
    "change_request: {requested_by, target_agent, description, urgency (low/medium/high), "
    "blocking_task_id?}; note: {text, references?: [str]}."
)

# --- The operations: each adapts one tool's arguments to one service or selector ----------


async def _list_rooms(scope: CallerScope, a: s.ListRoomsInput) -> list[r.RoomRow]:
    return await scope.rooms()


async def _read_plan(room: RoomRef, a: s.ReadPlanInput) -> r.Plan:
    return await selectors.plan_get(room)


async def _add_task(room: RoomRef, a: s.AddTaskInput) -> r.Task:
    return await services.task_add(
        room,
        title=a.title,
        description=a.description,
        depends_on=a.depends_on,
        priority=a.priority,
        agent_id=a.agentId,
    )


async def _update_task(room: RoomRef, a: s.UpdateTaskInput) -> r.Task:
    return await services.task_update(
        room,
        task_id=a.taskId,
        status=a.status,
        owner_given="owner" in a.model_fields_set,
        owner=a.owner,
        note=a.note,
        description=a.description,
        agent_id=a.agentId,
        expected_version=a.expectedVersion,
    )


async def _claim_task(room: RoomRef, a: s.ClaimTaskInput) -> r.Task:
    return await services.task_claim(
        room, task_id=a.taskId, agent_id=a.agentId, lease_seconds=a.leaseSeconds, paths=a.paths
    )


async def _release_task(room: RoomRef, a: s.ReleaseTaskInput) -> r.Task:
    return await services.task_release(room, task_id=a.taskId, agent_id=a.agentId, note=a.note)


async def _get_task(room: RoomRef, a: s.GetTaskInput) -> r.Task:
    return await selectors.task_get(room, task_id=a.taskId)


async def _get_unblocked_tasks(room: RoomRef, a: s.GetUnblockedTasksInput) -> list[r.Task]:
    return await selectors.task_list_unblocked(room, agent_id=a.agentId)


async def _get_my_tasks(room: RoomRef, a: s.GetMyTasksInput) -> list[r.Task]:
    return await selectors.task_list_for_agent(room, agent_id=a.agentId)


async def _get_my_summary(room: RoomRef, a: s.GetMySummaryInput) -> r.Summary:
    return await services.agent_summary(room, agent_id=a.agentId)


async def _write_context(room: RoomRef, a: s.WriteContextInput) -> r.ContextEntry:
    return await services.context_write(
        room,
        type_=a.type,
        summary=a.summary,
        consuming_agents=a.consuming_agents,
        payload=a.payload,
        author=a.author,
    )


async def _read_context(room: RoomRef, a: s.ReadContextInput) -> r.ContextEntry:
    return await selectors.context_read(room, entry_id=a.id, agent_id=a.agentId)


async def _list_context(room: RoomRef, a: s.ListContextInput) -> list[r.ContextEntry]:
    listed = await selectors.context_list(room, type_=a.type, author=a.author, agent_id=a.agentId)
    if a.includeInherited:
        listed += [
            e
            for e in await memory.memory_list(room, type_=a.type)
            if a.author is None or e["author"] == a.author
        ]
    return listed


async def _update_context(room: RoomRef, a: s.UpdateContextInput) -> r.ContextEntry:
    return await services.context_update(
        room,
        entry_id=a.id,
        author=a.author,
        summary=a.summary,
        consuming_agents=a.consuming_agents,
        payload=a.payload,
        expected_version=a.expectedVersion,
    )


async def _post_event(room: RoomRef, a: s.PostEventInput) -> r.Event:
    return await services.event_post(room, type_=a.type, from_=a.from_, to=a.to, payload=a.payload)


async def _read_events(room: RoomRef, a: s.ReadEventsInput) -> list[r.Event]:
    return await selectors.event_list(room, since=a.since, limit=a.limit, order=a.order)


async def _get_unread_events(room: RoomRef, a: s.GetUnreadEventsInput) -> r.Unread:
    return await services.event_take_unread(
        room, agent_id=a.agentId, limit=a.limit, addressed_only=a.addressedOnly
    )


async def _wait_for_events(room: RoomRef, a: s.WaitForEventsInput) -> r.Waited:
    return await services.event_wait(
        room,
        agent_id=a.agentId,
        timeout_ms=a.timeoutMs,
        limit=a.limit,
        addressed_only=a.addressedOnly,
    )


async def _mark_event_read(room: RoomRef, a: s.MarkEventReadInput) -> r.EventMarked:
    return await services.event_mark_read(room, event_id=a.eventId, agent_id=a.agentId)


async def _get_event_reads(room: RoomRef, a: s.GetEventReadsInput) -> r.EventReads:
    return await selectors.event_reads_get(room, event_id=a.eventId)


async def _reply_to_event(room: RoomRef, a: s.ReplyToEventInput) -> r.Event:
    return await services.event_post(
        room, type_=a.type, from_=a.from_, to=a.to, payload=a.payload, reply_to=a.replyToId
    )


async def _heartbeat(room: RoomRef, a: s.HeartbeatInput) -> r.Heartbeat:
    return await services.presence_heartbeat(room, agent_id=a.agentId, tags=a.tags)


async def _get_presence(room: RoomRef, a: s.GetPresenceInput) -> list[r.AgentPresence]:
    return await selectors.presence_list(room)


async def _acquire_lock(room: RoomRef, a: s.AcquireLockInput) -> r.LockGranted:
    return await services.lock_acquire(
        room, resource=a.resource, agent_id=a.agentId, ttl_seconds=a.ttlSeconds
    )


async def _release_lock(room: RoomRef, a: s.ReleaseLockInput) -> r.LockReleased:
    return await services.lock_release(room, resource=a.resource, agent_id=a.agentId)


async def _list_locks(room: RoomRef, a: s.ListLocksInput) -> list[r.LockRow]:
    return await selectors.lock_list(room)


async def _set_shared_var(room: RoomRef, a: s.SetSharedVarInput) -> r.VarSet:
    return await services.var_set(room, key=a.key, value=a.value, agent_id=a.agentId)


async def _get_shared_var(room: RoomRef, a: s.GetSharedVarInput) -> r.VarGot:
    return await selectors.var_get(room, key=a.key)


async def _list_shared_vars(room: RoomRef, a: s.ListSharedVarsInput) -> r.VarList:
    return await selectors.var_list(room)


# --- The table ------------------------------------------------------------------------------


async def _leave_room(room: RoomRef, a: s.LeaveRoomInput) -> r.Left:
    return await services.presence_leave(room, agent_id=a.agentId)


async def _get_room_info(room: RoomRef, a: s.GetRoomInfoInput) -> r.RoomInfo:
    return await selectors.room_info(room)


async def _delete_task(room: RoomRef, a: s.DeleteTaskInput) -> r.TaskDeletedResult:
    return await services.task_delete(
        room, task_id=a.taskId, agent_id=a.agentId, expected_version=a.expectedVersion
    )


async def _set_task_priority(room: RoomRef, a: s.SetTaskPriorityInput) -> r.Task:
    return await services.task_set_priority(
        room,
        task_id=a.taskId,
        priority=a.priority,
        agent_id=a.agentId,
        expected_version=a.expectedVersion,
    )


async def _add_dependency(room: RoomRef, a: s.AddDependencyInput) -> r.Task:
    return await services.task_add_dependency(
        room,
        task_id=a.taskId,
        depends_on=a.dependsOn,
        agent_id=a.agentId,
        expected_version=a.expectedVersion,
    )


async def _delete_context(room: RoomRef, a: s.DeleteContextInput) -> r.ContextDeleted:
    return await services.context_delete(room, entry_id=a.id, agent_id=a.agentId)


async def _get_context_history(room: RoomRef, a: s.GetContextHistoryInput) -> r.ContextHistory:
    return await selectors.context_history_newest_first(room, entry_id=a.id)


async def _delete_event(room: RoomRef, a: s.DeleteEventInput) -> r.EventDeleted:
    return await services.event_delete(room, event_id=a.eventId, agent_id=a.agentId)


async def _request_review(room: RoomRef, a: s.RequestReviewInput) -> r.Review:
    return await services.review_request(
        room,
        target_type=a.targetType,
        target_id=a.targetId,
        requested_by=a.requestedBy,
        reviewer=a.reviewer,
        note=a.note,
    )


async def _approve(room: RoomRef, a: s.ApproveInput) -> r.Review:
    return await services.review_resolve(
        room, review_id=a.reviewId, agent_id=a.agentId, approve=True, note=a.note
    )


async def _reject(room: RoomRef, a: s.RejectInput) -> r.Review:
    return await services.review_resolve(
        room, review_id=a.reviewId, agent_id=a.agentId, approve=False, note=a.note
    )


async def _list_reviews(room: RoomRef, a: s.ListReviewsInput) -> list[r.Review]:
    return await selectors.review_list(room, status=a.status)


async def _diff_context(room: RoomRef, a: s.DiffContextInput) -> r.ContextDiff:
    return await selectors.context_diff(room, entry_id=a.id, against=a.againstVersion)


async def _list_templates(scope: CallerScope, a: s.ListTemplatesInput) -> r.TemplateList:
    return templates.template_list()


async def _create_room_from_template(
    room: RoomRef, a: s.CreateRoomFromTemplateInput
) -> r.RoomFromTemplate:
    return await services.room_from_template(room, template_id=a.templateId, agent_id=a.agentId)


async def _lease_claim(room: RoomRef, a: s.LeaseClaimInput) -> r.LeaseClaimed:
    return await leases.lease_claim(
        room,
        agent_id=a.agentId,
        path=a.path,
        mode=a.mode,
        ttl_seconds=a.ttlSeconds,
        task_id=a.taskId,
        reason=a.reason,
    )


async def _lease_renew(room: RoomRef, a: s.LeaseRenewInput) -> r.Lease:
    return await leases.lease_renew(
        room, agent_id=a.agentId, lease_id=a.leaseId, path=a.path, ttl_seconds=a.ttlSeconds
    )


async def _lease_release(room: RoomRef, a: s.LeaseReleaseInput) -> r.LeaseReleased:
    return await leases.lease_release(room, agent_id=a.agentId, lease_id=a.leaseId, path=a.path)


async def _lease_check(room: RoomRef, a: s.LeaseCheckInput) -> r.LeaseCheck:
    return await leases.lease_check(room, path=a.path, agent_id=a.agentId)


async def _lease_list(room: RoomRef, a: s.LeaseListInput) -> r.LeaseList:
    return await leases.lease_list(room, agent_id=a.agentId)


async def _note_read(room: RoomRef, a: s.NoteReadInput) -> r.FileRead:
    return await leases.file_read_note(room, agent_id=a.agentId, path=a.path, sha256=a.sha256)


async def _drift_check(room: RoomRef, a: s.DriftCheckInput) -> r.Drift:
    return await leases.drift_check(room, agent_id=a.agentId, path=a.path, sha256=a.sha256)


async def _room_claim(room: RoomRef, a: s.RoomClaimInput) -> r.LeaseClaimed:
    return await leases.lease_claim(
        room,
        agent_id=a.agentId,
        path=a.path,
        mode="exclusive",
        ttl_seconds=300,
        task_id=None,
        reason=None,
    )


async def _room_release(room: RoomRef, a: s.RoomReleaseInput) -> r.LeaseReleased:
    return await leases.lease_release(room, agent_id=a.agentId, lease_id=None, path=a.path)


async def _room_broadcast(room: RoomRef, a: s.RoomBroadcastInput) -> r.Event:
    return await services.event_post(
        room,
        type_="broadcast",
        from_=a.agentId,
        to="all",
        payload={"text": a.text},
        reserved=True,
    )


async def _room_state(room: RoomRef, a: s.RoomStateInput) -> r.RoomState:
    return await leases.room_state(room)


async def _room_read(room: RoomRef, a: s.RoomReadInput) -> r.Unread:
    return await services.event_take_unread(
        room, agent_id=a.agentId, limit=a.limit, addressed_only=False
    )


async def _send_message(room: RoomRef, a: s.SendMessageInput) -> r.MessageSent:
    return await messages.message_send(
        room,
        sender=a.from_,
        to=a.to,
        body=a.body,
        subject=a.subject,
        reply_to=a.replyTo,
        ttl_seconds=a.ttlSeconds,
        ack_required=a.ackRequired,
    )


async def _inbox(room: RoomRef, a: s.InboxInput) -> r.Inbox:
    return await messages.message_inbox(
        room, agent_id=a.agentId, limit=a.limit, unread_only=a.unreadOnly
    )


async def _ack_message(room: RoomRef, a: s.AckMessageInput) -> r.MessageAcked:
    return await messages.message_ack(room, agent_id=a.agentId, message_id=a.messageId)


async def _sent_messages(room: RoomRef, a: s.SentMessagesInput) -> r.SentMessages:
    return await messages.messages_sent(room, agent_id=a.agentId, limit=a.limit)


async def _submit_task(room: RoomRef, a: s.SubmitTaskInput) -> r.Task:
    evidence = [cast(r.Evidence, e.model_dump(exclude_none=True)) for e in a.evidence]
    return await verification.task_submit(
        room, task_id=a.taskId, agent_id=a.agentId, evidence=evidence
    )


async def _verify_task(room: RoomRef, a: s.VerifyTaskInput) -> r.Task:
    return await verification.task_verify(
        room, task_id=a.taskId, agent_id=a.agentId, accept=a.verdict == "accept", note=a.note
    )


async def _handoff_task(room: RoomRef, a: s.HandoffTaskInput) -> r.Handoff:
    return await handoffs.handoff_offer(
        room,
        task_id=a.taskId,
        sender=a.from_,
        receiver=a.to,
        note=a.note,
        context_ids=a.contextIds,
    )


async def _accept_handoff(room: RoomRef, a: s.AcceptHandoffInput) -> r.Handoff:
    return await handoffs.handoff_answer(
        room, handoff_id=a.handoffId, agent_id=a.agentId, accept=True, note=a.note
    )


async def _decline_handoff(room: RoomRef, a: s.DeclineHandoffInput) -> r.Handoff:
    return await handoffs.handoff_answer(
        room, handoff_id=a.handoffId, agent_id=a.agentId, accept=False, note=a.note
    )


async def _set_room_status(room: RoomRef, a: s.SetRoomStatusInput) -> r.RoomStatus:
    return await lifecycle.room_status_set(
        room, status=a.status, agent_id=a.agentId or services.UNNAMED_AGENT
    )


async def _set_room_mode(room: RoomRef, a: s.SetRoomModeInput) -> r.RoomMode:
    return await verification.room_mode_set(
        room,
        agent_id=a.agentId,
        evidence_required=a.evidenceRequired,
        turns=a.turns,
        moderator=a.moderator,
        turn_order=a.turnOrder,
        secrets=a.secrets,
    )


async def _search(room: RoomRef, a: s.SearchInput) -> r.SearchResult:
    return await search.room_search(room, q=a.q, limit=a.limit, semantic=a.semantic)


async def _get_room_analytics(room: RoomRef, a: s.GetRoomAnalyticsInput) -> r.RoomAnalytics:
    return await selectors.room_analytics(room, days=a.days)


_TASK = TypeAdapter(r.Task)
_TASKS = TypeAdapter(list[r.Task])
_ENTRY = TypeAdapter(r.ContextEntry)
_EVENT = TypeAdapter(r.Event)

TOOLS: tuple[Tool, ...] = (
    # --- Rooms
    CallerTool(
        "list_rooms",
        s.ListRoomsInput,
        TypeAdapter(list[r.RoomRow]),
        "The rooms your key can reach (your team's rooms; for an invite, its one room), with "
        "status and last activity.",
        read_only=True,
        run=_list_rooms,
    ),
    CallerTool(
        "list_templates",
        s.ListTemplatesInput,
        TypeAdapter(r.TemplateList),
        "The plans a room can start from (create_room_from_template): id, name, what it is "
        "for, and how many tasks it brings.",
        read_only=True,
        run=_list_templates,
    ),
    # --- Plan
    RoomTool(
        "read_plan",
        s.ReadPlanInput,
        TypeAdapter(r.Plan),
        "Read the room's whole plan: every task in plan order with status, owner and "
        "dependencies. Start here to see what there is to do.",
        read_only=True,
        run=_read_plan,
    ),
    RoomTool(
        "add_task",
        s.AddTaskInput,
        _TASK,
        "Add a pending, unowned task to the plan. depends_on lists task ids that must be done "
        "first (unknown ids are accepted but keep the task blocked; see `warnings`).",
        read_only=False,
        idempotent=False,
        run=_add_task,
    ),
    RoomTool(
        "update_task",
        s.UpdateTaskInput,
        _TASK,
        "Change a task's status (pending/in_progress/done/blocked) and optionally its owner "
        '("" or null clears it), add a note, or replace the description. To take a task, '
        "use claim_task: update_task will not move a task in progress from its owner to "
        "another agent. expectedVersion (the task's `version`) refuses the write if the task "
        "changed since you read it. Atomic: no need to take a lock first. Emits task_updated.",
        read_only=False,
        idempotent=False,
        run=_update_task,
    ),
    RoomTool(
        "claim_task",
        s.ClaimTaskInput,
        _TASK,
        "Take a task before you work on it: you become its owner and it goes in_progress, "
        "only if nobody else owns it, it is not done, and (when pending) its dependencies are "
        "done. Of agents claiming at once exactly one wins; the others are told who did. "
        "leaseSeconds makes the claim lapse if you go quiet (heartbeat to keep it). Claiming "
        "your own task again renews it. Emits task_claimed.",
        read_only=False,
        run=_claim_task,
    ),
    RoomTool(
        "release_task",
        s.ReleaseTaskInput,
        _TASK,
        "Give back a task you claimed and will not finish: it is pending and unowned again, "
        "with your note kept on it for whoever takes it next. Emits task_released.",
        read_only=False,
        idempotent=False,
        run=_release_task,
    ),
    RoomTool(
        "get_task",
        s.GetTaskInput,
        _TASK,
        "Read one task by id.",
        read_only=True,
        run=_get_task,
    ),
    RoomTool(
        "get_unblocked_tasks",
        s.GetUnblockedTasksInput,
        _TASKS,
        "Pending tasks whose dependencies all exist and are done, by priority then plan order. "
        "With agentId, tasks owned by other agents are left out. Use it to pick your next task.",
        read_only=True,
        run=_get_unblocked_tasks,
    ),
    RoomTool(
        "get_my_tasks",
        s.GetMyTasksInput,
        _TASKS,
        "Tasks whose owner is agentId.",
        read_only=True,
        run=_get_my_tasks,
    ),
    RoomTool(
        "get_my_summary",
        s.GetMySummaryInput,
        TypeAdapter(r.Summary),
        "One call for a cold start: your tasks, your unread events (up to 50, marked as "
        "delivered like get_unread_events), how many context entries changed since you last "
        "looked, and who is present.",
        read_only=True,
        idempotent=False,
        run=_get_my_summary,
    ),
    # --- Context
    RoomTool(
        "write_context",
        s.WriteContextInput,
        _ENTRY,
        "Record a typed artifact (API contract, decision, task note, change request, note) at "
        "version 1.0; each consuming agent gets a context_available event. " + CONTEXT_TYPES_HELP,
        read_only=False,
        idempotent=False,
        run=_write_context,
    ),
    RoomTool(
        "read_context",
        s.ReadContextInput,
        _ENTRY,
        "Read one context entry (its current version) by id.",
        read_only=True,
        run=_read_context,
    ),
    RoomTool(
        "list_context",
        s.ListContextInput,
        TypeAdapter(list[r.ContextEntry]),
        "List context entries, newest first, optionally of one type or by one author.",
        read_only=True,
        run=_list_context,
    ),
    RoomTool(
        "update_context",
        s.UpdateContextInput,
        _ENTRY,
        "Revise a context entry in place: the version goes 1.0 -> 1.1 -> 1.2, the previous "
        "version is kept, consumers get context_updated. Pass expectedVersion to refuse the "
        "update if someone changed the entry since you read it. The payload is re-validated "
        "against the entry's type.",
        read_only=False,
        idempotent=False,
        run=_update_context,
    ),
    # --- Events
    RoomTool(
        "post_event",
        s.PostEventInput,
        _EVENT,
        "Append an event to the room's log (an open type string such as peer_request). For "
        "durable requests write a change_request context entry instead.",
        read_only=False,
        idempotent=False,
        run=_post_event,
    ),
    RoomTool(
        "read_events",
        s.ReadEventsInput,
        TypeAdapter(list[r.Event]),
        "Read the log without moving your cursor: the newest `limit` events, newest first; "
        "with since (an ISO time or an event id) only later ones; with order='asc' the first "
        "`limit` after since, to page through the whole log.",
        read_only=True,
        run=_read_events,
    ),
    RoomTool(
        "get_unread_events",
        s.GetUnreadEventsInput,
        TypeAdapter(r.Unread),
        "Events you have not been given yet, oldest first, up to limit; your cursor moves past "
        "them, so each event reaches you exactly once. Call again while count == limit.",
        read_only=True,
        idempotent=False,
        run=_get_unread_events,
    ),
    RoomTool(
        "wait_for_events",
        s.WaitForEventsInput,
        TypeAdapter(r.Waited),
        "Like get_unread_events, but when nothing is unread it waits (up to timeoutMs, at most "
        "30,000) and returns the moment another agent writes to the room; "
        "{events: [], timedOut: true} if nothing came. Use it instead of polling.",
        read_only=True,
        idempotent=False,
        waits=True,
        run=_wait_for_events,
    ),
    RoomTool(
        "mark_event_read",
        s.MarkEventReadInput,
        TypeAdapter(r.EventMarked),
        "Record an explicit read receipt for one event (see get_event_reads).",
        read_only=False,
        run=_mark_event_read,
    ),
    RoomTool(
        "get_event_reads",
        s.GetEventReadsInput,
        TypeAdapter(r.EventReads),
        "Who has marked an event as read, and when.",
        read_only=True,
        run=_get_event_reads,
    ),
    RoomTool(
        "reply_to_event",
        s.ReplyToEventInput,
        _EVENT,
        "Post an event that answers another one (linked by reply_to_id).",
        read_only=False,
        idempotent=False,
        run=_reply_to_event,
    ),
    # --- Presence
    RoomTool(
        "heartbeat",
        s.HeartbeatInput,
        TypeAdapter(r.Heartbeat),
        "Say you are here (online for 120 s after each heartbeat); returns who else is: the "
        "100 agents seen most recently, and presenceTotal, how many the room knows "
        "(get_presence lists them all).",
        read_only=False,
        run=_heartbeat,
    ),
    RoomTool(
        "get_presence",
        s.GetPresenceInput,
        TypeAdapter(list[r.AgentPresence]),
        "Every agent the room has seen, online (heartbeat within 120 s) or offline, with lastSeen.",
        read_only=True,
        run=_get_presence,
    ),
    # --- Locks
    RoomTool(
        "acquire_lock",
        s.AcquireLockInput,
        TypeAdapter(r.LockGranted),
        "Take an advisory lock on a resource name for ttlSeconds (1-300, default 30). Returns "
        "acquired, the actual holder, and a fencingToken that grows with every new grant. "
        "Acquiring a lock you hold renews it. Plan writes do not need it.",
        read_only=False,
        idempotent=False,
        run=_acquire_lock,
    ),
    RoomTool(
        "release_lock",
        s.ReleaseLockInput,
        TypeAdapter(r.LockReleased),
        "Release a lock you hold (only the holder can).",
        read_only=False,
        run=_release_lock,
    ),
    RoomTool(
        "list_locks",
        s.ListLocksInput,
        TypeAdapter(list[r.LockRow]),
        "Locks currently held, with owner and expiry.",
        read_only=True,
        run=_list_locks,
    ),
    # --- Shared variables
    RoomTool(
        "set_shared_var",
        s.SetSharedVarInput,
        TypeAdapter(r.VarSet),
        "Set a small shared string (a port, a staging URL). Emits shared_var_set.",
        read_only=False,
        run=_set_shared_var,
    ),
    RoomTool(
        "get_shared_var",
        s.GetSharedVarInput,
        TypeAdapter(r.VarGot),
        "Read one shared variable: {key, value, found}; the value is the string that was set.",
        read_only=True,
        run=_get_shared_var,
    ),
    RoomTool(
        "list_shared_vars",
        s.ListSharedVarsInput,
        TypeAdapter(r.VarList),
        "Every shared variable of the room.",
        read_only=True,
        run=_list_shared_vars,
    ),
    RoomTool(
        "leave_room",
        s.LeaveRoomInput,
        TypeAdapter(r.Left),
        "Say you are leaving: you drop out of presence (others see agent_left) and your "
        "cursor is kept, so coming back reads on where you stopped.",
        read_only=False,
        run=_leave_room,
    ),
    RoomTool(
        "get_room_info",
        s.GetRoomInfoInput,
        TypeAdapter(r.RoomInfo),
        "The room at a glance: owner team, creation time, and exact counts of agents, tasks, "
        "context entries and events.",
        read_only=True,
        run=_get_room_info,
    ),
    RoomTool(
        "delete_task",
        s.DeleteTaskInput,
        TypeAdapter(r.TaskDeletedResult),
        "Remove a task from the plan (its claim goes with it). Tasks that depended on it are "
        "named in `warnings`. expectedVersion refuses it if the task changed since you read "
        "it. Emits task_deleted.",
        read_only=False,
        idempotent=False,
        run=_delete_task,
    ),
    RoomTool(
        "set_task_priority",
        s.SetTaskPriorityInput,
        _TASK,
        "Set a task's priority (lower runs first in get_unblocked_tasks). Emits task_updated.",
        read_only=False,
        run=_set_task_priority,
    ),
    RoomTool(
        "add_dependency",
        s.AddDependencyInput,
        _TASK,
        "Make a task wait for another (dependsOn must be done first). Adding one that is "
        "already there changes nothing; a dependency that would close a cycle is refused, "
        "naming the cycle. Emits task_updated.",
        read_only=False,
        run=_add_dependency,
    ),
    RoomTool(
        "delete_context",
        s.DeleteContextInput,
        TypeAdapter(r.ContextDeleted),
        "Remove a context entry and its whole history. Emits context_deleted.",
        read_only=False,
        idempotent=False,
        run=_delete_context,
    ),
    RoomTool(
        "get_context_history",
        s.GetContextHistoryInput,
        TypeAdapter(r.ContextHistory),
        "A context entry now and every kept earlier version of it, newest first, each with "
        "`changes` (what differs from the version before).",
        read_only=True,
        run=_get_context_history,
    ),
    RoomTool(
        "delete_event",
        s.DeleteEventInput,
        TypeAdapter(r.EventDeleted),
        "Remove one event from the log, in place (events posted meanwhile are never lost). "
        "Emits event_deleted.",
        read_only=False,
        idempotent=False,
        run=_delete_event,
    ),
    RoomTool(
        "request_review",
        s.RequestReviewInput,
        TypeAdapter(r.Review),
        "Ask another agent to review a task or a context entry (it must exist). The reviewer "
        "gets a review_requested event; it answers with approve or reject.",
        read_only=False,
        idempotent=False,
        run=_request_review,
    ),
    RoomTool(
        "approve",
        s.ApproveInput,
        TypeAdapter(r.Review),
        "Approve a review you were asked for (only the named reviewer, only once). The "
        "requester gets a review_approved event.",
        read_only=False,
        run=_approve,
    ),
    RoomTool(
        "reject",
        s.RejectInput,
        TypeAdapter(r.Review),
        "Reject a review you were asked for, with a note saying what to change (only the "
        "named reviewer, only once). The requester gets a review_rejected event.",
        read_only=False,
        run=_reject,
    ),
    RoomTool(
        "list_reviews",
        s.ListReviewsInput,
        TypeAdapter(list[r.Review]),
        "The room's reviews, newest first; status filters to pending, approved or rejected.",
        read_only=True,
        run=_list_reviews,
    ),
    RoomTool(
        "diff_context",
        s.DiffContextInput,
        TypeAdapter(r.ContextDiff),
        "What changed in a context entry since an earlier version (default: the one "
        "before): summary, and payload paths added, removed and changed, down to the value "
        "(endpoints[1].response.currency). An entry with one version has nothing to diff "
        "against: an error.",
        read_only=True,
        run=_diff_context,
    ),
    RoomTool(
        "get_room_analytics",
        s.GetRoomAnalyticsInput,
        TypeAdapter(r.RoomAnalytics),
        "How the room is going: tasks by status and the completion rate, agents (online), "
        "context entries, and events: total retained, lastDays (the window: `days`, 1-90, "
        "default 7), perDay (the average a day over it), inWindow and byDate (each day's "
        "count), counted over the whole retained log.",
        read_only=True,
        run=_get_room_analytics,
    ),
    RoomTool(
        "search",
        s.SearchInput,
        TypeAdapter(r.SearchResult),
        "Full-text search over every task, context entry and retained event of the room, "
        'best first, each with a snippet. q: words (hits holding all of them first), "quoted '
        'phrases" and prefixes (deplo*); title and summary words rank above body words. An '
        "index kept with every write answers it: the cost does not grow with the room.",
        read_only=True,
        run=_search,
    ),
    RoomTool(
        "create_room_from_template",
        s.CreateRoomFromTemplateInput,
        TypeAdapter(r.RoomFromTemplate),
        "Create a room with a template's plan (list_templates), its tasks and dependencies "
        "in one step. Leave roomId out for a new room. A room that has a plan already is "
        "refused, never overwritten.",
        read_only=False,
        makes_room=lambda a, team: templates.template_room_id(
            a.templateId, team_id=team, idempotency_key=a.idempotencyKey
        ),
        run=_create_room_from_template,
    ),
    # --- Files
    RoomTool(
        "lease_claim",
        s.LeaseClaimInput,
        TypeAdapter(r.LeaseClaimed),
        "Claim a file or glob before you edit it (src/api/**, package.json). exclusive (the "
        "default) keeps every other agent off overlapping paths; shared coexists with other "
        "shared leases. Refused with the conflicting leases (who holds them, until when) "
        "when another agent holds an overlapping one. It lapses after ttlSeconds unless "
        "renewed; claiming your own lease again renews it.",
        read_only=False,
        run=_lease_claim,
    ),
    RoomTool(
        "lease_renew",
        s.LeaseRenewInput,
        TypeAdapter(r.Lease),
        "Make your lease (by leaseId, or by its path) last ttlSeconds from now. Only its holder.",
        read_only=False,
        run=_lease_renew,
    ),
    RoomTool(
        "lease_release",
        s.LeaseReleaseInput,
        TypeAdapter(r.LeaseReleased),
        "Give up your lease (by leaseId, or by its path) when your edit is done. Only its holder.",
        read_only=False,
        run=_lease_release,
    ),
    RoomTool(
        "lease_check",
        s.LeaseCheckInput,
        TypeAdapter(r.LeaseCheck),
        "Whether a path is free to edit: the live leases overlapping it (other holders "
        "first); free when none is another agent's.",
        read_only=True,
        run=_lease_check,
    ),
    RoomTool(
        "lease_list",
        s.LeaseListInput,
        TypeAdapter(r.LeaseList),
        "The room's live leases (an agent's, with agentId): path, mode, holder, task, "
        "expiry. Expired leases are never shown.",
        read_only=True,
        run=_lease_list,
    ),
    RoomTool(
        "note_read",
        s.NoteReadInput,
        TypeAdapter(r.FileRead),
        "Record the SHA-256 of a file as you read it: drift_check compares against it before "
        "you edit.",
        read_only=False,
        run=_note_read,
    ),
    RoomTool(
        "drift_check",
        s.DriftCheckInput,
        TypeAdapter(r.Drift),
        "Before editing a file you read: pass its SHA-256 now. SAFE (unchanged, or no read "
        "noted), MINOR (changed, nobody else leases it: read it again), CRITICAL (changed, and "
        "another agent leases it: read it again and agree with them first).",
        read_only=True,
        run=_drift_check,
    ),
    # --- Proven work
    RoomTool(
        "submit_task",
        s.SubmitTaskInput,
        _TASK,
        "Submit your task's evidence (tests, diffs, links, logs, notes) for another agent to "
        "verify. Only its owner. In a room that requires evidence this is the way to done.",
        read_only=False,
        run=_submit_task,
    ),
    RoomTool(
        "verify_task",
        s.VerifyTaskInput,
        _TASK,
        "Judge a submitted task's evidence: accept marks it done, reject sends it back in "
        "progress with your note. Never the submitter. (approve/reject on its review do "
        "the same.)",
        read_only=False,
        run=_verify_task,
    ),
    RoomTool(
        "handoff_task",
        s.HandoffTaskInput,
        TypeAdapter(r.Handoff),
        "Offer your task to another agent, with a note and the context entries it needs. "
        "Nothing changes until it accepts (accept_handoff); then the task, its claim and its "
        "file leases are its. Only the owner; one offer at a time.",
        read_only=False,
        run=_handoff_task,
    ),
    RoomTool(
        "accept_handoff",
        s.AcceptHandoffInput,
        TypeAdapter(r.Handoff),
        "Accept a handoff offered to you (get_my_summary lists them): the task, its claim "
        "and its file leases become yours in this one step.",
        read_only=False,
        run=_accept_handoff,
    ),
    RoomTool(
        "decline_handoff",
        s.DeclineHandoffInput,
        TypeAdapter(r.Handoff),
        "Decline a handoff offered to you, saying why; the task stays with its owner. Final.",
        read_only=False,
        run=_decline_handoff,
    ),
    RoomTool(
        "set_room_mode",
        s.SetRoomModeInput,
        TypeAdapter(r.RoomMode),
        "Set how the room works: evidenceRequired makes verified evidence the only way to "
        "done; turns (open, sequential, moderator) decide who may post when; secrets "
        "(redact, refuse, off) what a write holding a key or password meets. Needs a "
        "credential that may manage rooms.",
        read_only=False,
        manages="rooms",
        run=_set_room_mode,
    ),
    RoomTool(
        "set_room_status",
        s.SetRoomStatusInput,
        TypeAdapter(r.RoomStatus),
        "Pause, complete, archive or reopen the room: paused, completed and archived rooms "
        "answer reads and refuse writes, saying why; active restores an archived room. Needs "
        "a credential that may manage rooms.",
        read_only=False,
        manages="rooms",
        lifecycle=True,
        run=_set_room_status,
    ),
    # --- Messages
    RoomTool(
        "send_message",
        s.SendMessageInput,
        TypeAdapter(r.MessageSent),
        'Send a message: to "*" (everyone here but you), an agentId, "file:<glob>" (whoever '
        'leases an overlapping path) or "tag:<tag>" (agents whose heartbeat carried it). Each '
        "recipient gets one delivery (stored, then read, then acked); sent_messages shows "
        "you which. Nobody matching is a warning with count 0, not an error.",
        read_only=False,
        run=_send_message,
    ),
    RoomTool(
        "inbox",
        s.InboxInput,
        TypeAdapter(r.Inbox),
        "Your unread messages, oldest first; they count as read from now on. An empty inbox "
        "says why (deliveries so far, read, the last one, who is in the room).",
        read_only=True,
        idempotent=False,
        run=_inbox,
    ),
    RoomTool(
        "ack_message",
        s.AckMessageInput,
        TypeAdapter(r.MessageAcked),
        "Acknowledge a message you received (the sender sees it acked). Only a recipient.",
        read_only=False,
        run=_ack_message,
    ),
    RoomTool(
        "sent_messages",
        s.SentMessagesInput,
        TypeAdapter(r.SentMessages),
        "Your sent messages, newest first, each with every recipient's delivery state "
        "(stored, read, acked, expired) and since when.",
        read_only=True,
        run=_sent_messages,
    ),
    # --- AgentRoom's five tools, over the same primitives
    RoomTool(
        "room_claim",
        s.RoomClaimInput,
        TypeAdapter(r.LeaseClaimed),
        "AgentRoom: claim a file or glob before editing it (an exclusive lease for 300 s; "
        "lease_claim does more). Refused with who holds an overlapping one.",
        read_only=False,
        run=_room_claim,
    ),
    RoomTool(
        "room_release",
        s.RoomReleaseInput,
        TypeAdapter(r.LeaseReleased),
        "AgentRoom: release a path you claimed.",
        read_only=False,
        run=_room_release,
    ),
    RoomTool(
        "room_broadcast",
        s.RoomBroadcastInput,
        TypeAdapter(r.Event),
        "AgentRoom: say something to everyone in the room (a broadcast event).",
        read_only=False,
        idempotent=False,
        run=_room_broadcast,
    ),
    RoomTool(
        "room_state",
        s.RoomStateInput,
        TypeAdapter(r.RoomState),
        "AgentRoom: who holds which files (live leases), who is here, and the recent "
        "broadcasts (among the newest 200 events).",
        read_only=True,
        run=_room_state,
    ),
    RoomTool(
        "room_read",
        s.RoomReadInput,
        TypeAdapter(r.Unread),
        "AgentRoom: the events you have not read yet, oldest first (get_unread_events); "
        "each reaches you once.",
        read_only=True,
        idempotent=False,
        run=_room_read,
    ),
)

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
