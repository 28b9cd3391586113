"""Messages: addressed, delivered once per recipient, acknowledged."""

from __future__ import annotations

from pydantic import TypeAdapter

from rooms import results as r
from rooms import schemas as s
from rooms import (
    selectors,
    services,
)
from rooms.refs import RoomRef
from rooms.tools.rows import room_tool


@room_tool("send_message", s.SendMessageInput, TypeAdapter(r.MessageSent), read_only=False)
async def send_message(room: RoomRef, a: s.SendMessageInput) -> r.MessageSent:
    """Call to tell particular agents something: to "*" (everyone here but you), an agentId,
    "file:<glob>" (whoever leases an overlapping path) or "tag:<tag>" (agents whose heartbeat
    carried it). Each recipient gets one delivery (stored, read, acked: see sent_messages);
    nobody matching is a warning with count 0, not an error."""
    return await services.message_send(
        room,
        sender=a.from_,
        to=a.to,
        body=a.body,
        subject=a.subject,
        reply_to=a.replyTo,
        ttl_seconds=a.ttlSeconds,
        ack_required=a.ackRequired,
    )


@room_tool("inbox", s.InboxInput, TypeAdapter(r.Inbox), read_only=True, idempotent=False)
async def inbox(room: RoomRef, a: s.InboxInput) -> r.Inbox:
    """Call at the start of a session and between steps: your unread messages, oldest first;
    they count as read from now on. An empty inbox says why (deliveries so far, the last one,
    who is in the room)."""
    return await services.message_inbox(
        room, agent_id=a.agentId, limit=a.limit, unread_only=a.unreadOnly
    )


@room_tool("ack_message", s.AckMessageInput, TypeAdapter(r.MessageAcked), read_only=False)
async def ack_message(room: RoomRef, a: s.AckMessageInput) -> r.MessageAcked:
    """Call to acknowledge a message you received (the sender sees it acked). Only a recipient."""
    return await services.message_ack(room, agent_id=a.agentId, message_id=a.messageId)


@room_tool("sent_messages", s.SentMessagesInput, TypeAdapter(r.SentMessages), read_only=True)
async def sent_messages(room: RoomRef, a: s.SentMessagesInput) -> r.SentMessages:
    """Call to see whether your messages arrived: your sent messages, newest first, each with
    every recipient's delivery state (stored, read, acked, expired) and since when."""
    return await selectors.messages_sent(room, agent_id=a.agentId, limit=a.limit)


TOOLS = (
    send_message,
    inbox,
    ack_message,
    sent_messages,
)
