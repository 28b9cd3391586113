"""Every act is presence (issue 24, point 1): any call naming its acting agent marks it
present and renews its leased claims and file leases, in the write's own step (or, for a
read, a step sent beside the read's); presence has tiers, working, idle and gone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
import redis
from django.test import override_settings

from rooms import clock, registry, scripts
from rooms.keys import RoomKeys
from rooms.refs import RoomRef
from tenants.capabilities import Caller
from tests import callers
from tests.conftest import new_room_id, redis_for_assertions
from tests.redis_monitor import commands_seen, primaries
from tests.rooms.test_idempotency import SETUPS, call

pytestmark = pytest.mark.anyio


@pytest.fixture
def raw() -> Iterator[redis.Redis]:
    r = redis_for_assertions(decode_responses=True)
    yield r
    r.close()


async def presence(caller: Caller, room: RoomRef) -> dict[str, dict[str, Any]]:
    return {p["agentId"]: p for p in await call(caller, room.room_id, "get_presence")}


async def test_an_agent_whose_first_act_is_a_claim_is_known_to_messages_and_handoffs(
    team_a: Caller, room: RoomRef
) -> None:
    """The new user's report: the backend agent claimed, finished, leased and wrote the
    contract without a heartbeat, and nobody could reach it."""
    task = await call(team_a, room.room_id, "add_task", title="API")
    await call(team_a, room.room_id, "claim_task", taskId=task["id"], agentId="backend")

    seen = await presence(team_a, room)
    assert seen["backend"]["state"] == "working" and seen["backend"]["status"] == "online"
    sent = await call(
        team_a, room.room_id, "send_message", to="backend", body="hi", **{"from": "fe"}
    )
    assert sent["recipients"] == ["backend"]
    other = await call(team_a, room.room_id, "add_task", title="UI")
    await call(team_a, room.room_id, "claim_task", taskId=other["id"], agentId="fe")
    offered = await call(
        team_a,
        room.room_id,
        "handoff_task",
        taskId=other["id"],
        to="backend",
        note="yours",
        **{"from": "fe"},
    )
    assert offered["to"] == "backend"


async def test_an_act_renews_the_actors_claim_and_file_leases_in_the_same_step(
    team_a: Caller, room: RoomRef, frozen_clock: list[datetime]
) -> None:
    task = await call(team_a, room.room_id, "add_task", title="API")
    await call(
        team_a, room.room_id, "claim_task", taskId=task["id"], agentId="backend", leaseSeconds=60
    )
    await call(
        team_a, room.room_id, "lease_claim", agentId="backend", path="src/api/**", ttlSeconds=60
    )
    await call(team_a, room.room_id, "lease_claim", agentId="other", path="docs/**", ttlSeconds=60)
    frozen_clock[0] += timedelta(seconds=50)

    # Another agent's act renews nothing of backend's.
    await call(team_a, room.room_id, "post_event", type="note", payload={}, **{"from": "third"})
    got = await call(team_a, room.room_id, "get_task", taskId=task["id"])
    assert got["lease_expires_at"] == clock.iso_from_ms(clock.now_ms() + 10_000)

    await call(team_a, room.room_id, "post_event", type="note", payload={}, **{"from": "backend"})

    until = clock.iso_from_ms(clock.now_ms() + 60_000)
    assert (await call(team_a, room.room_id, "get_task", taskId=task["id"]))[
        "lease_expires_at"
    ] == until
    leases = {
        lease["holder"]: lease
        for lease in (await call(team_a, room.room_id, "lease_list"))["leases"]
    }
    assert leases["backend"]["expiresAt"] == until
    assert leases["other"]["expiresAt"] == clock.iso_from_ms(clock.now_ms() + 10_000)
    frozen_clock[0] += timedelta(seconds=55)  # past other's lease, within backend's
    await call(team_a, room.room_id, "lease_check", path="README.md")
    held = [lease["holder"] for lease in (await call(team_a, room.room_id, "lease_list"))["leases"]]
    assert held == ["backend"]
    assert (await call(team_a, room.room_id, "get_task", taskId=task["id"]))["owner"] == "backend"


async def test_a_read_naming_its_agent_renews_too_and_a_recent_term_is_not_rewritten(
    team_a: Caller, room: RoomRef, frozen_clock: list[datetime], raw: redis.Redis
) -> None:
    task = await call(team_a, room.room_id, "add_task", title="API")
    await call(
        team_a, room.room_id, "claim_task", taskId=task["id"], agentId="ro", leaseSeconds=100
    )
    text = raw.hget(room.keys.tasks, task["id"])

    frozen_clock[0] += timedelta(seconds=5)  # under a tenth of the term: nothing rewritten
    await call(team_a, room.room_id, "post_event", type="note", payload={}, **{"from": "ro"})
    assert raw.hget(room.keys.tasks, task["id"]) == text

    frozen_clock[0] += timedelta(seconds=30)
    await call(team_a, room.room_id, "get_my_tasks", agentId="ro")
    got = await call(team_a, room.room_id, "get_task", taskId=task["id"])
    assert got["lease_expires_at"] == clock.iso_from_ms(clock.now_ms() + 100_000)
    assert (await presence(team_a, room))["ro"]["lastSeen"] == clock.iso_from_ms(clock.now_ms())


async def test_every_tool_naming_its_acting_agent_marks_it_present(
    team_a: Caller, room: RoomRef, raw: redis.Redis
) -> None:
    """Each write, from the idempotency suite's setups: the actor is taken out of presence
    after the setup, and the one call brings it back."""
    tried = []
    for name in sorted(SETUPS):
        tool = registry.tool_get(name)
        room_id = new_room_id("acts")  # each its own: set_room_status completes its room
        args = await SETUPS[name](team_a, room_id)
        actor = tool.acting(registry.arguments_parse(tool, {"roomId": room_id, **args}))
        if actor is None:
            continue
        raw.zrem(RoomKeys(room_id).presence, actor)
        await call(team_a, room_id, name, **args)
        assert raw.zscore(RoomKeys(room_id).presence, actor) is not None, name
        tried.append(name)
    assert len(tried) >= 30, tried  # those whose setup names the actor (add_task may not)
    # The one call naming an agent that is not presence: leaving.
    await call(team_a, room.room_id, "heartbeat", agentId="goer")
    await call(team_a, room.room_id, "leave_room", agentId="goer")
    assert raw.zscore(room.keys.presence, "goer") is None
    # Reads naming an agent, each a new one (a read marks a given agent once a second).
    for n, (name, more) in enumerate(
        [
            ("get_my_tasks", {}),
            ("get_my_summary", {}),
            ("get_unread_events", {}),
            ("wait_for_events", {"timeoutMs": 0}),
            ("inbox", {}),
            ("sent_messages", {}),
            ("room_read", {}),
            ("get_unblocked_tasks", {}),
            ("list_context", {}),
        ]
    ):
        agent = f"reader{n}"
        await call(team_a, room.room_id, name, agentId=agent, **more)
        assert raw.zscore(room.keys.presence, agent) is not None, name


@override_settings(PRESENCE_WORKING_SECONDS=120, PRESENCE_IDLE_SECONDS=1800)
async def test_presence_has_tiers_working_idle_gone_and_a_session_end_rests_an_agent(
    team_a: Caller, room: RoomRef, frozen_clock: list[datetime]
) -> None:
    await call(team_a, room.room_id, "heartbeat", agentId="a")
    assert (await presence(team_a, room))["a"]["state"] == "working"
    frozen_clock[0] += timedelta(seconds=121)
    assert (await presence(team_a, room))["a"]["state"] == "idle"
    frozen_clock[0] += timedelta(seconds=1800)
    assert (await presence(team_a, room))["a"]["state"] == "gone"

    await call(team_a, room.room_id, "post_event", type="note", payload={}, **{"from": "a"})
    assert (await presence(team_a, room))["a"]["state"] == "working"
    rested = await call(team_a, room.room_id, "heartbeat", agentId="a", idle=True)
    assert {p["agentId"]: p["state"] for p in rested["presence"]}["a"] == "idle"
    assert (await presence(team_a, room))["a"]["state"] == "idle"
    await call(team_a, room.room_id, "post_event", type="note", payload={}, **{"from": "a"})
    assert (await presence(team_a, room))["a"]["state"] == "working"


async def test_what_one_act_renews_is_bounded_whatever_the_agent_holds(
    team_a: Caller, room: RoomRef, frozen_clock: list[datetime], raw: redis.Redis
) -> None:
    """The worst case a tenant can build: an agent holding more leases than the bound. Its
    act renews its HOLDS_MAX newest and leaves the rest to lapse (or to lease_renew)."""
    count = scripts.HOLDS_MAX + 6
    for n in range(count):
        await call(
            team_a, room.room_id, "lease_claim", agentId="hog", path=f"f{n}.py", ttlSeconds=60
        )
    assert len(json.loads(raw.hget(room.keys.holds, "hog"))) == scripts.HOLDS_MAX
    frozen_clock[0] += timedelta(seconds=50)
    await call(team_a, room.room_id, "post_event", type="note", payload={}, **{"from": "hog"})
    frozen_clock[0] += timedelta(seconds=15)
    live = (await call(team_a, room.room_id, "lease_list", agentId="hog"))["leases"]
    assert sorted(lease["path"] for lease in live) == sorted(
        f"f{n}.py" for n in range(count - scripts.HOLDS_MAX, count)
    )


async def test_a_read_only_key_naming_an_agent_neither_marks_it_present_nor_renews_its_claim(
    team_a: Caller, room: RoomRef, frozen_clock: list[datetime], raw: redis.Redis
) -> None:
    """The attack: a read-only key polls a read naming an agent that went away, to keep its
    claim from lapsing. It reads; it writes nothing, presence included. The team's own key
    beside it still makes the same read an act."""
    task = await call(team_a, room.room_id, "add_task", title="API")
    await call(
        team_a, room.room_id, "claim_task", taskId=task["id"], agentId="gone", leaseSeconds=60
    )
    raw.zrem(room.keys.presence, "gone")
    frozen_clock[0] += timedelta(seconds=30)

    reader = callers.reader_of(team_a)
    await call(reader, room.room_id, "get_my_tasks", agentId="gone")
    await call(reader, room.room_id, "get_unread_events", agentId="gone")

    assert raw.zscore(room.keys.presence, "gone") is None
    got = await call(team_a, room.room_id, "get_task", taskId=task["id"])
    assert got["lease_expires_at"] == clock.iso_from_ms(clock.now_ms() + 30_000)
    await call(team_a, room.room_id, "get_my_tasks", agentId="gone")
    assert raw.zscore(room.keys.presence, "gone") is not None


@override_settings(ROOM_AGENTS_MAX=3)
async def test_the_holds_lists_never_outnumber_the_rooms_agents(
    team_a: Caller, room: RoomRef, raw: redis.Redis
) -> None:
    """The growth a tenant could try: leases taken and given back under ever new agent names.
    An agent forgotten by presence (past ROOM_AGENTS_MAX) or leaving takes its holds list
    and its rest mark with it."""
    for n in range(12):
        agent = f"cycler{n}"
        await call(team_a, room.room_id, "lease_claim", agentId=agent, path=f"f{n}.py")
        await call(team_a, room.room_id, "heartbeat", agentId=agent, idle=True)
        await call(team_a, room.room_id, "lease_release", agentId=agent, path=f"f{n}.py")
        assert raw.hlen(room.keys.holds) <= 3 and raw.hlen(room.keys.presence_rest) <= 3
    await call(team_a, room.room_id, "lease_claim", agentId="leaver", path="l.py")
    assert raw.hexists(room.keys.holds, "leaver")
    await call(team_a, room.room_id, "leave_room", agentId="leaver")
    assert not raw.hexists(room.keys.holds, "leaver")


@override_settings(ROOM_AGENTS_MAX=3)
async def test_only_a_newcomer_is_counted_against_the_rooms_most_agents(
    team_a: Caller, room: RoomRef, raw: redis.Redis
) -> None:
    """Every act is presence, so its step is paid on every call: an agent already present
    cannot take the room past its most agents and is not counted again; a newcomer is, and
    the one silent longest is still forgotten."""
    for agent in ("a", "b", "c"):
        await call(team_a, room.room_id, "heartbeat", agentId=agent)
    counted = f"ZCARD {room.keys.presence}"
    async with commands_seen(primaries()) as watched:
        await call(team_a, room.room_id, "post_event", type="n", payload={}, **{"from": "a"})
        await watched.settle()
        known = list(watched.seen)
        await call(team_a, room.room_id, "post_event", type="n", payload={}, **{"from": "d"})
        await watched.settle()
        newcomer = watched.seen[len(known) :]
    assert any(f"ZADD {room.keys.presence}" in c and " a" in c for c in known), known
    assert not any(counted in c for c in known), known
    assert any(counted in c for c in newcomer), newcomer
    assert set(raw.zrange(room.keys.presence, 0, -1)) == {"a", "c", "d"}
