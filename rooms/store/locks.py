"""Locks of named resources, with fencing tokens (rooms/lua/locks/)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import AtQuota, idle_ttl_ms, run_write


@dataclass(frozen=True, slots=True)
class LockGrant:
    acquired: bool
    holder: str | None
    token: int
    remaining_ms: int


async def lock_acquire(
    keys: RoomKeys,
    *,
    resource: str,
    agent_id: str,
    ttl_ms: int,
    now_ms: int,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> LockGrant | AtQuota:
    res = await run_write(
        keys,
        scripts.ACQUIRE_LOCK_SCRIPT,
        [keys.lock(resource), keys.fence, keys.lock_index, keys.lock_tokens],
        [agent_id, ttl_ms, now_ms, resource, idle_ttl_ms(), int(settings.ROOM_LOCKS_MAX)],
        wrote="unless_quota",
        keyed=keyed,
        actor=actor,
    )
    if res[0] == "quota":
        return AtQuota(int(res[1]))
    return LockGrant(
        acquired=res[0] == "ok",
        holder=str(res[1]) if res[1] else None,
        token=int(res[2]),
        remaining_ms=max(int(res[3]), 0),
    )


async def lock_release(
    keys: RoomKeys,
    *,
    resource: str,
    agent_id: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> tuple[bool, str | None]:
    res = await run_write(
        keys,
        scripts.RELEASE_LOCK_SCRIPT,
        [keys.lock(resource), keys.lock_index, keys.lock_tokens],
        [agent_id, resource],
        wrote="always",
        keyed=keyed,
        actor=actor,
    )
    return res[0] == "ok", (str(res[1]) if len(res) > 1 else None)


async def lock_all(keys: RoomKeys, *, now_ms: int) -> list[tuple[str, str, int]]:
    """(resource, holder, remaining ms) of every lock still held."""
    r = client()
    resources = [str(x) for x in await r.zrangebyscore(keys.lock_index, f"({now_ms}", "+inf")]
    if not resources:
        return []
    pipe = r.pipeline(transaction=False)
    for res in resources:
        pipe.get(keys.lock(res))
        pipe.pttl(keys.lock(res))
    out = await pipe.execute()
    held = []
    for i, res in enumerate(resources):
        holder, pttl = out[2 * i], out[2 * i + 1]
        if holder is not None and int(pttl) > 0:
            held.append((res, str(holder), int(pttl)))
    return held
