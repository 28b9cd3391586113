"""Messages (docs/protocol.md "Messages"): every selector, one delivery per recipient
moving stored → read → acked or expired, an inbox that explains itself, and one rule of
who a message is for, whether it is read through inbox, addressedOnly or a webhook."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from calls.runner import tool_run
from rooms import errors
from rooms.records import event_addressed_to
from rooms.refs import RoomRef
from rooms.services import events as events_services
from rooms.store import connections as connections_store
from tenants.capabilities import Caller
from tenants.models import Webhook
from tenants.webhooks import _matches
from tests import callers
from tests.rooms.test_wait import registered

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def here(caller: Caller, room: RoomRef, *agents: str, tags: list[str] | None = None) -> None:
    for agent in agents:
        extra = {"tags": tags} if tags is not None else {}
        await call(caller, room, "heartbeat", agentId=agent, **extra)


async def send(caller: Caller, room: RoomRef, sender: str, to: str, **args: Any) -> Any:
    args.setdefault("body", f"hello from {sender}")
    return await call(caller, room, "send_message", **{"from": sender, "to": to, **args})


def states(sent: dict[str, Any]) -> dict[str, str]:
    return {d["agentId"]: d["state"] for d in sent["messages"][0]["recipients"]}


async def test_a_direct_message_moves_stored_read_acked_and_the_sender_sees_each_step(
    team_a: Caller, room: RoomRef
) -> None:
    await here(team_a, room, "alice", "bob")
    sent = await send(team_a, room, "bob", "alice", subject="schema", ackRequired=True)
    assert sent["recipients"] == ["alice"] and sent["count"] == 1 and "warning" not in sent
    mine = await call(team_a, room, "sent_messages", agentId="bob")
    assert states(mine) == {"alice": "stored"} and mine["messages"][0]["ackRequired"] is True

    got = await call(team_a, room, "inbox", agentId="alice")

    [message] = got["messages"]
    assert message["messageId"] == sent["messageId"] and message["from"] == "bob"
    assert message["to"] == "alice" and message["subject"] == "schema"
    assert message["body"] == "hello from bob" and message["state"] == "read"
    assert set(message) == {
        "messageId",
        "from",
        "to",
        "subject",
        "body",
        "replyTo",
        "at",
        "state",
        "ackRequired",
        "expiresAt",
    }
    assert states(await call(team_a, room, "sent_messages", agentId="bob")) == {"alice": "read"}

    acked = await call(team_a, room, "ack_message", agentId="alice", messageId=sent["messageId"])
    assert acked["state"] == "acked" and acked["messageId"] == sent["messageId"]
    assert states(await call(team_a, room, "sent_messages", agentId="bob")) == {"alice": "acked"}
    # The sender hears of the ack as an event addressed to it.
    told = await call(team_a, room, "get_unread_events", agentId="bob", addressedOnly=True)
    assert [(e["type"], e["payload"]) for e in told["events"]] == [
        ("message_acked", {"messageId": sent["messageId"]})
    ]
    # Acking again changes nothing.
    again = await call(team_a, room, "ack_message", agentId="alice", messageId=sent["messageId"])
    assert again["at"] == acked["at"]


async def test_an_empty_inbox_explains_itself(team_a: Caller, room: RoomRef) -> None:
    await here(team_a, room, "alice", "bob", "carol")
    never = await call(team_a, room, "inbox", agentId="alice")
    assert never["messages"] == [] and never["inbox"]["deliveries"] == 0
    assert set(never["inbox"]["agents"]) == {"bob", "carol"}
    assert "none was ever delivered" in never["inbox"]["message"]
    assert "bob" in never["inbox"]["message"]

    await send(team_a, room, "bob", "alice")
    await send(team_a, room, "carol", "alice")
    first = await call(team_a, room, "inbox", agentId="alice", limit=1)
    assert len(first["messages"]) == 1 and first["inbox"]["unread"] == 1
    second = await call(team_a, room, "inbox", agentId="alice")
    assert [m["from"] for m in second["messages"]] == ["carol"]  # oldest first, each once
    empty = await call(team_a, room, "inbox", agentId="alice")

    summary = empty["inbox"]
    assert empty["messages"] == [] and summary["deliveries"] == 2 and summary["read"] == 2
    assert summary["unread"] == 0 and summary["lastDeliveryAt"] is not None
    assert "2 delivered here, 2 of them read" in summary["message"]
    history = await call(team_a, room, "inbox", agentId="alice", unreadOnly=False)
    assert [m["from"] for m in history["messages"]] == ["bob", "carol"]
    assert {m["state"] for m in history["messages"]} == {"read"}


async def test_star_reaches_everyone_present_but_the_sender(team_a: Caller, room: RoomRef) -> None:
    await here(team_a, room, "alice", "bob", "carol")
    sent = await send(team_a, room, "bob", "*")
    assert sorted(sent["recipients"]) == ["alice", "carol"] and sent["count"] == 2
    await here(team_a, room, "dave")  # arrived after: not a recipient
    for agent, count in (("alice", 1), ("carol", 1), ("bob", 0), ("dave", 0)):
        got = await call(team_a, room, "inbox", agentId=agent)
        assert len(got["messages"]) == count, agent


async def test_tag_reaches_the_agents_whose_heartbeat_carried_it(
    team_a: Caller, room: RoomRef
) -> None:
    await here(team_a, room, "alice", tags=["backend", "db"])
    await here(team_a, room, "carol", tags=["frontend"])
    await here(team_a, room, "bob")
    assert (await send(team_a, room, "bob", "tag:db"))["recipients"] == ["alice"]
    await here(team_a, room, "alice")  # a heartbeat without tags keeps them
    assert (await send(team_a, room, "bob", "tag:db"))["recipients"] == ["alice"]
    await here(team_a, room, "alice", tags=["frontend"])  # with tags, they replace
    assert (await send(team_a, room, "bob", "tag:db"))["count"] == 0
    assert sorted((await send(team_a, room, "bob", "tag:frontend"))["recipients"]) == [
        "alice",
        "carol",
    ]
    await call(team_a, room, "leave_room", agentId="carol")
    assert (await send(team_a, room, "bob", "tag:frontend"))["recipients"] == ["alice"]


async def test_file_reaches_the_holders_of_overlapping_live_leases(
    team_a: Caller, room: RoomRef
) -> None:
    await call(team_a, room, "lease_claim", agentId="alice", path="src/api/**")
    await call(team_a, room, "lease_claim", agentId="carol", path="docs/*.md", mode="shared")
    await call(team_a, room, "lease_claim", agentId="bob", path="src/api/x.py", mode="shared")
    sent = await send(team_a, room, "bob", "file:src/api/users.py")
    assert sent["recipients"] == ["alice"]  # the sender's own lease does not reach it
    assert (await send(team_a, room, "bob", "file:docs/**"))["recipients"] == ["carol"]
    assert (await send(team_a, room, "bob", "file:./src/../lib/a.py"))["count"] == 0
    await call(team_a, room, "lease_release", agentId="alice", path="src/api/**")
    assert (await send(team_a, room, "bob", "file:src/api/users.py"))["count"] == 0


async def test_nobody_matching_is_a_warning_with_count_zero(team_a: Caller, room: RoomRef) -> None:
    sent = await send(team_a, room, "bob", "tag:nobody-has-it")
    assert sent["count"] == 0 and sent["recipients"] == []
    assert "no agent's heartbeat carried that tag" in sent["warning"]
    mine = await call(team_a, room, "sent_messages", agentId="bob")
    assert mine["messages"][0]["recipients"] == []  # kept, and the sender can see it
    alone = await send(team_a, room, "bob", "*")
    assert alone["count"] == 0 and "no other agent" in alone["warning"]


async def test_an_unknown_agent_is_an_error_naming_the_closest(
    team_a: Caller, room: RoomRef
) -> None:
    await here(team_a, room, "alice", "bob", "backend-api")
    with pytest.raises(errors.AgentNotFoundError) as refused:
        await send(team_a, room, "bob", "alicee")
    assert '"alicee"' in refused.value.message and '"alice"' in refused.value.message
    assert refused.value.extra["closest"][0] == "alice"
    mine = await call(team_a, room, "sent_messages", agentId="bob")
    assert mine["messages"] == []  # nothing half-written
    # An agent that only ever read the room is known too.
    await call(team_a, room, "post_event", type="note", **{"from": "bob"}, payload={})
    await call(team_a, room, "get_unread_events", agentId="reader")
    assert (await send(team_a, room, "bob", "reader"))["recipients"] == ["reader"]


async def test_odd_selectors_are_refused_saying_why(team_a: Caller, room: RoomRef) -> None:
    for to, why in (("file:", "needs a value"), ("tag:", "needs a value"), ("file:../x", "leaves")):
        with pytest.raises(errors.ToolArgumentsError, match=why):
            await send(team_a, room, "bob", to)


async def test_an_unacked_message_expires_at_its_ttl(
    team_a: Caller, room: RoomRef, frozen_clock: list[datetime]
) -> None:
    await here(team_a, room, "alice", "carol", "bob")
    sent = await send(team_a, room, "bob", "alice", ttlSeconds=10, ackRequired=True)
    kept = await send(team_a, room, "bob", "carol", ttlSeconds=10)
    await call(team_a, room, "ack_message", agentId="carol", messageId=kept["messageId"])
    frozen_clock[0] += timedelta(seconds=11)

    mine = await call(team_a, room, "sent_messages", agentId="bob")

    by_id = {m["messageId"]: m["recipients"][0] for m in mine["messages"]}
    assert by_id[sent["messageId"]]["state"] == "expired"
    assert by_id[kept["messageId"]]["state"] == "acked"  # acked stays acked
    got = await call(team_a, room, "inbox", agentId="alice")
    assert got["messages"] == [] and got["inbox"]["unread"] == 0
    history = await call(team_a, room, "inbox", agentId="alice", unreadOnly=False)
    assert [m["state"] for m in history["messages"]] == ["expired"]
    with pytest.raises(errors.MessageRefusedError, match="expired unacked"):
        await call(team_a, room, "ack_message", agentId="alice", messageId=sent["messageId"])


async def test_only_a_recipient_acks(team_a: Caller, room: RoomRef) -> None:
    await here(team_a, room, "alice", "bob", "carol")
    sent = await send(team_a, room, "bob", "alice")
    with pytest.raises(errors.MessageRefusedError) as refused:
        await call(team_a, room, "ack_message", agentId="carol", messageId=sent["messageId"])
    assert "only its recipients" in refused.value.message and "alice" in refused.value.message
    assert states(await call(team_a, room, "sent_messages", agentId="bob")) == {"alice": "stored"}
    with pytest.raises(errors.MessageNotFoundError) as unknown:
        await call(team_a, room, "ack_message", agentId="alice", messageId=sent["messageId"] + "x")
    assert sent["messageId"] in unknown.value.message  # the closest is named


async def test_reply_to_names_a_kept_message(team_a: Caller, room: RoomRef) -> None:
    await here(team_a, room, "alice", "bob")
    first = await send(team_a, room, "bob", "alice")
    reply = await send(team_a, room, "alice", "bob", replyTo=first["messageId"])
    got = await call(team_a, room, "inbox", agentId="bob")
    assert got["messages"][0]["replyTo"] == first["messageId"]
    assert got["messages"][0]["messageId"] == reply["messageId"]
    with pytest.raises(errors.MessageNotFoundError):
        await send(team_a, room, "alice", "bob", replyTo="m_nope")


async def test_addressed_only_and_webhooks_agree_with_the_deliveries(
    team_a: Caller, room: RoomRef
) -> None:
    await here(team_a, room, "alice", tags=["db"])
    await here(team_a, room, "carol", "bob")
    sent = await send(team_a, room, "bob", "tag:db")

    for agent, expected in (("alice", True), ("carol", False), ("bob", False)):
        got = await call(team_a, room, "get_unread_events", agentId=agent, addressedOnly=True)
        ids = [e["payload"]["messageId"] for e in got["events"] if e["type"] == "message"]
        assert (ids == [sent["messageId"]]) is expected, agent
        everything = await call(team_a, room, "get_unread_events", agentId=agent + "-all")
        [event] = [e for e in everything["events"] if e["type"] == "message"]
        assert event["recipients"] == ["alice"] and event["to"] == "tag:db"
        assert event_addressed_to(event, agent) is expected
        assert _matches(Webhook(agent_filter=agent, event_types=[]), event) is expected


async def test_a_message_wakes_its_recipients_waiter(team_a: Caller, room: RoomRef) -> None:
    await here(team_a, room, "alice", "bob")
    await call(team_a, room, "get_unread_events", agentId="alice")
    waiting = asyncio.ensure_future(
        events_services.event_wait(
            room, agent_id="alice", timeout_ms=30_000, limit=10, addressed_only=True
        )
    )
    await registered()
    sent = await send(team_a, room, "bob", "alice")
    got = await asyncio.wait_for(waiting, 30)
    assert [e["payload"]["messageId"] for e in got["events"]] == [sent["messageId"]]


async def test_the_oldest_messages_go_first_with_their_deliveries(
    team_a: Caller, room: RoomRef, settings: Any
) -> None:
    settings.ROOM_MESSAGES_MAX = 3
    await here(team_a, room, "alice", "bob", "carol")
    sent = [await send(team_a, room, "bob", "*", body=f"n{i}") for i in range(5)]

    got = await call(team_a, room, "inbox", agentId="alice", limit=100)

    assert [m["body"] for m in got["messages"]] == ["n2", "n3", "n4"]
    mine = await call(team_a, room, "sent_messages", agentId="bob", limit=100)
    assert [m["messageId"] for m in mine["messages"]] == [s["messageId"] for s in sent[:1:-1]]
    r = connections_store.client()
    assert await r.hlen(room.keys.deliveries) == 6 and await r.zcard(room.keys.inbox) == 6
    assert int(await r.hget(room.keys.meta, "deliveries")) == 6
    assert await r.zcard(room.keys.outbox) == 3
    settings.ROOM_DELIVERIES_MAX = 4  # two messages of two deliveries fit
    await send(team_a, room, "bob", "*", body="n5")
    assert await r.hlen(room.keys.deliveries) == 4


async def test_many_senders_at_once_lose_nothing_and_deliver_each_once(
    team_a: Caller, room: RoomRef
) -> None:
    agents = [f"a{i}" for i in range(12)]
    await here(team_a, room, *agents)

    sent = await asyncio.gather(*(send(team_a, room, a, "*", body=a) for a in agents))

    assert all(s["count"] == len(agents) - 1 for s in sent)
    reads = await asyncio.gather(
        *(call(team_a, room, "inbox", agentId=a, limit=100) for a in agents)
    )
    for agent, got in zip(agents, reads, strict=True):
        assert sorted(m["body"] for m in got["messages"]) == sorted(set(agents) - {agent})
    again = await asyncio.gather(*(call(team_a, room, "inbox", agentId=a) for a in agents))
    assert all(g["messages"] == [] for g in again)


async def test_concurrent_inbox_reads_by_one_agent_return_each_message_once(
    team_a: Caller, room: RoomRef
) -> None:
    await here(team_a, room, "alice", "bob")
    for i in range(30):
        await send(team_a, room, "bob", "alice", body=f"n{i}")
    reads = await asyncio.gather(
        *(call(team_a, room, "inbox", agentId="alice", limit=5) for _ in range(10))
    )
    bodies = [m["body"] for got in reads for m in got["messages"]]
    assert sorted(bodies) == sorted(f"n{i}" for i in range(30))  # none twice, none lost


async def test_a_read_only_key_looks_at_an_inbox_without_reading_it_for_the_agent(
    team_a: Caller, room: RoomRef
) -> None:
    """The attack: a viewer key opens alice's inbox so bob is told she read it."""
    await here(team_a, room, "alice", "bob")
    sent = await send(team_a, room, "bob", "alice")
    viewer = callers.reader_of(team_a)
    seen = await call(viewer, room, "inbox", agentId="alice")
    assert [m["messageId"] for m in seen["messages"]] == [sent["messageId"]]
    assert seen["messages"][0]["state"] == "stored"
    assert states(await call(team_a, room, "sent_messages", agentId="bob")) == {"alice": "stored"}
    with pytest.raises(errors.ReadOnlyCallerError):
        await send(viewer, room, "bob", "alice")
    # The legitimate path: alice's own read marks it.
    await call(team_a, room, "inbox", agentId="alice")
    assert states(await call(team_a, room, "sent_messages", agentId="bob")) == {"alice": "read"}


