"""Messages: addressed, delivered once per recipient, acknowledged."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import messages as messages_selectors
from rooms.services import messages as messages_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, section="messages", core=True)
async def send_message(room: RoomRef, a: s.SendMessageInput) -> r.MessageSent:
    """Call to tell agents something: to "*" (everyone here but you), an agentId, "file:<glob>"
    (whoever leases an overlapping path) or "tag:<tag>". One delivery per recipient (stored,
    read, acked); nobody matching is count 0 and a warning, not an error."""
    return await messages_services.message_send(
        room,
        sender=a.from_,
        to=a.to,
        body=a.body,
        subject=a.subject,
        reply_to=a.replyTo,
        ttl_seconds=a.ttlSeconds,
        ack_required=a.ackRequired,
    )


@room_tool(read_only=True, idempotent=False, section="messages", core=True)
async def inbox(room: RoomRef, a: s.InboxInput) -> r.Inbox:
    """Call at the start of a session and between steps: your unread messages, oldest first,
    read from now on (wait_for_events does not give them again). An empty inbox says why."""
    return await messages_services.message_inbox(
        room, agent_id=a.agentId, limit=a.limit, unread_only=a.unreadOnly
    )


@room_tool(read_only=False, section="messages", core=True)
async def ack_message(room: RoomRef, a: s.AckMessageInput) -> r.MessageAcked:
    """Call to acknowledge a message you received (the sender sees it acked). Only a recipient."""
    return await messages_services.message_ack(room, agent_id=a.agentId, message_id=a.messageId)


@room_tool(read_only=True, section="messages")
async def sent_messages(room: RoomRef, a: s.SentMessagesInput) -> r.SentMessages:
    """Call to see whether your messages arrived: your sent messages, newest first, each with
    every recipient's delivery state (stored, read, acked, expired) and since when."""
    return await messages_selectors.messages_sent(room, agent_id=a.agentId, limit=a.limit)
