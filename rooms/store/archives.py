"""Archive steps (rooms.snapshots; tenants.archives keeps the archives in Postgres): a room
frozen, read out as raw keys, loaded back and thawed (rooms/lua/archives/)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from rooms import clock, scripts
from rooms.keys import RoomKeys
from rooms.keys import claims_due as claims_due_key
from rooms.store.connections import Store, client, raw_client
from rooms.store.engine import awaited, named, run, run_on


@dataclass(frozen=True, slots=True)
class RawKey:
    """One key of a room as Redis holds it, bytes throughout (the search index's postings
    are binary). `items`: a string's value alone; a hash's or a sorted set's flat pairs
    (field, value / member, score); a list's or a set's members. A stream has its
    (last-generated id, entries added, max deleted id) and its entries instead."""

    part: str
    type: str
    expire_at_ms: int  # -1: none of its own (it lives as long as the room)
    items: list[bytes] = field(default_factory=list)
    stream_ids: tuple[bytes, bytes, bytes] | None = None
    entries: list[tuple[bytes, list[bytes]]] = field(default_factory=list)


TOMBSTONE_MS = 10 * 60 * 1000  # longer than any request an archive could race


async def room_freeze(keys: RoomKeys) -> str | None:
    """The room's status before this archive (it is "archiving" now, and every write step
    is refused), or None when Redis holds no room (it is marked "archiving" all the same,
    so no first touch makes one meanwhile)."""
    res = await run(scripts.FREEZE_ROOM_SCRIPT, [keys.owner, keys.meta], [TOMBSTONE_MS])
    return None if res is None else str(res)


async def room_thaw(keys: RoomKeys, status: str) -> None:
    """The archive was not recorded: the room takes writes again, in `status`."""
    await run(scripts.THAW_ROOM_SCRIPT, [keys.meta], [status])


# Chunks a snapshot is read in and a load written in: each command is short.
SNAPSHOT_CHUNK = 500
STAGING_MS = 15 * 60 * 1000  # a copy left by a process that died goes by itself


async def room_snapshot(keys: RoomKeys) -> list[RawKey]:
    """Every key of the room an archive holds, as one moment of it: copied in one short
    step, then read out of the copies in chunks, so a large room never holds Redis up."""
    token = secrets.token_hex(8)
    parts = keys.snapshot_parts()
    names = list(parts)
    staged = [keys.staged(token, part) for part in names]
    rows = await run(scripts.COPY_ROOM_SCRIPT, [*parts.values(), *staged], [len(names), STAGING_MS])
    r = raw_client()
    out: list[RawKey] = []
    try:
        for row in rows:
            index, kind, at = int(row[0]), str(row[1]), int(row[2])
            key, part = staged[index - 1], names[index - 1]
            if kind == "stream":
                ids = (str(row[3]).encode(), str(row[4]).encode(), str(row[5]).encode())
                out.append(RawKey(part, kind, at, stream_ids=ids, entries=await _entries(r, key)))
            else:
                out.append(RawKey(part, kind, at, await _items(r, key, kind)))
    finally:
        await awaited(client().unlink(*staged))
    return out


async def _items(r: Store, key: str, kind: str) -> list[bytes]:
    if kind == "string":
        return [cast("bytes", await awaited(r.get(key)))]
    items: list[bytes] = []
    if kind in ("list", "zset"):
        start = 0
        while True:
            # Through a script: its answer is Redis's own (redis-py turns scores into floats).
            got = await run_on(
                r, scripts.RANGE_CHUNK_SCRIPT, [key], [kind, start, start + SNAPSHOT_CHUNK - 1]
            )
            items += got
            if len(got) < SNAPSHOT_CHUNK * (1 if kind == "list" else 2):
                return items
            start += SNAPSHOT_CHUNK
    scan = "HSCAN" if kind == "hash" else "SSCAN"
    seen: dict[bytes, bytes | None] = {}
    cursor: Any = 0
    while True:
        cursor, got = await r.execute_command(scan, key, cursor, "COUNT", SNAPSHOT_CHUNK)
        if isinstance(got, dict):  # redis-py answers HSCAN as a dict
            seen.update(got)  # a field seen twice (a rehash) counts once
        elif kind == "hash":
            for i in range(0, len(got), 2):
                seen[got[i]] = got[i + 1]
        else:
            seen.update(dict.fromkeys(got))
        if int(cursor) == 0:
            break
    for field_name, value in seen.items():
        items.append(field_name)
        if value is not None:
            items.append(value)
    return items


async def _entries(r: Store, key: str) -> list[tuple[bytes, list[bytes]]]:
    out: list[tuple[bytes, list[bytes]]] = []
    start = "-"
    while True:
        got = await r.execute_command("XRANGE", key, start, "+", "COUNT", SNAPSHOT_CHUNK)
        for entry_id, fields in got:
            flat: list[bytes] = []
            if isinstance(fields, dict):
                for f, v in fields.items():
                    flat += [f, v]
            else:
                flat = list(fields)
            out.append((entry_id, flat))
        if len(got) < SNAPSHOT_CHUNK:
            return out
        start = "(" + out[-1][0].decode()


# A snapshot put back (load_room.lua), or a view's load that left a room in place.
RoomLoad = Literal["loaded", "kept"]


async def room_load(
    keys: RoomKeys,
    raw: list[RawKey],
    *,
    team_id: str,
    status: str,
    ttl_ms: int,
    view: bool,
) -> bool:
    """Put a room back from its snapshot, owned by `team_id`, in `status`: every key as it
    was (stream ids included), those without an expiry of their own living `ttl_ms`, those
    with one (idempotency records) until it, if it is still ahead. The keys are written in
    chunks to copies first, then put in place in one short step. A `view` (an archived
    room's read-only copy) never replaces a room that is there: False then."""
    token = secrets.token_hex(8)
    parts = keys.snapshot_parts()
    names = list(parts)
    index = {part: i + 1 for i, part in enumerate(names)}
    staged = [keys.staged(token, part) for part in names]
    r = client()
    tail: list[Any] = []
    try:
        for key in raw:
            where = index.get(key.part)
            if where is None:
                continue  # checked by rooms.snapshots before it gets here
            await _staged_write(r, staged[where - 1], key)
            ids = key.stream_ids or (b"", b"", b"")
            tail += [where, key.expire_at_ms, *ids]
        res = await run(
            scripts.LOAD_ROOM_SCRIPT,
            [keys.owner, keys.meta, *parts.values(), *staged],
            [team_id, status, ttl_ms, clock.now_ms(), "1" if view else "0", len(names), *tail],
        )
    except BaseException:
        await awaited(r.unlink(*staged))
        raise
    loaded: RoomLoad = named(res, RoomLoad)
    return loaded == "loaded"


async def _staged_write(r: Store, key: str, raw: RawKey) -> None:
    pipe = r.pipeline(transaction=False)
    queued = 0

    async def flush(force: bool = False) -> None:
        nonlocal pipe, queued
        if queued and (force or queued >= SNAPSHOT_CHUNK):
            pipe.pexpire(key, STAGING_MS)
            await pipe.execute()
            pipe = r.pipeline(transaction=False)
            queued = 0

    if raw.type == "stream":
        for entry_id, fields in raw.entries:
            pipe.execute_command("XADD", key, entry_id, *fields)
            queued += 1
            await flush()
    elif raw.type == "string":
        pipe.execute_command("SET", key, raw.items[0])
        queued += 1
    else:
        verb = {"hash": "HSET", "list": "RPUSH", "set": "SADD", "zset": "ZADD"}[raw.type]
        step = 2 * SNAPSHOT_CHUNK if raw.type in ("hash", "zset") else SNAPSHOT_CHUNK
        for at in range(0, len(raw.items), step):
            chunk = raw.items[at : at + step]
            if raw.type == "zset":  # stored member, score; ZADD takes score, member
                chunk = [x for i in range(0, len(chunk), 2) for x in (chunk[i + 1], chunk[i])]
            pipe.execute_command(verb, key, *chunk)
            queued += 1
            await flush()
    await flush(force=True)


async def room_claims_due_restore(keys: RoomKeys) -> None:
    """A restored room's leased claims are the sweeper's again (its index is one key of
    its own, outside the room's slot, so not part of the load's step)."""
    r = client()
    first = await awaited(r.zrange(keys.claims, 0, 0, withscores=True))
    if first:
        await awaited(r.zadd(claims_due_key(), {keys.room_id: int(first[0][1])}, lt=True))


async def room_loading(keys: RoomKeys, *, seconds: int) -> bool:
    """True for the one caller that may load the room now (the others wait for it)."""
    return bool(await client().set(keys.loading, "1", nx=True, ex=seconds))


async def room_loading_done(keys: RoomKeys) -> None:
    await client().delete(keys.loading)


async def room_present(keys: RoomKeys) -> bool:
    return bool(await client().exists(keys.owner))