async def test_message_events_cannot_be_forged(team_a: Caller, room: RoomRef) -> None:
    for kind in ("message", "message_acked"):
        with pytest.raises(errors.ToolArgumentsError, match="reserved"):
            await call(team_a, room, "post_event", type=kind, **{"from": "bob"}, payload={})


async def test_a_keyed_retry_sends_once(team_a: Caller, room: RoomRef) -> None:
    await here(team_a, room, "alice", "bob")
    first = await send(team_a, room, "bob", "alice", idempotencyKey="k1")
    again = await send(team_a, room, "bob", "alice", idempotencyKey="k1")
    assert again == first
    got = await call(team_a, room, "inbox", agentId="alice")
    assert len(got["messages"]) == 1


async def test_the_cold_start_summary_counts_unread_messages_without_reading_them(
    team_a: Caller, room: RoomRef
) -> None:
    await here(team_a, room, "alice", "bob")
    await send(team_a, room, "bob", "alice")
    await send(team_a, room, "bob", "*")
    summary = await call(team_a, room, "get_my_summary", agentId="alice")
    assert summary["unreadMessages"] == 2
    assert len((await call(team_a, room, "inbox", agentId="alice"))["messages"]) == 2
    assert (await call(team_a, room, "get_my_summary", agentId="alice"))["unreadMessages"] == 0


async def test_delivery_counts_stay_bounded_however_many_names_are_invented(
    team_a: Caller, room: RoomRef, settings: Any
) -> None:
    """The attack: lease under ever new names and message file: holders, so the room's
    per-agent delivery counts grow without end. They stay at ROOM_MESSAGE_AGENTS_MAX."""
    settings.ROOM_MESSAGE_AGENTS_MAX = 5
    for i in range(12):
        await call(team_a, room, "lease_claim", agentId=f"name{i}", path=f"f{i}.py", ttlSeconds=10)
        sent = await send(team_a, room, "bob", f"file:f{i}.py")
        assert sent["recipients"] == [f"name{i}"]
    assert await connections_store.client().hlen(room.keys.message_stats) == 5
    got = await call(team_a, room, "inbox", agentId="name11")
    assert got["messages"][0]["body"] == "hello from bob"
