"""Locks: acquire (with a fencing token and a TTL) and release."""

from __future__ import annotations

from rooms import clock, idempotency
from rooms.names import attributed
from rooms.quotas import quota_error
from rooms.refs import RoomRef
from rooms.results import (
    LockGranted,
    LockReleased,
)
from rooms.store import engine as engine_store
from rooms.store import locks as locks_store


async def lock_acquire(
    room: RoomRef, *, resource: str, agent_id: str, ttl_seconds: int
) -> LockGranted:
    agent = attributed(agent_id)
    minted = idempotency.minted(room.call, {"now": clock.now_ms()})
    grant = await locks_store.lock_acquire(
        room.keys,
        resource=resource,
        agent_id=agent,
        ttl_ms=ttl_seconds * 1000,
        now_ms=minted["now"],
        keyed=room.call,
        actor=room.actor,
    )
    if isinstance(grant, engine_store.AtQuota):
        raise quota_error("ROOM_LOCKS_MAX", grant.used)
    now = idempotency.minted_final(room.call, minted)["now"]
    return {
        "acquired": grant.acquired,
        "resource": resource,
        "holder": grant.holder,
        "ttlSeconds": ttl_seconds if grant.acquired else -(-grant.remaining_ms // 1000),
        "expiresAt": clock.iso_from_ms(now + grant.remaining_ms),
        "fencingToken": grant.token,
    }


async def lock_release(room: RoomRef, *, resource: str, agent_id: str) -> LockReleased:
    released, holder = await locks_store.lock_release(
        room.keys,
        resource=resource,
        agent_id=attributed(agent_id),
        keyed=room.call,
        actor=room.actor,
    )
    result: LockReleased = {"released": released, "resource": resource}
    if not released:
        result["holder"] = holder
        result["message"] = (
            f'"{resource}" is held by {holder}; only the holder can release it.'
            if holder
            else f'"{resource}" is not locked (it may have expired).'
        )
    return result
