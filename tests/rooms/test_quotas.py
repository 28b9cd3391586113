"""Quotas, as a hostile tenant meets them: every per-room structure bounded in the same
atomic step as the write, logs trimmed oldest first (never the newest), everything else
refused with a tool error naming the quota and the current use; and the store growing no
faster than what is written to it."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
import redis

from rooms import clock, errors
from rooms.refs import RoomRef
from rooms.selectors import context as context_selectors
from rooms.selectors import events as events_selectors
from rooms.selectors import plan as plan_selectors
from rooms.selectors import presence as presence_selectors
from rooms.services import context as context_services
from rooms.services import events as events_services
from rooms.services import locks as locks_services
from rooms.services import plan as plan_services
from rooms.services import presence as presence_services
from rooms.services import vars as vars_services
from rooms.store import plan as plan_store
from rooms.suggest import HINT_SAMPLE
from tests.clock import clock_at

pytestmark = pytest.mark.anyio


def room_bytes(r: redis.Redis, room: RoomRef) -> int:
    """What the room's keys take in Redis (MEMORY USAGE, samples 0 = every element)."""
    total = 0
    for key in r.scan_iter(match=f"{room.keys.events.rsplit(':', 1)[0]}:*", count=1000):
        total += int(r.memory_usage(key, samples=0) or 0)
    return total


async def add(room: RoomRef, title: str = "t", **kw: Any) -> dict[str, Any]:
    return await plan_services.task_add(  # type: ignore[return-value]
        room,
        title=title,
        description=kw.get("description", ""),
        depends_on=[],
        priority=None,
        agent_id="a",
    )


async def note(room: RoomRef, task_id: str, text: str) -> dict[str, Any]:
    return await plan_services.task_update(  # type: ignore[return-value]
        room,
        task_id=task_id,
        status="in_progress",
        owner_given=False,
        owner=None,
        note=text,
        description=None,
        agent_id="a",
    )


