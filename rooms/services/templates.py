"""A room made from a template (rooms/templates.py holds the catalogue)."""

from __future__ import annotations

from rooms import clock, errors, templates
from rooms.ids import new_id
from rooms.names import attributed
from rooms.quotas import quota_error
from rooms.records import (
    dumps,
)
from rooms.refs import RoomRef
from rooms.results import (
    RoomFromTemplate,
    Task,
)
from rooms.store import plan as plan_store
from rooms.suggest import LABEL_CHARS


async def room_from_template(
    room: RoomRef, *, template_id: str, agent_id: str | None
) -> RoomFromTemplate:
    """The template's plan as the room's plan, in one step, only into a room with no plan:
    a plan is never overwritten (roomd replaces it wholesale), nor mixed into."""
    template = templates.template_get(template_id)
    now = clock.now_iso()
    ids = [new_id("t_") for _ in template.tasks]
    tasks: list[Task] = []
    for i, spec in enumerate(template.tasks):
        task: Task = {
            "id": ids[i],
            "title": spec.title,
            "description": spec.description,
            "status": "pending",
            "owner": None,
            "created_at": now,
            "updated_at": now,
            "depends_on": [ids[j] for j in spec.after],
            "version": 1,
        }
        if spec.priority is not None:
            task["priority"] = spec.priority
        tasks.append(task)
    outcome, count = await plan_store.plan_create(
        room.keys,
        [(t["id"], dumps(t), t["title"][:LABEL_CHARS]) for t in tasks],
        now_iso=now,
        by=attributed(agent_id),
        keyed=room.call,
        actor=room.actor,
    )
    if outcome == "exists":
        raise errors.PlanExistsError(
            errors.PLAN_EXISTS.format(room_id=room.room_id, count=count),
            extra={"taskCount": count},
        )
    if outcome == "quota":
        raise quota_error("ROOM_TASKS_MAX", count)
    return {"roomId": room.room_id, "templateId": template.id, "taskCount": count}
