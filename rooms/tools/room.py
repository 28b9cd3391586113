"""The room as a whole: the rooms a key reaches, a room's info, analytics and status."""

from __future__ import annotations

from pydantic import TypeAdapter

from rooms import results as r
from rooms import schemas as s
from rooms import (
    selectors,
    services,
)
from rooms.names import UNNAMED_AGENT
from rooms.refs import RoomRef
from rooms.tools.rows import CallerScope, caller_tool, room_tool


@caller_tool("list_rooms", s.ListRoomsInput, TypeAdapter(list[r.RoomRow]), read_only=True)
async def list_rooms(scope: CallerScope, a: s.ListRoomsInput) -> list[r.RoomRow]:
    """The rooms your key can reach (your team's rooms; for an invite, its one room), with
    status and last activity."""
    return await scope.rooms()


@room_tool("get_room_info", s.GetRoomInfoInput, TypeAdapter(r.RoomInfo), read_only=True)
async def get_room_info(room: RoomRef, a: s.GetRoomInfoInput) -> r.RoomInfo:
    """The room at a glance: owner team, creation time, and exact counts of agents, tasks,
    context entries and events."""
    return await selectors.room_info(room)


@room_tool(
    "get_room_analytics", s.GetRoomAnalyticsInput, TypeAdapter(r.RoomAnalytics), read_only=True
)
async def get_room_analytics(room: RoomRef, a: s.GetRoomAnalyticsInput) -> r.RoomAnalytics:
    """How the room is going: tasks by status and the completion rate, agents (online), context
    entries, and events: total retained, lastDays (the window: `days`, 1-90, default 7),
    perDay (the average a day over it), inWindow and byDate (each day's count), counted
    over the whole retained log."""
    return await selectors.room_analytics(room, days=a.days)


@room_tool(
    "set_room_status",
    s.SetRoomStatusInput,
    TypeAdapter(r.RoomStatus),
    read_only=False,
    manages="rooms",
    lifecycle=True,
)
async def set_room_status(room: RoomRef, a: s.SetRoomStatusInput) -> r.RoomStatus:
    """Pause, complete, archive or reopen the room: paused, completed and archived rooms answer
    reads and refuse writes, saying why; active restores an archived room. Needs a
    credential that may manage rooms."""
    return await services.room_status_set(
        room, status=a.status, agent_id=a.agentId or UNNAMED_AGENT
    )


TOOLS = (
    list_rooms,
    get_room_info,
    get_room_analytics,
    set_room_status,
)
