"""Handoffs (AgentPlat; docs/protocol.md "Handoffs"): work moves between agents only when
the receiver says yes. The owner offers the task with a note and the context entries the
receiver needs; nothing changes until the receiver accepts, and then everything moves in
that one step:
the owner, the claim's lease, the task's file leases. A declined offer is final (the owner
offers a new one); an offer overtaken by events (the task done, released or taken) is
void when answered, and says so.
"""

from __future__ import annotations

import json

from rooms import clock, errors
from rooms.ids import new_id
from rooms.quotas import quota_error
from rooms.records import dumps, handoff_from_json, task_from_json
from rooms.refs import RoomRef
from rooms.results import Handoff, Task
from rooms.selectors.context import context_not_found
from rooms.selectors.plan import task_not_found
from rooms.services.messages import agent_not_found
from rooms.store import handoffs as handoffs_store
from rooms.suggest import HINT_SAMPLE, unknown_id


async def handoff_offer(
    room: RoomRef,
    *,
    task_id: str,
    sender: str,
    receiver: str,
    note: str | None,
    context_ids: list[str],
) -> Handoff:
    if receiver == sender:
        raise errors.ToolArgumentsError(errors.HANDOFF_SELF.format(agent=sender))
    now = clock.now_ms()
    handoff: Handoff = {
        "id": new_id("h_"),
        "taskId": task_id,
        "from": sender,
        "to": receiver,
        "note": note,
        "contextIds": list(dict.fromkeys(context_ids)),
        "status": "offered",
        "at": clock.iso_from_ms(now),
    }
    step = await handoffs_store.handoff_offer(
        room.keys,
        task_id=task_id,
        sender=sender,
        receiver=receiver,
        handoff_id=handoff["id"],
        handoff_json=dumps(handoff),
        context_ids=handoff["contextIds"],
        now_ms=now,
        now_iso=handoff["at"],
        hint_sample=HINT_SAMPLE,
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "ok":
        return handoff_from_json(step.handoff_json)
    if step.outcome == "unknown":
        raise await task_not_found(room, task_id)
    if step.outcome == "unknown_agent":
        raise agent_not_found(receiver, step.known)
    if step.outcome == "unknown_context":
        missing = await context_not_found(room, step.missing)
        hint = missing.message.split(". ", 1)[1] if ". " in missing.message else ""
        raise errors.ContextNotFoundError(
            errors.HANDOFF_UNKNOWN_CONTEXT.format(entry_id=step.missing, hint=hint),
            extra={**missing.extra, "field": "contextIds"},
        )
    if step.outcome == "quota":
        raise quota_error("ROOM_HANDOFFS_MAX", step.used)
    task = task_from_json(step.task_json)
    state = {"taskId": task_id, "owner": task["owner"], "status": task["status"]}
    if step.outcome == "offered":
        pending = handoff_from_json(step.handoff_json)
        raise errors.HandoffRefusedError(
            errors.HANDOFF_PENDING.format(
                task_id=task_id, to=pending["to"], handoff_id=pending["id"]
            ),
            extra={**state, "handoffId": pending["id"]},
        )
    if step.outcome == "done":
        raise errors.TaskClaimError(errors.HANDOFF_TASK_DONE.format(task_id=task_id), extra=state)
    raise errors.TaskClaimError(
        errors.HANDOFF_NOT_OWNER.format(
            task_id=task_id,
            owner=json.dumps(task["owner"]) if task["owner"] else "nobody",
            agent=sender,
        ),
        extra=state,
    )


async def handoff_answer(
    room: RoomRef, *, handoff_id: str, agent_id: str, accept: bool, note: str | None
) -> Handoff:
    now = clock.now_ms()
    step = await handoffs_store.handoff_resolve(
        room.keys,
        handoff_id=handoff_id,
        agent_id=agent_id,
        accept=accept,
        note=note,
        now_ms=now,
        now_iso=clock.iso_from_ms(now),
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "unknown":
        kept = [handoff_from_json(raw) for raw in await handoffs_store.handoffs_all(room.keys)]
        found = unknown_id(
            handoff_id,
            [(h["id"], f"{h['taskId']} → {h['to']}") for h in kept],
            closest_hint="Closest: {closest}.",
            none_close_hint=errors.HANDOFF_HINT,
            empty_hint=errors.HANDOFF_HINT,
        )
        raise errors.HandoffNotFoundError(
            errors.HANDOFF_NOT_FOUND.format(handoff_id=handoff_id, hint=found.hint),
            extra={"handoffId": handoff_id, "closest": found.closest},
        )
    handoff = handoff_from_json(step.handoff_json)
    if step.outcome == "not_receiver":
        raise errors.HandoffRefusedError(
            errors.HANDOFF_NOT_RECEIVER.format(
                handoff_id=handoff_id, to=handoff["to"], agent=agent_id
            ),
            extra={"to": handoff["to"], "status": handoff["status"]},
        )
    if step.outcome == "resolved":
        raise errors.HandoffRefusedError(
            errors.HANDOFF_RESOLVED.format(
                handoff_id=handoff_id,
                status=handoff["status"],
                by=handoff.get("resolvedBy"),
                at=handoff.get("resolvedAt"),
            ),
            extra={"to": handoff["to"], "status": handoff["status"]},
        )
    if step.outcome == "void":
        task: Task | None = task_from_json(step.task_json) if step.task_json else None
        why = (
            "was deleted"
            if task is None
            else "is done"
            if task["status"] == "done"
            else f"changed hands (owner now {task['owner'] or 'nobody'})"
        )
        raise errors.HandoffRefusedError(
            errors.HANDOFF_VOID.format(handoff_id=handoff_id, task_id=handoff["taskId"], why=why),
            extra={"status": "void", "taskId": handoff["taskId"]},
        )
    return handoff
