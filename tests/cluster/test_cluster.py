"""The store on a real Redis Cluster: rooms in one slot each, spread over the nodes; a call
touches only its slots' nodes (no fan-out); wake-ups are sharded, on one connection per
node however many rooms are waited on, and follow a room whose slot moves."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Hashable

import pytest
import redis
from redis.crc import key_slot

from calls.runner import tool_run
from rooms import turns
from rooms.keys import RoomKeys
from rooms.store import bearers as bearers_store
from rooms.store import events as events_store
from rooms.store import wakeups as wakeups_store
from tenants.capabilities import Caller
from tests.conftest import new_room_id
from tests.redis_cluster import LocalCluster
from tests.redis_monitor import commands_seen

# A post by "a" to everyone: the rooms here keep the open rule, so it is always its turn.
OPEN = turns.turn_of_post("a", "all")

pytestmark = pytest.mark.anyio


def slot_of(key: str) -> int:
    return int(key_slot(key.encode()))


async def room_used(caller: Caller, room_id: str) -> None:
    """Every kind of room state written once: tasks, context, events, cursors, presence,
    locks, variables."""
    task = await tool_run(caller, "add_task", {"roomId": room_id, "title": "t", "agentId": "alice"})
    await tool_run(
        caller,
        "update_task",
        {"roomId": room_id, "taskId": task["id"], "status": "in_progress", "agentId": "alice"},
    )
    await tool_run(
        caller,
        "write_context",
        {
            "roomId": room_id,
            "type": "note",
            "summary": "s",
            "payload": {"text": "a"},
            "author": "alice",
        },
    )
    await tool_run(
        caller, "post_event", {"roomId": room_id, "type": "note", "from": "alice", "payload": {}}
    )
    await tool_run(caller, "get_unread_events", {"roomId": room_id, "agentId": "bob"})
    await tool_run(caller, "heartbeat", {"roomId": room_id, "agentId": "alice"})
    await tool_run(
        caller, "acquire_lock", {"roomId": room_id, "resource": "db", "agentId": "alice"}
    )
    await tool_run(
        caller, "set_shared_var", {"roomId": room_id, "key": "k", "value": "v", "agentId": "alice"}
    )
    await tool_run(caller, "read_plan", {"roomId": room_id})
    await tool_run(caller, "list_context", {"roomId": room_id})
    await tool_run(caller, "list_locks", {"roomId": room_id})


async def test_each_room_lives_in_one_slot_and_rooms_spread_over_the_masters(
    team_a: Caller, cluster: LocalCluster
) -> None:
    rooms = [new_room_id("spread") for _ in range(24)]
    for room_id in rooms:
        await room_used(team_a, room_id)
    masters = set()
    r = redis.RedisCluster(host="127.0.0.1", port=cluster.alive_ports()[0])
    try:
        for room_id in rooms:
            keys = RoomKeys(room_id)
            present = [k for k in [*keys.durable(), keys.lock("db")] if r.exists(k)]
            assert len(present) >= 15, present  # the room really wrote its state
            assert {slot_of(k) for k in present} == {slot_of(keys.events)}
            masters.add(cluster.master_of(keys.events))
    finally:
        r.close()
    assert len(masters) >= 2  # 24 random rooms on one master of three: (1/3)^23


@contextlib.asynccontextmanager
async def commands_on(ports: list[int]) -> AsyncIterator[dict[int, list[str]]]:
    """MONITOR on each of `ports`: every command each node receives meanwhile."""
    urls: dict[Hashable, str] = {p: f"redis://127.0.0.1:{p}/0" for p in ports}
    async with commands_seen(urls) as watched:
        try:
            yield watched.by_node  # type: ignore[misc]  # keyed by the ports given
        finally:
            await watched.settle()  # the last commands reach the monitors


async def test_a_tool_call_reaches_only_the_nodes_of_its_slots(
    team_a: Caller, cluster: LocalCluster
) -> None:
    room_id = new_room_id("slots")
    wait = {"roomId": room_id, "agentId": "bob", "timeoutMs": 100}
    await room_used(team_a, room_id)  # scripts loaded (on every master, once), room claimed
    await tool_run(team_a, "wait_for_events", wait)
    keys = RoomKeys(room_id)
    room_master = cluster.master_of(keys.events)
    masters = cluster.masters_now()
    async with commands_on(masters) as seen:
        await room_used(team_a, room_id)
        await tool_run(team_a, "wait_for_events", wait)
    on_room_master = [c for c in seen[room_master] if keys.room_id in c]
    assert len(on_room_master) >= 12
    # A write wakes its room with SPUBLISH, in the room's slot: never a cluster-wide PUBLISH.
    assert any(c.upper().startswith("SPUBLISH ") for c in on_room_master)
    for port in masters:
        for command in seen[port]:
            verb = command.split(" ")[0].upper()
            assert verb != "PUBLISH", (port, command)
            if port != room_master:
                assert keys.room_id not in command, (port, command)
    # Nothing reached every master (no broadcast on the hot path).
    common = set.intersection(*(set(v) for v in seen.values()))
    assert not {c for c in common if not c.upper().startswith("PING")}, common


async def test_waiting_on_hundreds_of_rooms_takes_one_connection_per_node(
    cluster: LocalCluster, redis_client_closed: None
) -> None:
    rooms = [new_room_id("many") for _ in range(300)]
    hub = wakeups_store.wake_hub()
    assert isinstance(hub, wakeups_store.ShardedWakeHub)
    woken = {room_id: await hub.watch(room_id) for room_id in rooms}
    assert hub.subscribed() == len(rooms)
    assert hub.shards() <= len(cluster.masters_now())
    try:
        for room_id in rooms:  # a write step lands only in a room that has an owner
            await bearers_store.room_owner_cache(RoomKeys(room_id), "1")
        # One room's write wakes that room's waiter only.
        first = RoomKeys(rooms[0])
        await events_store.event_append(
            first,
            type_="x",
            from_="a",
            to="all",
            payload_json="{}",
            reply_to=None,
            turn=OPEN,
            keyed=None,
            actor=None,
        )
        async with asyncio.timeout(5):
            await woken[rooms[0]].wait()
        await asyncio.sleep(0.1)  # time for a wrong wake-up to show: what must not happen
        assert [r for r, e in woken.items() if e.is_set()] == [rooms[0]]
        # A write to each room wakes each one.
        for room_id in rooms[1:]:
            await events_store.event_append(
                RoomKeys(room_id),
                type_="x",
                from_="a",
                to="all",
                payload_json="{}",
                reply_to=None,
                turn=OPEN,
                keyed=None,
                actor=None,
            )
        async with asyncio.timeout(10):
            for event in woken.values():
                await event.wait()
    finally:
        for room_id, event in woken.items():
            hub.unwatch(room_id, event)


async def test_a_waiter_follows_its_room_when_the_slot_moves(
    cluster: LocalCluster, redis_client_closed: None
) -> None:
    room_id = new_room_id("moved")
    keys = RoomKeys(room_id)
    await bearers_store.room_owner_cache(
        keys, "1"
    )  # a write step lands only in a room with an owner
    await events_store.event_append(
        keys,
        type_="x",
        from_="a",
        to="all",
        payload_json="{}",
        reply_to=None,
        turn=OPEN,
        keyed=None,
        actor=None,
    )
    hub = wakeups_store.wake_hub()
    woken = await hub.watch(room_id)
    source = cluster.master_of(keys.events)
    target = next(p for p in cluster.masters_now() if p != source)
    await asyncio.to_thread(cluster.slot_move, slot_of(keys.events), target)
    try:
        # The old node drops the subscription with the slot: the waiter is told to re-read,
        # and to watch again (its watch has no subscription behind it any more).
        async with asyncio.timeout(5):
            await woken.wait()
        assert woken.rewatch
    finally:
        hub.unwatch(room_id, woken)
    assert cluster.master_of(keys.events) == target
    woken = await hub.watch(room_id)  # subscribes where the slot lives now
    try:
        assert not woken.is_set()
        event_id = await events_store.event_append(
            keys,
            type_="x",
            from_="a",
            to="all",
            payload_json="{}",
            reply_to=None,
            turn=OPEN,
            keyed=None,
            actor=None,
        )
        async with asyncio.timeout(5):
            await woken.wait()
        assert not woken.rewatch  # a write's wake: the same watch serves the next read
    finally:
        hub.unwatch(room_id, woken)
    assert await events_store.event_count(keys) == 2  # the room's log moved with its slot
    assert (await events_store.event_get(keys, str(event_id))) is not None


async def test_a_wait_that_spans_a_slot_move_is_woken_by_the_next_write(
    team_a: Caller, cluster: LocalCluster, redis_client_closed: None
) -> None:
    """A waiting call keeps one watch for its whole wait: when its room's slot moves, the
    hub's lapsed wake makes it watch again where the slot lives now, so a write after the
    move still reaches it (it would otherwise sleep to its timeout)."""
    room_id = new_room_id("spans")
    keys = RoomKeys(room_id)
    await tool_run(team_a, "post_event", {"roomId": room_id, "type": "x", "from": "w"})
    await tool_run(team_a, "get_unread_events", {"roomId": room_id, "agentId": "a"})
    hub = wakeups_store.wake_hub()
    assert isinstance(hub, wakeups_store.ShardedWakeHub)
    wait = asyncio.ensure_future(
        tool_run(
            team_a, "wait_for_events", {"roomId": room_id, "agentId": "a", "timeoutMs": 20_000}
        )
    )
    async with asyncio.timeout(10):
        while hub.waiting() < 1:
            await asyncio.sleep(0.01)
    source = cluster.master_of(keys.events)
    target = next(p for p in cluster.masters_now() if p != source)
    await asyncio.to_thread(cluster.slot_move, slot_of(keys.events), target)
    async with asyncio.timeout(10):  # watching again, subscribed where the slot is now
        while not (hub.waiting() == 1 and hub.subscribed() >= 1):
            await asyncio.sleep(0.01)
    assert not wait.done()
    written = await tool_run(
        team_a, "post_event", {"roomId": room_id, "type": "after", "from": "w"}
    )
    async with asyncio.timeout(10):
        got = await wait
    assert [e["id"] for e in got["events"]] == [written["id"]]
