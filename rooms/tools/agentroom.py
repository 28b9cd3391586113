"""Agent Room's five tools, over the same primitives as the others."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import room as room_selectors
from rooms.services import events as events_services
from rooms.services import leases as leases_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, section="file-leases-and-drift")
async def room_claim(room: RoomRef, a: s.RoomClaimInput) -> r.LeaseClaimed:
    """AgentRoom: call before you edit a file or glob: an exclusive lease for 300 s (lease_claim
    does more). Refused with who holds an overlapping one."""
    return await leases_services.lease_claim(
        room,
        agent_id=a.agentId,
        path=a.path,
        mode="exclusive",
        ttl_seconds=300,
        task_id=None,
        reason=None,
    )


@room_tool(read_only=False, section="file-leases-and-drift")
async def room_release(room: RoomRef, a: s.RoomReleaseInput) -> r.LeaseReleased:
    """AgentRoom: call when your edit is done, to release a path you claimed."""
    return await leases_services.lease_release(room, agent_id=a.agentId, lease_id=None, path=a.path)


@room_tool(read_only=False, idempotent=False, section="messages")
async def room_broadcast(room: RoomRef, a: s.RoomBroadcastInput) -> r.Event:
    """AgentRoom: call to say something to everyone in the room (a broadcast event)."""
    return await events_services.event_post(
        room,
        type_="broadcast",
        from_=a.agentId,
        to="all",
        payload={"text": a.text},
        reserved=True,
    )


@room_tool(read_only=True, section="file-leases-and-drift")
async def room_state(room: RoomRef, a: s.RoomStateInput) -> r.RoomState:
    """AgentRoom: call to see who holds which files (live leases), who is here, and the recent
    broadcasts (among the newest 200 events)."""
    return await room_selectors.room_state(room)


@room_tool(read_only=True, idempotent=False, section="messages")
async def room_read(room: RoomRef, a: s.RoomReadInput) -> r.Unread:
    """AgentRoom: call to catch up: the events you have not read yet, oldest first
    (get_unread_events); each reaches you once."""
    return await events_services.event_take_unread(
        room, agent_id=a.agentId, limit=a.limit, addressed_only=False
    )
