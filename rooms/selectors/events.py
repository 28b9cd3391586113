"""Reads of the event log: ranges, pages, follow, who read an event."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Iterable
from typing import cast

from rooms import clock, errors
from rooms.records import (
    FIRST_EVENT_ID,
    LAST_EVENT_ID,
    event_from_entry,
    event_seen,
    is_event_id,
)
from rooms.refs import RoomRef
from rooms.results import (
    Event,
    EventPage,
    EventReads,
    ReadReceipt,
)
from rooms.selectors.messages import message_visible
from rooms.store import events as events_store
from rooms.store import wakeups as wakeups_store
from rooms.store.events import StreamEntry
from rooms.suggest import describe


async def event_not_found(room: RoomRef, event_id: str) -> errors.EventNotFoundError:
    if is_event_id(event_id):
        # Redis refuses an interval ending before 0-0 or starting after the largest id.
        before = (
            await events_store.event_range(
                room.keys, start="-", end=f"({event_id}", count=2, reverse=True
            )
            if event_id != FIRST_EVENT_ID
            else []
        )
        after = (
            await events_store.event_range(
                room.keys, start=f"({event_id}", end="+", count=1, reverse=False
            )
            if event_id != LAST_EVENT_ID
            else []
        )
        near = list(reversed(before)) + after
    else:
        near = await events_store.event_range(room.keys, start="-", end="+", count=3, reverse=True)
    pairs = [(eid, fields.get("type", "")) for eid, fields in near][:3]
    hint = (
        errors.EVENT_HINT_CLOSEST.format(closest=describe(pairs))
        if pairs
        else errors.EVENT_HINT_EMPTY
    )
    return errors.EventNotFoundError(
        errors.EVENT_NOT_FOUND.format(event_id=event_id, hint=hint),
        extra={"eventId": event_id, "closest": [p[0] for p in pairs]},
    )


def since_bound(since: str) -> str | None:
    """The first stream id strictly after `since` (an event id or an ISO time), or None when
    nothing can come after it (the largest stream id)."""
    if is_event_id(since):
        return None if since == LAST_EVENT_ID else f"({since}"
    try:
        ms = clock.ms_from_iso(since)
    except ValueError:
        raise errors.ToolArgumentsError(errors.SINCE_INVALID.format(since=since)) from None
    return f"{max(ms, -1) + 1}-0"


def events_seen(room: RoomRef, entries: Iterable[StreamEntry]) -> list[Event]:
    """The events of `entries` as this caller sees them: a message's event only when
    message_visible lets it read the message (a guest: its own agent's); every other event
    as it is. Each event, with its text, is shared with every read of the same entry
    (records.event_seen): whoever changes one copies it first."""
    seen = []
    for entry in entries:
        event = cast(Event, event_seen(entry))
        if event["type"] != "message" or message_visible(
            room, event["from"], event.get("recipients", [])
        ):
            seen.append(event)
    return seen


async def event_list(room: RoomRef, *, since: str | None, limit: int, order: str) -> list[Event]:
    """Newest `limit` first by default (roomd); with order="asc" and `since`, the first
    `limit` after it, so a reader can page through the whole retained log."""
    start = since_bound(since) if since else "-"
    if start is None:
        return []
    entries = await events_store.event_range(
        room.keys, start=start, end="+", count=limit, reverse=(order == "desc")
    )
    return events_seen(room, entries)


async def event_get_many(room: RoomRef, event_ids: Iterable[str]) -> dict[str, Event]:
    """The events of `event_ids` the log still holds, by id (search hits, say): one read
    each, so callers pass a bounded list."""
    found: dict[str, Event] = {}
    for event_id in dict.fromkeys(event_ids):
        if is_event_id(event_id):
            entry = await events_store.event_get(room.keys, event_id)
            for event in events_seen(room, [entry] if entry is not None else []):
                found[event_id] = event
    return found


async def event_reads_get(room: RoomRef, *, event_id: str) -> EventReads:
    if not is_event_id(event_id) or await events_store.event_get(room.keys, event_id) is None:
        raise await event_not_found(room, event_id)
    raw = await events_store.event_reads(room.keys, event_id)
    decoded = json.loads(raw) if raw else []
    reads: list[ReadReceipt] = decoded if isinstance(decoded, list) else []
    return {"eventId": event_id, "readBy": [r["agentId"] for r in reads], "reads": reads}


async def event_newest_id(room: RoomRef) -> str:
    """The id of the newest event, or "0-0" for an empty log."""
    newest = await events_store.event_range(room.keys, start="-", end="+", count=1, reverse=True)
    return newest[0][0] if newest else "0-0"


async def event_follow(
    room: RoomRef, *, after: str | None, keepalive_seconds: float
) -> AsyncGenerator[Event | None, None]:
    """Every event after `after` (an event id; None = from now on), in log order, as they
    are written; None whenever `keepalive_seconds` pass quietly. Ends only when the caller
    stops iterating. Resuming with the last id seen gives no gap and no repeat."""
    if after is None or not is_event_id(after):
        newest = await events_store.event_range(
            room.keys, start="-", end="+", count=1, reverse=True
        )
        cursor = newest[0][0] if newest else "0-0"
    else:
        cursor = after
    # Watched until the hub loses the room's subscription (then watched again), cleared
    # before each read: a write after the clear sets it again, one before is in the read.
    while True:
        async with wakeups_store.room_watch(room.keys) as woken:
            while True:
                woken.clear()
                entries = (
                    await events_store.event_range(
                        room.keys, start=f"({cursor}", end="+", count=100, reverse=False
                    )
                    if cursor != LAST_EVENT_ID
                    else []
                )
                if entries:
                    cursor = entries[-1][0]
                    for event in events_seen(room, entries):
                        yield event
                    continue
                # A quiet period reads nothing: nothing was written since the read (the
                # subscription was live before it), so only a wake leads to the next read.
                while not await woken.wait(keepalive_seconds):
                    yield None
                if woken.rewatch:
                    break


PAGE_SCAN_MOST = 5_000  # a filtered page of the log reads at most this many events


async def event_page(
    room: RoomRef,
    *,
    before: str | None,
    limit: int,
    agent: str | None = None,
    type_: str | None = None,
) -> EventPage:
    """The newest `limit` events before `before` (an event id; None = from the newest),
    those from `agent` and of `type_` only when given. A filtered page reads at most
    PAGE_SCAN_MOST events, so a filter nothing matches costs a bounded read, and says
    where it stopped (`older`)."""
    end = "+"
    if before is not None:
        if not is_event_id(before) or before == FIRST_EVENT_ID:  # nothing is before 0-0
            return {"events": [], "older": None, "scanned": 0}
        end = f"({before}"
    found: list[Event] = []
    scanned = 0
    while len(found) < limit and scanned < PAGE_SCAN_MOST:
        # One more than a page unfiltered, so a log of exactly N pages ends without an
        # "older" link to an empty one.
        want = limit + 1 if agent is None and type_ is None else 200
        entries = await events_store.event_range(
            room.keys, start="-", end=end, count=want, reverse=True
        )
        if not entries:
            return {"events": found, "older": None, "scanned": scanned}
        for at, entry in enumerate(entries):
            scanned += 1
            event = event_from_entry(entry)
            if (agent is None or event["from"] == agent) and (
                type_ is None or event["type"] == type_
            ):
                found.append(event)
                if len(found) == limit:
                    more = at + 1 < len(entries) or len(entries) == want
                    return {
                        "events": found,
                        "older": event["id"] if more else None,
                        "scanned": scanned,
                    }
        end = f"({entries[-1][0]}"
        if len(entries) < want:
            return {"events": found, "older": None, "scanned": scanned}
    return {"events": found, "older": end[1:], "scanned": scanned}
