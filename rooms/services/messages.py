"""Messages: addressed by selector, delivered once per recipient, with a state the sender
can see (MCP Agent Mail's lesson: a message nobody knows was read is a message lost).

`to` is a selector, resolved when the message is sent, in the same script that writes the
deliveries: `*` (everyone in the room's presence but the sender), an agentId, `file:<glob>`
(the holders of live leases overlapping the glob), `tag:<tag>` (agents whose heartbeat
carried the tag). Each recipient's delivery moves stored → read (inbox) → acked
(ack_message), or shows expired once `ttlSeconds` pass unacked. A message is also an event
of type `message` whose `recipients` are exactly those deliveries, so get_unread_events
with addressedOnly, wait_for_events, the room's streams and webhooks with an agent filter
all agree on who it is for (records.event_addressed_to).
"""

from __future__ import annotations

import json
from typing import Any, cast

from rooms import clock, errors, turns
from rooms.ids import new_id
from rooms.overlaps import leases_overlapping, matched, on_lease_view
from rooms.paths import path_normalize
from rooms.records import dumps
from rooms.refs import RoomRef
from rooms.results import (
    DeliveryState,
    Inbox,
    InboxSummary,
    Message,
    MessageAcked,
    MessageSent,
)
from rooms.selectors.messages import message_guard
from rooms.selectors.presence import presence_list
from rooms.store import leases as leases_store
from rooms.store import messages as messages_store
from rooms.suggest import HINT_SAMPLE, unknown_id

TAG_MAX = 64


INBOX_AGENTS_SHOWN = 20


def selector_parse(to: str) -> tuple[str, str]:
    """(kind, value) of a `to`: ("all", ""), ("agent", id), ("file", normalised glob),
    ("tag", tag). roomd's "all" is taken as `*`."""
    if to in ("*", "all"):
        return "all", ""
    if to.startswith("file:"):
        glob = to[len("file:") :]
        if not glob:
            raise errors.ToolArgumentsError(errors.MESSAGE_SELECTOR_EMPTY.format(kind="file"))
        return "file", path_normalize(glob)
    if to.startswith("tag:"):
        tag = to[len("tag:") :]
        if not 1 <= len(tag) <= TAG_MAX:
            raise errors.ToolArgumentsError(errors.MESSAGE_SELECTOR_EMPTY.format(kind="tag"))
        return "tag", tag
    return "agent", to


def agent_not_found(agent: str, known: list[str]) -> errors.AgentNotFoundError:
    """`to` names nobody the room has seen: the error names the closest of `known` (a
    sample of who it has seen)."""
    found = unknown_id(
        agent,
        [(a, "") for a in known],
        closest_hint=errors.MESSAGE_AGENT_CLOSEST,
        none_close_hint=errors.MESSAGE_AGENT_NOBODY,
        empty_hint=errors.MESSAGE_AGENT_NOBODY,
        fallback=True,
    )
    return errors.AgentNotFoundError(
        errors.MESSAGE_UNKNOWN_AGENT.format(agent=json.dumps(agent), hint=found.hint),
        extra={"agent": agent, "closest": found.closest, "field": "to"},
    )


def _message(stored: dict[str, Any], state: DeliveryState) -> Message:
    return {
        "messageId": str(stored["messageId"]),
        "from": str(stored["from"]),
        "to": str(stored["to"]),
        "subject": stored.get("subject"),
        "body": str(stored["body"]),
        "replyTo": stored.get("replyTo"),
        "at": str(stored["at"]),
        "state": state,
        "ackRequired": bool(stored.get("ackRequired")),
        "expiresAt": stored.get("expiresAt"),
    }


