"""The event log's tools: post, read, the unread, wait, reads and replies."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import events as events_selectors
from rooms.services import events as events_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, idempotent=False, section="event-log", roomd=True)
async def post_event(room: RoomRef, a: s.PostEventInput) -> r.Event:
    """Call to signal something short-lived to the room (an open type string such as
    peer_request). For a durable request write a change_request context entry; for some agents,
    send_message."""
    return await events_services.event_post(
        room, type_=a.type, from_=a.from_, to=a.to, payload=a.payload
    )


@room_tool(read_only=True, section="event-log", roomd=True)
async def read_events(room: RoomRef, a: s.ReadEventsInput) -> list[r.Event]:
    """Read the log without moving your cursor: the newest `limit` events, newest first; with
    since (an ISO time or an event id) only later ones; with order='asc' the first `limit` after
    since, to page through the whole log. To catch up, call get_unread_events."""
    return await events_selectors.event_list(room, since=a.since, limit=a.limit, order=a.order)


@room_tool(read_only=True, idempotent=False, section="event-log", roomd=True)
async def get_unread_events(room: RoomRef, a: s.GetUnreadEventsInput) -> r.Unread:
    """Call to catch up: the events you have not been given yet, oldest first, up to limit; your
    cursor moves past them, so each reaches you exactly once. Call again while count == limit."""
    return await events_services.event_take_unread(
        room, agent_id=a.agentId, limit=a.limit, addressed_only=a.addressedOnly
    )


@room_tool(read_only=True, idempotent=False, waits=True, section="event-log", core=True, roomd=True)
async def wait_for_events(room: RoomRef, a: s.WaitForEventsInput) -> r.Waited:
    """Call to wait on others instead of polling: your unread events, oldest first, each given
    once (a message you read in inbox is not given again); when none, it waits up to
    timeoutMs for the next write. {events: [], timedOut: true}: call again."""
    return await events_services.event_wait(
        room,
        agent_id=a.agentId,
        timeout_ms=a.timeoutMs,
        limit=a.limit,
        addressed_only=a.addressedOnly,
    )


@room_tool(read_only=False, section="event-log", roomd=True)
async def mark_event_read(room: RoomRef, a: s.MarkEventReadInput) -> r.EventMarked:
    """Call to acknowledge one event explicitly: a read receipt (see get_event_reads)."""
    return await events_services.event_mark_read(room, event_id=a.eventId, agent_id=a.agentId)


@room_tool(read_only=True, section="event-log", roomd=True)
async def get_event_reads(room: RoomRef, a: s.GetEventReadsInput) -> r.EventReads:
    """Call to see who has marked an event as read, and when."""
    return await events_selectors.event_reads_get(room, event_id=a.eventId)


@room_tool(read_only=False, idempotent=False, section="event-log", roomd=True)
async def reply_to_event(room: RoomRef, a: s.ReplyToEventInput) -> r.Event:
    """Call to answer an event (a peer_request, a question): an event linked to it by
    reply_to_id."""
    return await events_services.event_post(
        room, type_=a.type, from_=a.from_, to=a.to, payload=a.payload, reply_to=a.replyToId
    )


@room_tool(read_only=False, idempotent=False, section="event-log", roomd=True)
async def delete_event(room: RoomRef, a: s.DeleteEventInput) -> r.EventDeleted:
    """Call to remove one event posted by mistake, in place (events posted meanwhile are never
    lost). Emits event_deleted."""
    return await events_services.event_delete(room, event_id=a.eventId, agent_id=a.agentId)
