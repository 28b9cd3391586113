"""Direct messages between agents: sent, read from an inbox, acknowledged, listed by sender
(rooms/lua/messages/)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, cast

from django.conf import settings

from rooms import idempotency, scripts, turns
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import event_args, idle_ttl_ms, named, run, run_write, unwritten
from rooms.store.leases import LEASES_MOVED

MessageOutcome = Literal[
    "sent",
    "acked",
    "unknown",
    "unknown_reply",
    "unknown_agent",
    "not_recipient",
    "expired",
    "moved",
]


@dataclass(frozen=True, slots=True)
class MessageStep:
    """What a message write came to: "sent", "acked", "unknown" (no such kept message),
    "unknown_reply", "unknown_agent" (`known` is who the room has seen), "not_recipient",
    "expired"."""

    outcome: MessageOutcome
    message_json: str = ""
    event_id: str = ""
    at_ms: int = 0
    known: list[str] = field(default_factory=list)


async def message_send(
    keys: RoomKeys,
    *,
    sender: str,
    kind: str,
    value: str,
    to: str,
    message_id: str,
    message_json: str,
    reply_to: str | None,
    expires_ms: int,
    now_ms: int,
    hint_sample: int,
    turn: turns.TurnClaim,
    holders: tuple[str, list[tuple[str, str]]] | None = None,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> MessageStep:
    """`holders` (a file: selector): the lease generation the service matched the glob on,
    and the (agent, lease id) pairs it found; "moved" when a lease was granted since."""
    res = await run_write(
        keys,
        scripts.SEND_MESSAGE_SCRIPT,
        [
            *keys.message_keys,
            keys.presence,
            keys.cursors,
            keys.agent_tags,
            keys.leases,
            keys.lease_expiry,
            keys.meta,
            keys.events,
            keys.reads,
        ],
        [
            sender,
            kind,
            value,
            to,
            message_id,
            message_json,
            reply_to or "",
            expires_ms,
            now_ms,
            idle_ttl_ms(),
            *event_args(keys),
            int(settings.ROOM_MESSAGES_MAX),
            int(settings.ROOM_DELIVERIES_MAX),
            int(settings.ROOM_MESSAGE_BYTES_MAX),
            hint_sample,
            int(settings.ROOM_MESSAGE_AGENTS_MAX),
            holders[0] if holders else "",
            json.dumps(holders[1] if holders else []),
        ],
        turn=turn,
        keyed=keyed,
        actor=actor,
    )
    if res[0] == "ok":
        return MessageStep("sent", str(res[1]), str(res[2]))
    outcome: MessageOutcome = named(res, MessageOutcome)
    if outcome == LEASES_MOVED:
        unwritten(keyed)
    if outcome == "unknown_agent":
        return MessageStep("unknown_agent", known=[str(a) for a in res[1]])
    return MessageStep(outcome)


@dataclass(frozen=True, slots=True)
class InboxRead:
    ever: int
    read: int
    last_ms: int
    unread: int
    messages: list[tuple[str, str, int]]  # (message JSON, state, since ms)


async def message_inbox(
    keys: RoomKeys, *, agent_id: str, limit: int, unread_only: bool, mark: bool, now_ms: int
) -> InboxRead:
    """The agent's deliveries; with `mark`, the unread ones returned are read from now on,
    in the same step. Never an idempotent write: it answers what is unread now."""
    res = await run(
        scripts.INBOX_SCRIPT,
        [keys.messages, keys.deliveries, keys.inbox, keys.message_stats],
        [agent_id, limit, "1" if unread_only else "0", now_ms, idle_ttl_ms(), "1" if mark else "0"],
    )
    head = res[0]
    return InboxRead(
        ever=int(head[0]),
        read=int(head[1]),
        last_ms=int(head[2]),
        unread=int(head[3]),
        messages=[(str(m[0]), str(m[1]), int(m[2])) for m in res[1:]],
    )


async def message_ack(
    keys: RoomKeys,
    *,
    agent_id: str,
    message_id: str,
    now_ms: int,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> MessageStep:
    res = await run_write(
        keys,
        scripts.ACK_MESSAGE_SCRIPT,
        [keys.messages, keys.deliveries, keys.message_stats, keys.meta, keys.events, keys.reads],
        [agent_id, message_id, now_ms, idle_ttl_ms(), *event_args(keys)],
        keyed=keyed,
        actor=actor,
    )
    if res[0] == "ok":
        return MessageStep("acked", str(res[1]), str(res[3]), at_ms=int(res[2]))
    outcome: MessageOutcome = named(res, MessageOutcome)
    if outcome == "not_recipient":
        return MessageStep("not_recipient", str(res[1]))
    if outcome == "expired":
        return MessageStep("expired", str(res[1]), at_ms=int(res[2]))
    return MessageStep(outcome)


async def messages_sent(
    keys: RoomKeys, *, agent_id: str | None, limit: int
) -> list[tuple[str, list[str]]]:
    """The newest `limit` kept messages of a sender (of anyone: None), each with its
    deliveries' state values in the order of its recipients."""
    res = await run(
        scripts.SENT_MESSAGES_SCRIPT,
        [keys.messages, keys.deliveries, keys.outbox, keys.message_order],
        [agent_id or "", limit],
    )
    return [(str(m[0]), [str(v) for v in m[1]]) for m in res]


async def message_hint_sample(keys: RoomKeys, *, size: int) -> list[tuple[str, str]]:
    """The newest kept messages as (id, "from → to: subject") for unknown-id hints."""
    ids = cast("list[str]", await client().zrevrange(keys.message_order, 0, size - 1))
    if not ids:
        return []
    raws = await client().hmget(keys.messages, ids)
    out: list[tuple[str, str]] = []
    for raw in raws:
        if raw:
            m = json.loads(raw)
            out.append((str(m["messageId"]), f"{m['from']} → {m['to']}: {m.get('subject') or ''}"))
    return out