async def message_send(
    room: RoomRef,
    *,
    sender: str,
    to: str,
    body: str,
    subject: str | None,
    reply_to: str | None,
    ttl_seconds: int | None,
    ack_required: bool,
) -> MessageSent:
    kind, value = selector_parse(to)
    now = clock.now_ms()
    expires_ms = now + ttl_seconds * 1000 if ttl_seconds is not None else 0
    message_id = new_id("m_")
    # Built here, verbatim (the script appends its recipients and event id): the payload
    # of its event and the record its deliveries point at are one text.
    stored = {
        "messageId": message_id,
        "from": sender,
        "to": to,
        "subject": subject,
        "body": body,
        "replyTo": reply_to,
        "at": clock.iso_from_ms(now),
        "ackRequired": ack_required,
        "expiresAt": clock.iso_from_ms(expires_ms) if expires_ms else None,
    }

    async def send(view: leases_store.LeaseView) -> messages_store.MessageStep:
        holders = None
        if kind == "file":
            found = await matched(view, lambda: leases_overlapping(view, value, now))
            holders = (view.generation, [(str(h["holder"]), str(h["id"])) for h, _ in found])
        return await messages_store.message_send(
            room.keys,
            sender=sender,
            kind=kind,
            value=value,
            to=to,
            message_id=message_id,
            message_json=dumps(stored),
            reply_to=reply_to,
            expires_ms=expires_ms,
            now_ms=now,
            hint_sample=HINT_SAMPLE,
            turn=turns.turn_of_post(sender, to),
            holders=holders,
            keyed=room.call,
            actor=room.actor,
        )

    if kind == "file":
        step = await on_lease_view(room.keys, send)
    else:
        step = await send(leases_store.LeaseView("", []))
    if step.outcome == "unknown_agent":
        raise agent_not_found(value, step.known)
    if step.outcome == "unknown_reply":
        assert reply_to is not None
        raise await _message_not_found(room, reply_to, field="replyTo")
    kept = json.loads(step.message_json)
    recipients = [str(a) for a in kept["rcpt"] or []]
    sent: MessageSent = {
        "messageId": str(kept["messageId"]),
        "recipients": recipients,
        "count": len(recipients),
    }
    if not recipients:
        sent["warning"] = errors.MESSAGE_NOBODY.format(to=to, why=errors.MESSAGE_NOBODY_WHY[kind])
    return sent


async def _message_not_found(
    room: RoomRef, message_id: str, *, field: str = "messageId"
) -> errors.MessageNotFoundError:
    sample = await messages_store.message_hint_sample(room.keys, size=HINT_SAMPLE)
    found = unknown_id(
        message_id,
        sample,
        closest_hint=errors.MESSAGE_HINT_CLOSEST,
        none_close_hint=errors.MESSAGE_HINT_NONE,
        empty_hint=errors.MESSAGE_HINT_NONE,
    )
    return errors.MessageNotFoundError(
        errors.MESSAGE_NOT_FOUND.format(message_id=json.dumps(message_id), hint=found.hint),
        extra={"messageId": message_id, "closest": found.closest, "field": field},
    )


async def message_inbox(room: RoomRef, *, agent_id: str, limit: int, unread_only: bool) -> Inbox:
    """The agent's messages, oldest first; those returned unread are read from now on (not
    for a read-only caller, who only looks). An empty inbox says why."""
    message_guard(room, agent_id)
    read = await messages_store.message_inbox(
        room.keys,
        agent_id=agent_id,
        limit=limit,
        unread_only=unread_only,
        mark=room.cursor_scope is None,
        now_ms=clock.now_ms(),
    )
    messages = [
        _message(json.loads(raw), cast(DeliveryState, state)) for raw, state, _ in read.messages
    ]
    summary: InboxSummary = {
        "deliveries": read.ever,
        "read": read.read,
        "unread": read.unread,
        "lastDeliveryAt": clock.iso_from_ms(read.last_ms) if read.last_ms else None,
        "agents": [],
    }
    if not messages:
        agents = [a["agentId"] for a in await presence_list(room) if a["agentId"] != agent_id]
        summary["agents"] = agents[:INBOX_AGENTS_SHOWN]
        if read.ever == 0:
            summary["message"] = errors.INBOX_NEVER.format(
                agent=agent_id,
                agents=", ".join(agents[:INBOX_AGENTS_SHOWN]) or "nobody else yet",
            )
        else:
            summary["message"] = errors.INBOX_ALL_READ.format(
                agent=agent_id,
                ever=read.ever,
                read=read.read,
                last=summary["lastDeliveryAt"],
            )
    return {"messages": messages, "inbox": summary}


async def message_ack(room: RoomRef, *, agent_id: str, message_id: str) -> MessageAcked:
    step = await messages_store.message_ack(
        room.keys,
        agent_id=agent_id,
        message_id=message_id,
        now_ms=clock.now_ms(),
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "unknown":
        raise await _message_not_found(room, message_id)
    kept = json.loads(step.message_json)
    if step.outcome == "not_recipient":
        raise errors.MessageRefusedError(
            errors.MESSAGE_NOT_RECIPIENT.format(
                message_id=message_id,
                agent=agent_id,
                recipients=", ".join(kept["rcpt"] or []) or "nobody",
            ),
            extra={"recipients": list(kept["rcpt"] or [])},
        )
    if step.outcome == "expired":
        raise errors.MessageRefusedError(
            errors.MESSAGE_EXPIRED.format(
                message_id=message_id, at=clock.iso_from_ms(step.at_ms), sender=kept["from"]
            ),
            extra={"expiredAt": clock.iso_from_ms(step.at_ms)},
        )
    return {"messageId": message_id, "state": "acked", "at": clock.iso_from_ms(step.at_ms)}
