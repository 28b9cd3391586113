"""Writes to the event log and to each agent's read cursor: post, delete, take the unread,
wait."""

from __future__ import annotations

import time
from typing import Any, cast

from rooms import clock, errors, memory, turns
from rooms.names import attributed
from rooms.quotas import quota_error
from rooms.records import (
    dumps,
    event_from_entry,
    is_event_id,
    known_around,
)
from rooms.refs import RoomRef
from rooms.results import (
    Event,
    EventDeleted,
    EventMarked,
    Summary,
    Unread,
    Waited,
)
from rooms.selectors import events as events_selectors
from rooms.selectors import handoffs as handoffs_selectors
from rooms.selectors import plan as plan_selectors
from rooms.selectors import presence as presence_selectors
from rooms.store import engine as engine_store
from rooms.store import events as events_store
from rooms.store import messages as messages_store
from rooms.store import wakeups as wakeups_store

# The types the server itself writes: an agent posting one would forge the room's history.
RESERVED_EVENT_TYPES = (
    "task_added",
    "task_updated",
    "task_deleted",
    "task_claimed",
    "task_released",
    "task_claim_expired",
    "context_available",
    "context_updated",
    "context_deleted",
    "context_stale",
    "shared_var_set",
    "agent_left",
    "event_deleted",
    "review_requested",
    "review_approved",
    "review_rejected",
    "lease_granted",
    "lease_released",
    "message",
    "message_acked",
    "task_submitted",
    "task_verified",
    "task_rejected",
    "handoff_offered",
    "handoff_accepted",
    "handoff_declined",
    "room_status_changed",
    "broadcast",  # room_broadcast's own (event_post with `reserved=True`)
)


async def event_delete(room: RoomRef, *, event_id: str, agent_id: str | None) -> EventDeleted:
    """One event out of the log, in place: events appended meanwhile are never lost."""
    if not is_event_id(event_id) or not await events_store.event_delete(
        room.keys,
        event_id=event_id,
        by=attributed(agent_id),
        keyed=room.call,
        actor=room.actor,
    ):
        raise await events_selectors.event_not_found(room, event_id)
    return {"deleted": True, "eventId": event_id}


async def event_post(
    room: RoomRef,
    *,
    type_: str,
    from_: str,
    to: str,
    payload: Any,
    reply_to: str | None = None,
    reserved: bool = False,
) -> Event:
    """Append an event: a post, so taken only in the poster's turn (rooms.turns).
    `reserved`: the server's own tool posts one of the types agents may not (room_broadcast's
    `broadcast`), so the dashboard's sentence for it can be trusted."""
    if type_ in RESERVED_EVENT_TYPES and not reserved:
        raise errors.ToolArgumentsError(
            errors.EVENT_TYPE_RESERVED.format(type=type_, reserved=", ".join(RESERVED_EVENT_TYPES)),
            extra={"reserved": list(RESERVED_EVENT_TYPES)},
        )
    sender = attributed(from_)
    if reply_to is not None and not is_event_id(reply_to):
        raise await events_selectors.event_not_found(room, reply_to)
    eid = await events_store.event_append(
        room.keys,
        type_=type_,
        from_=sender,
        to=to,
        payload_json=dumps(payload),
        reply_to=reply_to,
        turn=turns.turn_of_post(sender, to),
        keyed=room.call,
        actor=room.actor,
    )
    if eid is None:
        assert reply_to is not None
        raise await events_selectors.event_not_found(room, reply_to)
    fields = {"type": type_, "from": sender, "to": to, "payload": dumps(payload)}
    if reply_to:
        fields["reply_to_id"] = reply_to
    return event_from_entry((eid, fields))


def _empty_reason(batch: events_store.UnreadBatch) -> str:
    if batch.log_length == 0:
        return "No unread events: this room's event log is empty."
    return (
        f"No unread events after your cursor {batch.cursor}; the log holds "
        f"{batch.log_length} events and you have seen them all."
    )


async def _unread(
    room: RoomRef, *, agent_id: str, limit: int, addressed_only: bool
) -> events_store.UnreadBatch:
    batch = await events_store.event_read_unread(
        room.keys,
        cursors_key=room.cursors_key,
        cursor_field=room.cursor_field(agent_id),
        agent_id=agent_id,
        limit=limit,
        addressed_only=addressed_only,
    )
    if isinstance(batch, engine_store.AtQuota):
        raise quota_error("ROOM_CURSORS_MAX", batch.used)
    return batch


async def _unread_gathered(
    room: RoomRef, *, agent_id: str, limit: int, addressed_only: bool
) -> events_store.UnreadTaken:
    """A waiting call's read: one script call with the room's other reads of this moment
    (the waiters one write wakes)."""
    read = events_store.UnreadRead(
        cursors_key=room.cursors_key,
        cursor_field=room.cursor_field(agent_id),
        agent_id=agent_id,
        limit=limit,
        addressed_only=addressed_only,
    )
    taken = await events_store.event_read_unread_gathered(room.keys, read)
    if isinstance(taken, engine_store.AtQuota):
        raise quota_error("ROOM_CURSORS_MAX", taken.used)
    return taken


