"""The room as a whole: the rooms a key reaches, a room's info, analytics and status."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.names import UNNAMED_AGENT
from rooms.refs import RoomRef
from rooms.selectors import room as room_selectors
from rooms.services import lifecycle as lifecycle_services
from rooms.tools.rows import CallerScope, caller_tool, room_tool


@caller_tool(read_only=True, section="rooms-and-templates", roomd=True)
async def list_rooms(scope: CallerScope, a: s.ListRoomsInput) -> list[r.RoomRow]:
    """Call at the start of a session to find your roomId: the rooms your key reaches (your
    team's; an invite's one room), with status and last activity."""
    return await scope.rooms()


@room_tool(read_only=True, section="rooms-and-templates", roomd=True)
async def get_room_info(room: RoomRef, a: s.GetRoomInfoInput) -> r.RoomInfo:
    """Call for the room at a glance: owner team, creation time, and exact counts of agents,
    tasks, context entries and events."""
    return await room_selectors.room_info(room)


@room_tool(read_only=True, section="rooms-and-templates", roomd=True)
async def get_room_analytics(room: RoomRef, a: s.GetRoomAnalyticsInput) -> r.RoomAnalytics:
    """Call to report how the room is going: tasks by status and the completion rate, agents
    (online), context entries, and events: total retained, lastDays (the window: `days`, 1-90,
    default 7), perDay (the average a day), inWindow and byDate, over the whole retained log."""
    return await room_selectors.room_analytics(room, days=a.days)


@room_tool(read_only=False, manages="rooms", lifecycle=True, section="lifecycle-and-durable-rooms")
async def set_room_status(room: RoomRef, a: s.SetRoomStatusInput) -> r.RoomStatus:
    """Call when the room's work pauses, ends or resumes (needs a credential that may manage
    rooms): paused, completed and archived rooms answer reads and refuse writes, saying why;
    active reopens it, restoring an archived room."""
    return await lifecycle_services.room_status_set(
        room, status=a.status, agent_id=a.agentId or UNNAMED_AGENT
    )