async def test_the_note_attack_grows_redis_no_faster_than_it_writes(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    """60 updates with 16 KB notes on one task: today's store kept every note on the task
    and copied the whole task into every event (34x, growing quadratically)."""
    task = await add(room)
    before = room_bytes(sync_redis, room)
    sent = 0
    for i in range(60):
        text = f"{i:04d}" + "x" * 16_380
        sent += len(text)
        await note(room, task["id"], text)
    grown = room_bytes(sync_redis, room) - before
    assert grown <= 2 * sent, f"{grown / sent:.2f}x"
    stored = await plan_selectors.task_get(room, task_id=task["id"])
    kept = [n["text"][:4] for n in stored.get("notes", [])]
    assert kept == [f"{i:04d}" for i in range(40, 60)]  # the newest TASK_NOTES_KEPT
    events = await events_selectors.event_list(room, since=None, limit=100, order="asc")
    last = events[-1]["payload"]
    assert set(last) == {"task", "previousStatus", "changes", "note"}  # not the whole task
    assert "notes" not in last["task"]


async def test_the_event_log_keeps_its_count_exactly_trimming_the_oldest(
    room: RoomRef, settings: Any, sync_redis: redis.Redis
) -> None:
    settings.ROOM_EVENT_CAP = 10
    posted = [
        await events_services.event_post(room, type_="ping", from_="a", to="all", payload={"n": n})
        for n in range(25)
    ]
    assert posted[-1]["payload"] == {"n": 24}
    log = await events_selectors.event_list(room, since=None, limit=100, order="asc")
    assert [e["payload"]["n"] for e in log] == list(range(15, 25))
    assert sync_redis.xlen(room.keys.events) == 10


async def test_trimmed_events_take_their_read_receipts_with_them(
    room: RoomRef, settings: Any, sync_redis: redis.Redis
) -> None:
    settings.ROOM_EVENT_CAP = 5
    first = [
        await events_services.event_post(room, type_="ping", from_="a", to="all", payload={})
        for _ in range(5)
    ]
    for event in first:
        await events_services.event_mark_read(room, event_id=event["id"], agent_id="reader")
    assert sync_redis.hlen(room.keys.reads) == 5
    for _ in range(5):
        await events_services.event_post(room, type_="ping", from_="a", to="all", payload={})
    assert sync_redis.hlen(room.keys.reads) == 0


async def test_the_event_log_keeps_its_bytes_and_never_drops_the_newest(
    room: RoomRef, settings: Any, sync_redis: redis.Redis
) -> None:
    settings.ROOM_EVENT_BYTES_MAX = 20_000
    for n in range(10):
        await events_services.event_post(
            room, type_="blob", from_="a", to="all", payload={"n": n, "x": "y" * 4_000}
        )
    bytes_held = int(sync_redis.hget(room.keys.meta, "event_bytes") or 0)
    assert 0 < bytes_held <= 20_000
    log = await events_selectors.event_list(room, since=None, limit=100, order="asc")
    assert log[-1]["payload"]["n"] == 9 and len(log) == 4
    # One event bigger than the whole cap still lands; everything older goes.
    huge = await events_services.event_post(
        room, type_="blob", from_="a", to="all", payload={"x": "z" * 30_000}
    )
    log = await events_selectors.event_list(room, since=None, limit=100, order="asc")
    assert [e["id"] for e in log] == [huge["id"]]


async def test_a_task_over_the_quota_is_refused_naming_it(room: RoomRef, settings: Any) -> None:
    settings.ROOM_TASKS_MAX = 3
    for _ in range(3):
        await add(room)
    with pytest.raises(errors.QuotaExceededError) as caught:
        await add(room)
    assert caught.value.message.startswith("Quota reached: tasks in this room (3 of 3).")
    assert caught.value.extra == {"quota": "ROOM_TASKS_MAX", "used": 3, "limit": 3}
    assert caught.value.status == 429
    assert len((await plan_selectors.plan_get(room))["tasks"]) == 3  # nothing half-written


async def test_context_entries_and_versions_are_bounded(
    room: RoomRef, settings: Any, sync_redis: redis.Redis
) -> None:
    settings.ROOM_CONTEXT_MAX = 2
    settings.CONTEXT_VERSIONS_KEPT = 3
    entry = await context_services.context_write(
        room, type_="note", summary="s0", consuming_agents=[], payload={"text": "v0"}, author="a"
    )
    await context_services.context_write(
        room, type_="note", summary="other", consuming_agents=[], payload={"text": "o"}, author="a"
    )
    with pytest.raises(errors.QuotaExceededError) as caught:
        await context_services.context_write(
            room, type_="note", summary="x", consuming_agents=[], payload={"text": "x"}, author="a"
        )
    assert caught.value.extra["quota"] == "ROOM_CONTEXT_MAX"
    for n in range(1, 11):
        await context_services.context_update(
            room,
            entry_id=entry["id"],
            author="a",
            summary=f"s{n}",
            consuming_agents=None,
            payload={"text": f"v{n}"},
            expected_version=None,
        )
    history = await context_selectors.context_history(room, entry_id=entry["id"])
    assert [h["version"] for h in history] == ["1.7", "1.8", "1.9", "1.10"]
    assert [h["payload"]["text"] for h in history] == ["v7", "v8", "v9", "v10"]
    assert sync_redis.hlen(room.keys.context_versions) == 3
    assert sync_redis.zcard(room.keys.context_version_index) == 3


async def test_variables_locks_receipts_and_readers_are_refused_past_their_quotas(
    room: RoomRef, settings: Any
) -> None:
    settings.ROOM_VARS_MAX = 2
    settings.ROOM_LOCKS_MAX = 2
    settings.EVENT_READS_MAX = 2
    settings.ROOM_CURSORS_MAX = 2
    await vars_services.var_set(room, key="a", value="1", agent_id="x")
    await vars_services.var_set(room, key="b", value="1", agent_id="x")
    await vars_services.var_set(room, key="a", value="2", agent_id="x")  # an existing key: fine
    with pytest.raises(errors.QuotaExceededError) as caught:
        await vars_services.var_set(room, key="c", value="1", agent_id="x")
    assert caught.value.extra == {"quota": "ROOM_VARS_MAX", "used": 2, "limit": 2}

    for resource in ("r1", "r2"):
        await locks_services.lock_acquire(room, resource=resource, agent_id="x", ttl_seconds=30)
    await locks_services.lock_acquire(room, resource="r1", agent_id="x", ttl_seconds=30)  # renewal
    with pytest.raises(errors.QuotaExceededError) as caught:
        await locks_services.lock_acquire(room, resource="r3", agent_id="x", ttl_seconds=30)
    assert caught.value.extra["quota"] == "ROOM_LOCKS_MAX"

    event = await events_services.event_post(room, type_="t", from_="x", to="all", payload={})
    for agent in ("p", "q"):
        await events_services.event_mark_read(room, event_id=event["id"], agent_id=agent)
    await events_services.event_mark_read(room, event_id=event["id"], agent_id="p")  # again: fine
    with pytest.raises(errors.QuotaExceededError) as caught:
        await events_services.event_mark_read(room, event_id=event["id"], agent_id="r")
    assert caught.value.extra["quota"] == "EVENT_READS_MAX"

    for agent in ("p", "q"):
        await events_services.event_take_unread(
            room, agent_id=agent, limit=10, addressed_only=False
        )
    await events_services.event_take_unread(room, agent_id="p", limit=10, addressed_only=False)
    with pytest.raises(errors.QuotaExceededError) as caught:
        await events_services.event_take_unread(
            room, agent_id="newcomer", limit=10, addressed_only=False
        )
    assert caught.value.extra["quota"] == "ROOM_CURSORS_MAX"


async def test_presence_forgets_the_agent_silent_longest_past_its_quota(
    room: RoomRef, settings: Any
) -> None:
    settings.ROOM_AGENTS_MAX = 3
    with clock_at(clock.now()) as now:
        start = now[0]
        for i, agent in enumerate(["a1", "a2", "a3", "a4", "a5"]):
            now[0] = start + timedelta(seconds=i)
            await presence_services.presence_heartbeat(room, agent_id=agent)
    assert {p["agentId"] for p in await presence_selectors.presence_list(room)} == {
        "a3",
        "a4",
        "a5",
    }


async def test_concurrent_writers_never_pass_the_tasks_quota(room: RoomRef, settings: Any) -> None:
    settings.ROOM_TASKS_MAX = 10

    async def one() -> str:
        try:
            await add(room)
        except errors.QuotaExceededError:
            return "refused"
        return "ok"

    results = await asyncio.gather(*(one() for _ in range(40)))
    assert results.count("ok") == 10 and results.count("refused") == 30
    assert len((await plan_selectors.plan_get(room))["tasks"]) == 10


async def test_a_miss_in_a_room_of_10000_tasks_examines_a_bounded_sample(
    room: RoomRef, settings: Any
) -> None:
    """Today's hint ran difflib over every title (3.4 s for 1,000 long titles, on the event
    loop): now it looks at the HINT_SAMPLE newest ids and their short titles only."""
    settings.ROOM_TASKS_MAX = 20_000
    for start in range(0, 10_000, 500):
        await asyncio.gather(
            *(
                plan_store.task_add(
                    room.keys,
                    task_id=f"t_bulk{n:08d}",
                    task_json=json.dumps({"id": f"t_bulk{n:08d}", "title": "x" * 500}),
                    label="Long title " * 7,
                    now_iso="2026-01-01T00:00:00.000Z",
                    by="a",
                    keyed=None,
                    actor=None,
                )
                for n in range(start, start + 500)
            )
        )
    with pytest.raises(errors.TaskNotFoundError) as caught:
        await plan_selectors.task_get(room, task_id="t_bulk00009999x")
    assert caught.value.extra["examined"] == HINT_SAMPLE
    assert caught.value.extra["closest"][0] == "t_bulk00009999"


@pytest.mark.parametrize("kind", sorted(events_services.RESERVED_EVENT_TYPES))
async def test_the_servers_own_event_types_cannot_be_posted(room: RoomRef, kind: str) -> None:
    with pytest.raises(errors.ToolArgumentsError) as caught:
        await events_services.event_post(room, type_=kind, from_="a", to="all", payload="forged")
    assert caught.value.message.startswith(f'Event type "{kind}" is written by the server')
    assert "task_added" in caught.value.message
    assert await events_selectors.event_list(room, since=None, limit=10, order="asc") == []