async def event_take_unread(
    room: RoomRef, *, agent_id: str, limit: int, addressed_only: bool
) -> Unread:
    """Events after the agent's cursor, oldest first; the cursor moves to the last one
    returned in the same atomic step, so each event reaches each agent exactly once."""
    batch = await _unread(
        room, agent_id=attributed(agent_id), limit=limit, addressed_only=addressed_only
    )
    result: Unread = {
        "events": events_selectors.events_seen(room, batch.events),
        "cursor": batch.cursor,
        "count": 0,
    }
    result["count"] = len(result["events"])
    if not batch.events:
        result["message"] = _empty_reason(batch)
    return result


async def event_mark_read(room: RoomRef, *, event_id: str, agent_id: str) -> EventMarked:
    agent = attributed(agent_id)
    ok = is_event_id(event_id) and await events_store.event_mark_read(
        room.keys,
        event_id=event_id,
        agent_id=agent,
        now_iso=clock.now_iso(),
        keyed=room.call,
        actor=room.actor,
    )
    if isinstance(ok, engine_store.AtQuota):
        raise quota_error("EVENT_READS_MAX", ok.used)
    if not ok:
        raise await events_selectors.event_not_found(room, event_id)
    return {"eventId": event_id, "agentId": agent, "ok": True}


async def agent_summary(room: RoomRef, *, agent_id: str) -> Summary:
    """The cold-start call: own tasks, unread events (consumed, like get_unread_events),
    how many context entries changed since the agent last looked, how many messages wait
    in its inbox (not read by this call), and who is here."""
    agent = attributed(agent_id)
    batch = await _unread(room, agent_id=agent, limit=50, addressed_only=False)
    my_tasks = await plan_selectors.task_list_for_agent(room, agent_id=agent)
    presence = await presence_selectors.presence_list(room)
    messages = await messages_store.message_inbox(
        room.keys, agent_id=agent, limit=0, unread_only=True, mark=False, now_ms=clock.now_ms()
    )
    offered = await handoffs_selectors.handoffs_pending(room, agent)
    inherited = await memory.memory_summary(room)
    return {
        "agentId": agent,
        "roomId": room.room_id,
        "myTasks": my_tasks,
        "unreadEvents": events_selectors.events_seen(room, batch.events),
        "newContextCount": batch.context_changed,
        # A guest counts only its own agent's (rooms.selectors.messages.message_guard).
        "unreadMessages": messages.unread if room.reader in (None, agent) else 0,
        "pendingHandoffs": offered,
        "inheritedContext": inherited,
        "presence": presence,
        "cursor": batch.cursor,
    }


async def event_wait(
    room: RoomRef, *, agent_id: str, timeout_ms: int, limit: int, addressed_only: bool
) -> Waited:
    """get_unread_events that waits: returns at once when something is unread, else the
    moment a write to the room lands (through any server process), else `timedOut` at the
    timeout (at most the door's `room.wait_most_ms`). Same cursor, same exactly-once rule.
    No polling: it sleeps on the room's wake channel, registered before the first read and
    cleared before each read, so no write can slip between read and sleep (a write after
    the clear sets it again; one before is in the read). It registers again only when the
    hub lost the room's subscription (`woken.rewatch`)."""
    agent = attributed(agent_id)
    applied = min(timeout_ms, room.wait_most_ms)
    capped = timeout_ms > room.wait_most_ms
    deadline = time.monotonic() + applied / 1000

    def waited(cursor: str, events: list[Event]) -> Waited:
        # Its text made around its events' (records.event_seen): the waiters one write
        # wakes encode that write's event once between them.
        result = {
            "events": events,
            "cursor": cursor,
            "count": len(events),
            "timedOut": not events,
            "timeoutMs": applied,
            "capped": capped,
        }
        return cast(Waited, known_around(result, "events"))

    while True:
        async with wakeups_store.room_watch(room.keys) as woken:
            while True:
                woken.clear()
                batch = await _unread_gathered(
                    room, agent_id=agent, limit=limit, addressed_only=addressed_only
                )
                # A guest passes over others' messages and waits on (rooms.selectors.messages).
                seen = events_selectors.events_seen(room, batch.events)
                remaining = deadline - time.monotonic()
                if seen or remaining <= 0:
                    return waited(batch.cursor, seen)
                if batch.events:
                    continue  # only others' messages: read on
                if not await woken.wait(remaining):
                    # Nothing was written since the read (the subscription was live before
                    # it): reading again would find what the read found.
                    return waited(batch.cursor, [])
                if woken.rewatch:
                    break
