"""Turn discipline (rooms.turns): sequential rooms post in turn, moderated rooms post when
the moderator gave the turn, a refusal says whose turn it is, and two posts at once never
take one turn."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from calls.runner import tool_run
from rooms import errors
from rooms.refs import RoomRef
from tenants import errors as tenant_errors
from tenants.capabilities import Caller
from tests import callers

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def say(caller: Caller, room: RoomRef, agent: str, text: str) -> Any:
    return await call(caller, room, "room_broadcast", agentId=agent, text=text)


async def test_a_sequential_room_posts_in_turn_and_says_whose_turn_it_is(
    team_a: Caller, room: RoomRef
) -> None:
    for agent in ("carol", "alice", "bob"):
        await call(team_a, room, "heartbeat", agentId=agent)
    mode = await call(team_a, room, "set_room_mode", agentId="lead", turns="sequential")
    assert mode["turns"] == "sequential" and mode["turn"] is None
    # Setting the mode was lead's act, which made it present (issue 24); it steps out.
    await call(team_a, room, "leave_room", agentId="lead")

    await say(team_a, room, "alice", "first")  # by name: alice, bob, carol
    with pytest.raises(errors.TurnRefusedError) as refused:
        await say(team_a, room, "carol", "out of turn")
    assert 'It is "bob"\'s turn' in refused.value.message
    assert "alice → bob → carol" in refused.value.message
    assert refused.value.extra == {
        "turns": "sequential",
        "turn": "bob",
        "turnOrder": ["alice", "bob", "carol"],
    }
    await call(team_a, room, "send_message", **{"from": "bob"}, to="carol", body="your go")
    await call(team_a, room, "post_event", type="note", **{"from": "carol"}, to="all", payload={})
    await say(team_a, room, "alice", "round two")

    # Work goes on out of turn: only posts take turns.
    await call(team_a, room, "add_task", title="not a post")
    # Someone not present is told how to join the order.
    with pytest.raises(errors.TurnRefusedError, match="Heartbeat to join"):
        await say(team_a, room, "dave", "hello?")
    events = await call(team_a, room, "read_events", limit=20, order="asc")
    posted = [e["from"] for e in events if e["type"] in ("broadcast", "message", "note")]
    assert posted == ["alice", "bob", "carol", "alice"]


async def test_an_explicit_turn_order_and_an_absent_holder(team_a: Caller, room: RoomRef) -> None:
    for agent in ("alice", "bob"):
        await call(team_a, room, "heartbeat", agentId=agent)
    await call(
        team_a,
        room,
        "set_room_mode",
        agentId="lead",
        turns="sequential",
        turnOrder=["bob", "alice", "zoe"],
    )
    with pytest.raises(errors.TurnRefusedError, match='"bob"'):
        await say(team_a, room, "alice", "me first")
    await say(team_a, room, "bob", "order says me")
    await say(team_a, room, "alice", "then me")  # zoe is not present: skipped
    await say(team_a, room, "bob", "and round")
    await call(team_a, room, "heartbeat", agentId="carol")
    with pytest.raises(errors.TurnRefusedError, match="add you to turnOrder"):
        await say(team_a, room, "carol", "not listed")


async def test_a_moderated_room_posts_when_the_moderator_gives_the_turn(
    team_a: Caller, room: RoomRef
) -> None:
    for agent in ("alice", "bob"):
        await call(team_a, room, "heartbeat", agentId=agent)
    mode = await call(team_a, room, "set_room_mode", agentId="lead", turns="moderator")
    assert mode["moderator"] == "lead"
    with pytest.raises(errors.TurnRefusedError) as refused:
        await say(team_a, room, "alice", "may I?")
    assert 'moderated by "lead"' in refused.value.message
    await say(team_a, room, "lead", "welcome")  # a broadcast grants nobody
    with pytest.raises(errors.TurnRefusedError):
        await say(team_a, room, "alice", "still no")
    await call(team_a, room, "send_message", **{"from": "lead"}, to="alice", body="go ahead")
    with pytest.raises(errors.TurnRefusedError, match='the turn is with "alice"'):
        await say(team_a, room, "bob", "me too")
    await say(team_a, room, "alice", "thanks")
    with pytest.raises(errors.TurnRefusedError):
        await say(team_a, room, "alice", "one more")  # the turn went back
    reopened = await call(team_a, room, "set_room_mode", agentId="lead", turns="open")
    assert reopened["turns"] == "open"
    await say(team_a, room, "bob", "free for all")


async def test_posts_at_once_take_each_turn_exactly_once(team_a: Caller, room: RoomRef) -> None:
    """Twenty agents post at once, five times each: every post that landed did so in its
    turn, so the log's posters go round the order without a repeat or a skip."""
    agents = [f"a{n:02}" for n in range(20)]
    for agent in agents:
        await call(team_a, room, "heartbeat", agentId=agent)
    await call(team_a, room, "set_room_mode", agentId="lead", turns="sequential")

    async def keep_trying(agent: str) -> int:
        landed = 0
        for _ in range(60):
            try:
                await say(team_a, room, agent, "x")
                landed += 1
                if landed == 2:
                    return landed
            except errors.TurnRefusedError:
                await asyncio.sleep(0.005)  # an agent retrying its refused post: the race itself
        return landed

    counts = await asyncio.gather(*(keep_trying(a) for a in agents))
    events = await call(team_a, room, "read_events", limit=100, order="asc")
    posters = [e["from"] for e in events if e["type"] == "broadcast"]
    assert len(posters) == sum(counts)
    assert posters == [agents[i % 20] for i in range(len(posters))]


async def test_a_guest_cannot_change_the_turns(team_a: Caller, room: RoomRef) -> None:
    """The attack: an invited agent switches a moderated room to open to talk over it."""
    await call(team_a, room, "set_room_mode", agentId="lead", turns="moderator")
    guest = callers.guest_of(team_a, room.room_id)
    with pytest.raises(tenant_errors.NotPermittedError):
        await call(guest, room, "set_room_mode", agentId="mallory", turns="open")
    with pytest.raises(errors.TurnRefusedError):
        await say(guest, room, "mallory", "let me in")


async def test_a_listed_agent_who_is_away_is_told_to_heartbeat(
    team_a: Caller, room: RoomRef
) -> None:
    await call(team_a, room, "heartbeat", agentId="bob")
    await call(
        team_a, room, "set_room_mode", agentId="lead", turns="sequential", turnOrder=["bob", "zoe"]
    )
    with pytest.raises(errors.TurnRefusedError, match="Heartbeat to join"):
        await say(team_a, room, "zoe", "I am listed")


async def test_a_post_made_without_a_door_still_takes_its_turn(
    team_a: Caller, room: RoomRef
) -> None:
    """Issue 23: the turn is an argument of the post's store step, made by the service that
    posts; a direct call of the service (no tool adapter around it) cannot skip the rule."""
    from rooms.services import events as events_services
    from rooms.services import messages as messages_services

    for agent in ("alice", "bob"):
        await call(team_a, room, "heartbeat", agentId=agent)
    await call(team_a, room, "set_room_mode", agentId="lead", turns="sequential")
    with pytest.raises(errors.TurnRefusedError):
        await events_services.event_post(room, type_="note", from_="bob", to="all", payload={})
    with pytest.raises(errors.TurnRefusedError):
        await messages_services.message_send(
            room,
            sender="bob",
            to="alice",
            body="hi",
            subject=None,
            reply_to=None,
            ttl_seconds=None,
            ack_required=False,
        )
    posted = await events_services.event_post(
        room, type_="note", from_="alice", to="all", payload={}
    )
    assert posted["from"] == "alice"
