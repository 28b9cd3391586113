"""Presence: heartbeat, who is here, leaving."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import presence as presence_selectors
from rooms.services import presence as presence_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, section="presence", core=True, roomd=True)
async def heartbeat(room: RoomRef, a: s.HeartbeatInput) -> r.Heartbeat:
    """Call at the start of a session, and with idle: true at its end (any call naming you
    keeps you present). Returns who else is here: the 100 agents seen last, and
    presenceTotal."""
    return await presence_services.presence_heartbeat(
        room, agent_id=a.agentId, tags=a.tags, idle=a.idle
    )


@room_tool(read_only=True, section="presence", roomd=True)
async def get_presence(room: RoomRef, a: s.GetPresenceInput) -> list[r.AgentPresence]:
    """Call to see who is around: every agent the room has seen, with lastSeen (its last call
    naming it) and state: working (within 120 s), idle (or its session ended), gone (30 min);
    status online or offline as roomd has it."""
    return await presence_selectors.presence_list(room)


@room_tool(read_only=False, presence=False, section="rooms-and-templates", roomd=True)
async def leave_room(room: RoomRef, a: s.LeaveRoomInput) -> r.Left:
    """Call when you are done in this room: you drop out of presence (others see agent_left) and
    your cursor is kept, so coming back reads on where you stopped."""
    return await presence_services.presence_leave(room, agent_id=a.agentId)
