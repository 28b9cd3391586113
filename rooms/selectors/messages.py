"""Messages as their senders see them: delivery state per recipient."""

from __future__ import annotations

import json
from typing import cast

from rooms import clock, store
from rooms.refs import RoomRef
from rooms.results import (
    Delivery,
    DeliveryState,
    SentMessage,
    SentMessages,
)


def _delivery(agent: str, value: str, now_ms: int) -> Delivery:
    state, since, expires = value.split(" ") if value else ("stored", "0", "0")
    if state != "acked" and int(expires) and now_ms >= int(expires):
        state, since = "expired", expires
    return {
        "agentId": agent,
        "state": cast(DeliveryState, state),
        "at": clock.iso_from_ms(int(since)),
    }


async def message_rows(room: RoomRef, *, sender: str | None, limit: int) -> list[SentMessage]:
    """The newest kept messages (of one sender, or of the room), newest first, each with
    every recipient's delivery state as of now (an unacked one past its expiry: expired)."""
    now = clock.now_ms()
    rows: list[SentMessage] = []
    for raw, values in await store.messages_sent(room.keys, agent_id=sender, limit=limit):
        kept = json.loads(raw)
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
    return {"messages": await message_rows(room, sender=agent_id, limit=limit)}
