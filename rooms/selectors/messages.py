"""Messages as their senders see them: delivery state per recipient."""

from __future__ import annotations

import json
from typing import cast

from rooms import clock, errors
from rooms.refs import RoomRef
from rooms.results import (
    Delivery,
    DeliveryState,
    SentMessage,
    SentMessages,
)
from rooms.store import messages as messages_store


def _delivery(agent: str, value: str, now_ms: int) -> Delivery:
    state, since, expires = value.split(" ") if value else ("stored", "0", "0")
    if state != "acked" and int(expires) and now_ms >= int(expires):
        state, since = "expired", expires
    return {
        "agentId": agent,
        "state": cast(DeliveryState, state),
        "at": clock.iso_from_ms(int(since)),
    }


def message_visible(room: RoomRef, sender: str, recipients: list[str]) -> bool:
    """THE rule of whose messages a caller reads (issue 31): a team's caller, every one; a
    guest (an invite to one room), only those its agent sent or is a recipient of (direct,
    "*", a tag or a file lease it held when it was sent); an invite bound to no agent, none.
    Every read that carries a message's body asks it: the inbox and sent_messages (through
    message_guard), the message events of every event read (events_seen), the snapshot."""
    reader = room.reader
    return reader is None or (reader != "" and (sender == reader or reader in recipients))


def message_guard(room: RoomRef, agent_id: str) -> None:
    """A guest reads its own agent's inbox and sent messages only (a bound invite can name
    no other agent anyway; one bound to none names any, so it reads none)."""
    if room.reader is not None and agent_id != room.reader:
        raise errors.MessageNotYoursError(
            errors.MESSAGE_GUEST_READ.format(agent=agent_id),
            extra={"agentId": agent_id},
        )


async def message_rows(room: RoomRef, *, sender: str | None, limit: int) -> list[SentMessage]:
    """The newest kept messages (of one sender, or of the room), newest first, each with
    every recipient's delivery state as of now (an unacked one past its expiry: expired);
    a guest's, only those message_visible lets it read."""
    now = clock.now_ms()
    rows: list[SentMessage] = []
    for raw, values in await messages_store.messages_sent(room.keys, agent_id=sender, limit=limit):
        kept = json.loads(raw)
        if not message_visible(room, str(kept["from"]), [str(a) for a in kept["rcpt"] or []]):
            continue
        rows.append(
            {
                "messageId": str(kept["messageId"]),
                "from": str(kept["from"]),
                "to": str(kept["to"]),
                "subject": kept.get("subject"),
                "body": str(kept["body"]),
                "at": str(kept["at"]),
                "ackRequired": bool(kept.get("ackRequired")),
                "recipients": [
                    _delivery(str(agent), value, now)
                    for agent, value in zip(kept["rcpt"] or [], values, strict=False)
                ],
            }
        )
    return rows


async def messages_sent(room: RoomRef, *, agent_id: str, limit: int) -> SentMessages:
    message_guard(room, agent_id)
    return {"messages": await message_rows(room, sender=agent_id, limit=limit)}
