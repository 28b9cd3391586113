"""The room's event log: posts, reads by cursor (the reads many woken waiters ask at once
share one script call), read marks and deletes (rooms/lua/events/)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal, cast

from django.conf import settings

from rooms import idempotency, scripts, turns
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import (
    AtQuota,
    awaited,
    event_args,
    event_keys,
    idle_ttl_ms,
    in_flight,
    named,
    run,
    run_write,
)

StreamEntry = tuple[str, dict[str, str]]


def _entry(raw: Any) -> StreamEntry:
    eid, fields = raw[0], raw[1]
    if isinstance(fields, dict):
        return str(eid), fields
    it = iter(fields)
    return str(eid), dict(zip(it, it, strict=True))


async def event_append(
    keys: RoomKeys,
    *,
    type_: str,
    from_: str,
    to: str,
    payload_json: str,
    reply_to: str | None,
    turn: turns.TurnClaim,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> str | None:
    """The new event id, or None when `reply_to` names no event in the log. Taken only in
    `turn` (a post: rooms.turns)."""
    res = await run_write(
        keys,
        scripts.POST_EVENT_SCRIPT,
        event_keys(keys),
        [type_, from_, to, payload_json, reply_to or "", idle_ttl_ms(), *event_args(keys)],
        turn=turn,
        keyed=keyed,
        actor=actor,
    )
    return None if res[0] == "unknown" else str(res[1])


async def event_range(
    keys: RoomKeys, *, start: str, end: str, count: int, reverse: bool
) -> list[StreamEntry]:
    r = client()
    if reverse:
        raw = await r.xrevrange(keys.events, max=end, min=start, count=count)
    else:
        raw = await r.xrange(keys.events, min=start, max=end, count=count)
    return [_entry(e) for e in raw or ()]


async def event_get(keys: RoomKeys, event_id: str) -> StreamEntry | None:
    raw = await client().xrange(keys.events, min=event_id, max=event_id, count=1)
    return _entry(raw[0]) if raw else None


async def event_count(keys: RoomKeys) -> int:
    return int(await client().xlen(keys.events))


@dataclass(frozen=True, slots=True)
class UnreadBatch:
    cursor: str
    previous_cursor: str
    log_length: int
    context_changed: int
    events: list[StreamEntry]
    # The scan stopped at UNREAD_SCAN_STEP entries before finding `limit` events.
    capped: bool = False


@dataclass(frozen=True, slots=True)
class UnreadTaken:
    """What a waiting call's read took: the cursor after it and its events (it counts
    nothing else: event_read_unread_many)."""

    cursor: str
    events: list[StreamEntry]
    capped: bool = False


UNREAD_SCAN_STEP = 1000
# A read of the unread events: it moved the cursor (or found nothing new), or the new cursor
# would pass ROOM_CURSORS_MAX (lib/read_unread.lua).
UnreadOutcome = Literal["ok", "quota"]


async def event_read_unread(
    keys: RoomKeys,
    *,
    cursors_key: str,
    cursor_field: str,
    agent_id: str,
    limit: int,
    addressed_only: bool,
) -> UnreadBatch | AtQuota:
    """Take up to `limit` events after the agent's cursor (`cursor_field` of `cursors_key`),
    moving it atomically. `agent_id` is whom `addressed_only` matches events against, and
    whose messages already read with inbox are passed over (one read position per agent).

    With `addressed_only`, events for others are skipped; one script call scans at most
    UNREAD_SCAN_STEP entries (so Redis is never blocked for long), and we call again while
    it stopped at that bound, each step atomic and exactly-once on its own range.
    """
    events: list[StreamEntry] = []
    first: UnreadBatch | None = None
    while True:
        res = await run(
            scripts.READ_UNREAD_SCRIPT,
            [keys.events, cursors_key, keys.context_changed, keys.deliveries],
            [
                cursor_field,
                limit - len(events),
                "1" if addressed_only else "0",
                idle_ttl_ms(),
                UNREAD_SCAN_STEP,
                agent_id,
                int(settings.ROOM_CURSORS_MAX),
            ],
        )
        outcome: UnreadOutcome = named(res, UnreadOutcome)
        if outcome == "quota":
            return AtQuota(int(res[1]))
        step = UnreadBatch(
            cursor=str(res[1]),
            previous_cursor=str(res[2]),
            log_length=int(res[3]),
            context_changed=int(res[4]),
            events=[_entry(e) for e in res[6:]],
        )
        first = first or step
        events += step.events
        if int(res[5]) == 0 or len(events) >= limit:
            return UnreadBatch(
                cursor=step.cursor,
                previous_cursor=first.previous_cursor,
                log_length=step.log_length,
                context_changed=first.context_changed,
                events=events,
            )


@dataclass(frozen=True, slots=True)
class UnreadRead:
    """One agent's read of its unread events, as event_read_unread takes it."""

    cursors_key: str
    cursor_field: str
    agent_id: str
    limit: int
    addressed_only: bool


