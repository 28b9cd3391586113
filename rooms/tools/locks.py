"""Locks on named resources."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import locks as locks_selectors
from rooms.services import locks as locks_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, idempotent=False, section="locks", roomd=True)
async def acquire_lock(room: RoomRef, a: s.AcquireLockInput) -> r.LockGranted:
    """Call around multi-step work of your own on a named resource (plan writes need no lock):
    an advisory lock for ttlSeconds (1-300, default 30). Returns acquired, the actual holder,
    and a fencingToken that grows with every grant; acquiring a lock you hold renews it."""
    return await locks_services.lock_acquire(
        room, resource=a.resource, agent_id=a.agentId, ttl_seconds=a.ttlSeconds
    )


@room_tool(read_only=False, section="locks", roomd=True)
async def release_lock(room: RoomRef, a: s.ReleaseLockInput) -> r.LockReleased:
    """Call when your locked work is done: release a lock you hold (only the holder can)."""
    return await locks_services.lock_release(room, resource=a.resource, agent_id=a.agentId)


@room_tool(read_only=True, section="locks", roomd=True)
async def list_locks(room: RoomRef, a: s.ListLocksInput) -> list[r.LockRow]:
    """Call to see the locks held now, with owner and expiry."""
    return await locks_selectors.lock_list(room)
