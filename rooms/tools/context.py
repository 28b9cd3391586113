"""The typed context's tools: contracts, decisions, change requests, notes; versions and diffs."""

from __future__ import annotations

from rooms import memory
from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import context as context_selectors
from rooms.services import context as context_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, idempotent=False, section="typed-context", core=True, roomd=True)
async def write_context(room: RoomRef, a: s.WriteContextInput) -> r.ContextEntry:
    """Call to publish what others build against: version 1.0, its consumers told
    (context_available). Publishing it again? Pass its id as supersedes: version 1.1,
    1.2..., the old kept. Payload by type — api_contract: {service, version, endpoints:
    [{method (GET/POST/PUT/DELETE/PATCH), path, response (object), auth_required (bool),
    description, request?}], base_url?}; arch_decision: {title, decision, rationale,
    alternatives: [str], consequences: [str]}; task: {task_id, acceptance_criteria: [str],
    technical_notes}; change_request: {requested_by, target_agent, description, urgency
    (low/medium/high), blocking_task_id?}; note: {text, references?: [str]}."""
    return await context_services.context_write(
        room,
        type_=a.type,
        summary=a.summary,
        consuming_agents=a.consuming_agents,
        payload=a.payload,
        author=a.author,
        supersedes=a.supersedes,
    )


@room_tool(read_only=True, section="typed-context", roomd=True)
async def read_context(room: RoomRef, a: s.ReadContextInput) -> r.ContextEntry:
    """Call before you build against a context entry (a contract, a decision): its current
    version, by id."""
    return await context_selectors.context_read(room, entry_id=a.id, agent_id=a.agentId)


@room_tool(read_only=True, section="typed-context", core=True, roomd=True)
async def list_context(room: RoomRef, a: s.ListContextInput) -> list[r.ContextEntry]:
    """Call to find the contracts and decisions in the room: context entries newest first,
    optionally of one type or by one author."""
    listed = await context_selectors.context_list(
        room, type_=a.type, author=a.author, agent_id=a.agentId
    )
    if a.includeInherited:
        listed += [
            e
            for e in await memory.memory_list(room, type_=a.type)
            if a.author is None or e["author"] == a.author
        ]
    return listed


@room_tool(read_only=False, idempotent=False, section="typed-context", roomd=True)
async def update_context(room: RoomRef, a: s.UpdateContextInput) -> r.ContextEntry:
    """Call when a contract or decision you published changes: revise it in place (1.0 -> 1.1),
    the previous version kept, consumers told (context_updated); never write a second entry.
    expectedVersion refuses the update if the entry changed since you read it; the payload is
    re-validated."""
    return await context_services.context_update(
        room,
        entry_id=a.id,
        author=a.author,
        summary=a.summary,
        consuming_agents=a.consuming_agents,
        payload=a.payload,
        expected_version=a.expectedVersion,
    )


@room_tool(read_only=False, idempotent=False, section="typed-context", roomd=True)
async def delete_context(room: RoomRef, a: s.DeleteContextInput) -> r.ContextDeleted:
    """Call to remove a wrong context entry and its whole history. Emits context_deleted."""
    return await context_services.context_delete(room, entry_id=a.id, agent_id=a.agentId)


@room_tool(read_only=True, section="typed-context", roomd=True)
async def get_context_history(room: RoomRef, a: s.GetContextHistoryInput) -> r.ContextHistory:
    """Call to see how a context entry evolved: now and every kept earlier version, newest
    first, each with `changes` (what differs from the version before)."""
    return await context_selectors.context_history_newest_first(room, entry_id=a.id)


@room_tool(read_only=True, section="typed-context", roomd=True)
async def diff_context(room: RoomRef, a: s.DiffContextInput) -> r.ContextDiff:
    """Call when an entry you build against changed (context_updated): what changed since an
    earlier version (default: the one before): summary, and payload paths added, removed and
    changed (endpoints[1].response.currency). An entry with one version is an error."""
    return await context_selectors.context_diff(room, entry_id=a.id, against=a.againstVersion)
