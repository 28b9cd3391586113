"""Rooms started from a template plan."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms import templates
from rooms.refs import RoomRef
from rooms.services import templates as templates_services
from rooms.tools.rows import CallerScope, caller_tool, room_tool


@caller_tool(read_only=True, section="rooms-and-templates", roomd=True)
async def list_templates(scope: CallerScope, a: s.ListTemplatesInput) -> r.TemplateList:
    """Call before create_room_from_template: the plans a room can start from (id, name, what it
    is for, how many tasks)."""
    return templates.template_list()


@room_tool(
    read_only=False,
    makes_room=lambda a, team: templates.template_room_id(
        a.templateId, team_id=team, idempotency_key=a.idempotencyKey
    ),
    section="rooms-and-templates",
    roomd=True,
)
async def create_room_from_template(
    room: RoomRef, a: s.CreateRoomFromTemplateInput
) -> r.RoomFromTemplate:
    """Call to start a room with a template's plan (list_templates): its tasks and dependencies
    in one step. Leave roomId out for a new room. A room that has a plan already is refused,
    never overwritten."""
    return await templates_services.room_from_template(
        room, template_id=a.templateId, agent_id=a.agentId
    )
