"""Tenancy's hot-path caches: bearers (a revocation bumps a digest's generation), room
owners, activity marks and warned room ids, and what goes when a room or a team does
(rooms/lua/bearers/, archives/owner_cache)."""

from __future__ import annotations

from typing import Literal

from rooms import scripts
from rooms.keys import BearerKeys, RoomKeys, TeamKeys, hook_notice
from rooms.keys import claims_due as claims_due_key
from rooms.store.archives import TOMBSTONE_MS
from rooms.store.budgets import team_epoch_bump
from rooms.store.connections import arguments_runs, client, limiter
from rooms.store.engine import awaited, idle_ttl_ms, named, run


async def bearer_cached(digest: str) -> tuple[str | None, int]:
    """(the cached caller JSON or None, the digest's generation), in one round trip. A fill
    must carry that generation: a revocation in between bumps it and the fill is dropped."""
    keys = BearerKeys(digest)
    cached, generation = await client().mget([keys.cache, keys.generation])
    return (str(cached) if cached is not None else None), int(generation or 0)


# A bearer's cache fill (fill_bearer.lua): made, or dropped (a revocation moved its
# generation since it was read).
BearerFill = Literal["cached", "revoked"]
# A room's owner cached (owner_cache.lua), or nothing made: it is being or was archived.
OwnerCache = Literal["recorded", "archiving"]


async def bearer_cache_fill(digest: str, value: str, *, ttl_seconds: int, generation: int) -> bool:
    """Cache `value` unless the digest was revoked since `generation` was read."""
    keys = BearerKeys(digest)
    res = await run(
        scripts.FILL_BEARER_SCRIPT,
        [keys.cache, keys.generation],
        [value, ttl_seconds * 1000, generation],
    )
    filled: BearerFill = named(res, BearerFill)
    return filled == "cached"


async def bearers_forget(digests: list[str]) -> None:
    """Revocation: bump each digest's generation and drop its cache entry, atomically per
    digest, so no request already in flight can put it back."""
    for digest in digests:
        keys = BearerKeys(digest)
        await run(scripts.FORGET_BEARER_SCRIPT, [keys.cache, keys.generation], [])


async def bearer_generation(digest: str) -> int:
    """The digest's generation now: equal to one read earlier, nothing was revoked since."""
    return int(await client().get(BearerKeys(digest).generation) or 0)


async def room_owner_cache(keys: RoomKeys, team_id: str, *, recorded: str = "") -> bool:
    """Record the owner the database settled on (the database is the record), and for a
    room whose keys Redis lost, the status the database records. False when the room is
    being archived or was just archived: nothing is made (a first touch racing an archive
    must not bring the room back to life)."""
    res = await run(
        scripts.OWNER_CACHE_SCRIPT, [keys.owner, keys.meta], [team_id, idle_ttl_ms(), recorded]
    )
    cached: OwnerCache = named(res, OwnerCache)
    return cached == "recorded"


async def room_activity_due(keys: RoomKeys, *, every_seconds: int) -> bool:
    """True at most once per `every_seconds` per room: time to write last_active_at."""
    return bool(await client().set(keys.active_mark, "1", nx=True, ex=every_seconds))


async def room_id_warned(team_id: int, room_id: str, *, seconds: int) -> bool:
    """True when the team was already told `room_id` looks like one of its rooms (within
    `seconds`); otherwise records that it is told now, and False."""
    return not await client().set(TeamKeys(team_id).room_warned(room_id), "1", nx=True, ex=seconds)


async def hook_notice_due(session_digest: str, *, seconds: int) -> bool:
    """True once for a hook session within `seconds` (and records that it was told)."""
    return bool(await client().set(hook_notice(session_digest), "1", nx=True, ex=seconds))


async def room_forget(keys: RoomKeys, *, tombstone: bool = False) -> None:
    """Delete every key of a room (the room, or its team, was deleted; or it was archived):
    its durable keys, its live locks, and the activity mark. An archive's forget leaves a
    `tombstone`: a meta of status "archived" for a few minutes, so a request that read the
    room's record as live before the archive committed cannot make the room again."""
    r = client()
    resources = [str(x) for x in await r.zrange(keys.lock_index, 0, -1)]
    # UNLINK: a large room's memory is freed off Redis's main thread. Its live locks are as
    # many as ROOM_LOCKS_MAX allows: in runs, each within REDIS_ARGS_MAX.
    names = [*keys.durable(), keys.active_mark, *(keys.lock(x) for x in resources)]
    for batch in arguments_runs(names, beside=1):
        await r.unlink(*batch)
    if tombstone:
        await awaited(r.hset(keys.meta, "status", "archived"))
        await awaited(r.pexpire(keys.meta, TOMBSTONE_MS))
    await awaited(r.zrem(claims_due_key(), keys.room_id))


async def team_budget_forget(team_id: int) -> None:
    """The team is gone: its call window goes, and its epoch moves on."""
    await limiter().delete(TeamKeys(team_id).calls(f"team:{team_id}"))
    await team_epoch_bump(team_id)