async def event_read_unread_many(
    keys: RoomKeys, reads: list[UnreadRead]
) -> list[UnreadTaken | AtQuota]:
    """Each read's first step (as event_read_unread's), all in one atomic script: the
    cursors move one after the other, so two reads of one cursor never share an event."""
    args: list[Any] = [idle_ttl_ms(), UNREAD_SCAN_STEP, int(settings.ROOM_CURSORS_MAX)]
    for read in reads:
        which = "1" if read.cursors_key == keys.cursors else "2"
        args += [
            which,
            read.cursor_field,
            read.limit,
            "1" if read.addressed_only else "0",
            read.agent_id,
        ]
    replies, raw_entries = await run(
        scripts.READ_UNREAD_MANY_SCRIPT,
        [keys.events, keys.cursors, keys.cursors_readonly, keys.context_changed, keys.deliveries],
        args,
    )
    entries = {str(e[0]): _entry(e) for e in raw_entries}
    out: list[UnreadTaken | AtQuota] = []
    for reply in replies:
        outcome: UnreadOutcome = named(reply, UnreadOutcome)
        if outcome == "quota":
            out.append(AtQuota(int(reply[1])))
            continue
        out.append(
            UnreadTaken(
                cursor=str(reply[1]),
                events=[entries[str(x)] for x in reply[3:]],
                capped=int(reply[2]) == 1,
            )
        )
    return out


# Reads of one room asked in one turn of the event loop, and the script calls that take
# them: the waiters one write wakes all ask at once, and share one round trip.
READS_PER_STEP = 500
_Gathered = list[tuple[UnreadRead, asyncio.Future[Any]]]
_gathering: dict[tuple[int, str], tuple[asyncio.AbstractEventLoop, _Gathered]] = {}


async def event_read_unread_gathered(keys: RoomKeys, read: UnreadRead) -> UnreadTaken | AtQuota:
    """event_read_unread, with every other read of the room asked in the same turn of the
    event loop taken in the same script call. Continues alone past a capped scan."""
    loop = asyncio.get_running_loop()
    slot = (id(loop), keys.room_id)
    future: asyncio.Future[Any] = loop.create_future()
    pending = _gathering.get(slot)
    if pending is None or pending[0] is not loop:  # none yet, or a closed loop's (same id)
        pending = _gathering[slot] = (loop, [])
        loop.call_soon(_gathered_run, slot, keys)
    pending[1].append((read, future))
    first = await future
    if isinstance(first, AtQuota) or not first.capped or len(first.events) >= read.limit:
        return cast("UnreadTaken | AtQuota", first)
    rest = await event_read_unread(
        keys,
        cursors_key=read.cursors_key,
        cursor_field=read.cursor_field,
        agent_id=read.agent_id,
        limit=read.limit - len(first.events),
        addressed_only=read.addressed_only,
    )
    if isinstance(rest, AtQuota):
        return cast("UnreadTaken", first)
    return UnreadTaken(cursor=rest.cursor, events=first.events + rest.events)


def _gathered_run(slot: tuple[int, str], keys: RoomKeys) -> None:
    loop = asyncio.get_running_loop()
    found = _gathering.get(slot)
    if found is None or found[0] is not loop:
        return
    del _gathering[slot]
    pending = found[1]
    for k in range(0, len(pending), READS_PER_STEP):
        in_flight(_gathered_step(keys, pending[k : k + READS_PER_STEP]))


async def _gathered_step(
    keys: RoomKeys, pending: list[tuple[UnreadRead, asyncio.Future[Any]]]
) -> None:
    live = [(read, future) for read, future in pending if not future.done()]
    if not live:
        return
    try:
        results = await event_read_unread_many(keys, [read for read, _ in live])
    except Exception as exc:  # every read waiting on this step hears of it
        for _, future in live:
            if not future.done():
                future.set_exception(exc)
        return
    for (_, future), result in zip(live, results, strict=True):
        if not future.done():
            future.set_result(result)


async def event_mark_read(
    keys: RoomKeys,
    *,
    event_id: str,
    agent_id: str,
    now_iso: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> bool | AtQuota:
    """True recorded, False unknown event, AtQuota (EVENT_READS_MAX)."""
    res = await run_write(
        keys,
        scripts.MARK_EVENT_READ_SCRIPT,
        [keys.events, keys.reads],
        [event_id, agent_id, now_iso, idle_ttl_ms(), int(settings.EVENT_READS_MAX)],
        keyed=keyed,
        actor=actor,
    )
    if res[0] == "quota":
        return AtQuota(int(res[1]))
    return bool(res[0] == "ok")


async def event_reads(keys: RoomKeys, event_id: str) -> str | None:
    return cast("str | None", await awaited(client().hget(keys.reads, event_id)))


async def event_delete(
    keys: RoomKeys,
    *,
    event_id: str,
    by: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> bool:
    """False for an unknown event."""
    res = await run_write(
        keys,
        scripts.DELETE_EVENT_SCRIPT,
        [keys.events, keys.meta, keys.reads],
        [event_id, by, idle_ttl_ms(), *event_args(keys)],
        keyed=keyed,
        actor=actor,
    )
    return bool(res[0] == "ok")
