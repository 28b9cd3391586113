"""The plan tools (docs/protocol.md "Plan"): add_task, update_task, get_task, read_plan,
get_unblocked_tasks, get_my_tasks, and the events the plan writes."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime, timedelta
from typing import Any

import pytest
import redis

from rooms import clock, errors
from rooms.refs import RoomRef
from rooms.selectors import events as events_selectors
from rooms.selectors import plan as plan_selectors
from rooms.services import locks as locks_services
from rooms.services import plan as plan_services
from tests.rooms.conftest import invoke as registry_invoke

pytestmark = pytest.mark.anyio

ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


async def add(
    room: RoomRef,
    title: str,
    *,
    depends_on: list[str] | None = None,
    priority: int | None = None,
    description: str = "",
) -> dict[str, Any]:
    return await plan_services.task_add(
        room,
        title=title,
        description=description,
        depends_on=depends_on or [],
        priority=priority,
        agent_id="planner",
    )


async def update(room: RoomRef, task_id: str, status: str, **kw: Any) -> dict[str, Any]:
    return await plan_services.task_update(
        room,
        task_id=task_id,
        status=status,
        owner_given=kw.pop("owner_given", "owner" in kw),
        owner=kw.pop("owner", None),
        note=kw.pop("note", None),
        description=kw.pop("description", None),
        agent_id=kw.pop("agent_id", None),
    )


def invoke(room: RoomRef, name: str, **arguments: Any) -> Any:
    async def access(room_id: str, write: bool) -> RoomRef:
        assert room_id == room.room_id
        return room

    return registry_invoke(name, {"roomId": room.room_id, **arguments}, access)


async def all_events(room: RoomRef) -> list[dict[str, Any]]:
    return await events_selectors.event_list(room, since=None, limit=100, order="asc")


# --- add_task ---------------------------------------------------------------------------


async def test_added_task_is_pending_unowned_with_minted_id_and_timestamps(room: RoomRef) -> None:
    task = await add(room, "Build the login API", description="POST /login")

    assert re.fullmatch(r"[A-Za-z0-9_-]{12,}", task["id"])
    assert task["title"] == "Build the login API"
    assert task["description"] == "POST /login"
    assert task["status"] == "pending"
    assert task["owner"] is None
    assert task["depends_on"] == []
    assert ISO_MS.match(task["created_at"])
    assert task["updated_at"] == task["created_at"]
    assert "warnings" not in task
    assert await plan_selectors.task_get(room, task_id=task["id"]) == task


async def test_add_task_emits_task_added_with_the_task(room: RoomRef) -> None:
    task = await add(room, "write docs")

    [event] = await all_events(room)
    assert event["type"] == "task_added"
    assert event["from"] == "planner"
    assert event["to"] == "all"
    assert event["payload"] == task


async def test_tasks_read_back_in_plan_order(room: RoomRef) -> None:
    ids = [(await add(room, f"task {i}"))["id"] for i in range(6)]

    plan = await plan_selectors.plan_get(room)

    assert plan["project"] == room.room_id
    assert [t["id"] for t in plan["tasks"]] == ids
    assert [t["title"] for t in plan["tasks"]] == [f"task {i}" for i in range(6)]


async def test_depends_on_unknown_ids_is_accepted_with_a_warning_naming_them(room: RoomRef) -> None:
    known = await add(room, "schema")

    task = await add(room, "api", depends_on=[known["id"], "t_ghost1", "t_ghost2"])

    assert task["depends_on"] == [known["id"], "t_ghost1", "t_ghost2"]
    [warning] = task["warnings"]
    assert "t_ghost1" in warning and "t_ghost2" in warning
    assert known["id"] not in warning
    stored = await plan_selectors.task_get(room, task_id=task["id"])
    assert stored["depends_on"] == [known["id"], "t_ghost1", "t_ghost2"]
    assert "warnings" not in stored


async def test_depends_on_known_ids_gives_no_warnings(room: RoomRef) -> None:
    a = await add(room, "a")
    b = await add(room, "b", depends_on=[a["id"]])

    assert "warnings" not in b


async def test_add_task_through_the_registry_reports_warnings(room: RoomRef) -> None:
    task = await invoke(room, "add_task", title="x", description="", depends_on=["nope"])

    assert task["depends_on"] == ["nope"]
    assert "nope" in task["warnings"][0]


async def test_concurrent_add_task_loses_no_task(room: RoomRef) -> None:
    titles = [f"parallel {i}" for i in range(40)]

    added = await asyncio.gather(*(add(room, t) for t in titles))

    plan = await plan_selectors.plan_get(room)
    assert len({t["id"] for t in added}) == 40
    assert sorted(t["title"] for t in plan["tasks"]) == sorted(titles)
    assert {t["id"] for t in plan["tasks"]} == {t["id"] for t in added}


async def test_two_hundred_agents_adding_at_once_all_succeed(room: RoomRef) -> None:
    # More simultaneous calls than the Redis pool has connections (REDIS_MAX_CONNECTIONS,
    # 64): a call must wait for a connection, not fail ("no 'locked, retry' failure,
    # however many agents write at once").
    results = await asyncio.gather(
        *(add(room, f"agent task {i}") for i in range(200)), return_exceptions=True
    )

    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, f"{len(failures)} of 200 calls failed, e.g. {failures[0]!r}"
    plan = await plan_selectors.plan_get(room)
    assert len(plan["tasks"]) == 200


# --- update_task ------------------------------------------------------------------------


async def test_update_task_changes_status_and_owner(room: RoomRef) -> None:
    task = await add(room, "t")

    updated = await update(room, task["id"], "in_progress", owner="backend")

    assert updated["status"] == "in_progress"
    assert updated["owner"] == "backend"
    assert updated["title"] == "t"
    assert updated["depends_on"] == []
    assert await plan_selectors.task_get(room, task_id=task["id"]) == updated


async def test_update_task_moves_updated_at_and_keeps_created_at(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    task = await add(room, "t")
    frozen_clock[0] += timedelta(seconds=90)

    updated = await update(room, task["id"], "done")

    assert updated["created_at"] == task["created_at"] == "2031-05-06T07:08:09.123Z"
    assert updated["updated_at"] == "2031-05-06T07:09:39.123Z"
    plan = await plan_selectors.plan_get(room)
    assert plan["updated_at"] == "2031-05-06T07:09:39.123Z"


async def test_note_is_recorded_in_notes_and_does_not_overwrite_description(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    task = await add(room, "t", description="the original spec")

    first = await update(room, task["id"], "in_progress", note="started", agent_id="backend")
    frozen_clock[0] += timedelta(seconds=1)
    second = await update(room, task["id"], "done", note="finished", agent_id="qa")

    assert first["description"] == second["description"] == "the original spec"
    assert second["note"] == "finished"
    assert second["notes"] == [
        {"by": "backend", "at": "2031-05-06T07:08:09.123Z", "text": "started"},
        {"by": "qa", "at": "2031-05-06T07:08:10.123Z", "text": "finished"},
    ]
    assert await plan_selectors.task_get(room, task_id=task["id"]) == second


async def test_description_argument_replaces_the_description(room: RoomRef) -> None:
    task = await add(room, "t", description="old")

    updated = await update(room, task["id"], "pending", description="new")

    assert updated["description"] == "new"
    assert "notes" not in updated


async def test_update_without_note_leaves_no_notes(room: RoomRef) -> None:
    task = await add(room, "t")

    updated = await update(room, task["id"], "blocked")

    assert "note" not in updated
    assert "notes" not in updated


async def test_owner_absent_keeps_the_owner(room: RoomRef) -> None:
    task = await add(room, "t")
    await invoke(room, "update_task", taskId=task["id"], status="in_progress", owner="backend")

    kept = await invoke(room, "update_task", taskId=task["id"], status="done")

    assert kept["owner"] == "backend"
    assert (await plan_selectors.task_get(room, task_id=task["id"]))["owner"] == "backend"


async def test_owner_empty_string_clears_the_owner(room: RoomRef) -> None:
    task = await add(room, "t")
    await invoke(room, "update_task", taskId=task["id"], status="in_progress", owner="backend")

    cleared = await invoke(room, "update_task", taskId=task["id"], status="pending", owner="")

    assert cleared["owner"] is None
    assert (await plan_selectors.task_get(room, task_id=task["id"]))["owner"] is None


async def test_owner_null_clears_the_owner(room: RoomRef) -> None:
    task = await add(room, "t")
    await invoke(room, "update_task", taskId=task["id"], status="in_progress", owner="backend")

    cleared = await invoke(room, "update_task", taskId=task["id"], status="pending", owner=None)

    assert cleared["owner"] is None
    assert (await plan_selectors.task_get(room, task_id=task["id"]))["owner"] is None


async def test_update_task_emits_what_changed_with_the_previous_status(room: RoomRef) -> None:
    task = await add(room, "t")

    updated = await update(
        room, task["id"], "in_progress", owner="backend", note="on it", agent_id="backend"
    )

    events = await all_events(room)
    assert [e["type"] for e in events] == ["task_added", "task_updated"]
    event = events[1]
    assert event["from"] == "backend"
    assert event["to"] == "all"
    # What changed, and the task in brief: never the whole task (its notes, description).
    assert event["payload"] == {
        "task": {
            "id": task["id"],
            "title": "t",
            "status": "in_progress",
            "owner": "backend",
            "version": 2,
        },
        "previousStatus": "pending",
        "changes": {"status": ["pending", "in_progress"], "owner": [None, "backend"]},
        "note": "on it",
    }
    assert updated["notes"] == [{"by": "backend", "at": updated["updated_at"], "text": "on it"}]


async def test_task_updated_event_carries_each_previous_status(room: RoomRef) -> None:
    task = await add(room, "t")
    for status in ("in_progress", "blocked", "in_progress", "done"):
        await update(room, task["id"], status)

    events = [e for e in await all_events(room) if e["type"] == "task_updated"]

    assert [(e["payload"]["previousStatus"], e["payload"]["task"]["status"]) for e in events] == [
        ("pending", "in_progress"),
        ("in_progress", "blocked"),
        ("blocked", "in_progress"),
        ("in_progress", "done"),
    ]


async def test_updated_task_keeps_empty_depends_on_as_a_list_in_redis(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    task = await add(room, "t")
    await update(room, task["id"], "done", note="n")

    raw = json.loads(sync_redis.hget(room.keys.tasks, task["id"]))  # type: ignore[arg-type]

    assert raw["depends_on"] == [] and raw["notes"][0]["text"] == "n"


async def test_text_with_quotes_slashes_and_emoji_survives_an_update(room: RoomRef) -> None:
    text = 'say "hi" / \\ back\\slash \u00e9t\u00e9 \U0001f680 \u2028 {"notes":{}}'
    task = await add(room, text, description=text, priority=1_000_000)

    updated = await update(room, task["id"], "in_progress", note=text, owner=text[:128])

    assert updated["title"] == updated["description"] == text
    assert updated["note"] == text
    assert updated["notes"][0]["text"] == text
    assert updated["owner"] == text[:128]
    assert updated["priority"] == 1_000_000
    assert await plan_selectors.task_get(room, task_id=task["id"]) == updated


async def test_concurrent_notes_on_one_task_are_all_kept(room: RoomRef, settings: Any) -> None:
    settings.TASK_NOTES_KEPT = 50
    task = await add(room, "busy")

    await asyncio.gather(
        *(
            update(room, task["id"], "in_progress", note=f"n{i}", agent_id=f"a{i}")
            for i in range(30)
        )
    )

    stored = await plan_selectors.task_get(room, task_id=task["id"])
    assert sorted(n["text"] for n in stored["notes"]) == sorted(f"n{i}" for i in range(30))
    updates = [e for e in await all_events(room) if e["type"] == "task_updated"]
    assert len(updates) == 30


async def test_update_task_holding_the_plan_lock_still_succeeds(room: RoomRef) -> None:
    task = await add(room, "t")
    grant = await locks_services.lock_acquire(
        room, resource="plan", agent_id="backend", ttl_seconds=30
    )
    assert grant["acquired"] is True

    updated = await update(room, task["id"], "in_progress", owner="backend", agent_id="backend")

    assert updated["owner"] == "backend"


# --- unknown ids ------------------------------------------------------------------------


async def test_unknown_task_id_error_names_the_closest_ids_with_titles(room: RoomRef) -> None:
    tasks = [await add(room, f"title number {i}") for i in range(5)]
    target = tasks[2]
    typo = target["id"][:-1] + ("x" if target["id"][-1] != "x" else "y")

    with pytest.raises(errors.TaskNotFoundError) as caught:
        await plan_selectors.task_get(room, task_id=typo)

    message = caught.value.message
    assert message.startswith(f'Unknown taskId "{typo}".')
    closest = caught.value.extra["closest"]
    assert len(closest) == 3
    assert closest[0] == target["id"]
    assert f'"{target["id"]}" (title number 2)' in message
    for cid in closest:
        assert cid in message


async def test_update_of_unknown_task_is_refused_with_closest_ids(room: RoomRef) -> None:
    task = await add(room, "only one")

    with pytest.raises(errors.TaskNotFoundError) as caught:
        await update(room, task["id"] + "z", "done")

    assert caught.value.extra["closest"] == [task["id"]]
    assert task["id"] in caught.value.message
    assert [e["type"] for e in await all_events(room)] == ["task_added"]


async def test_unknown_task_id_in_an_empty_room_says_there_are_no_tasks(room: RoomRef) -> None:
    with pytest.raises(errors.TaskNotFoundError) as caught:
        await plan_selectors.task_get(room, task_id="t_missing")

    assert caught.value.message == errors.TASK_NOT_FOUND.format(
        task_id="t_missing", hint=errors.TASK_HINT_EMPTY
    )


async def test_unknown_task_id_like_none_of_the_rooms_tasks_does_not_say_the_room_is_empty(
    room: RoomRef,
) -> None:
    await add(room, "Write the parser")
    with pytest.raises(errors.TaskNotFoundError) as caught:
        await plan_selectors.task_get(room, task_id="zzconformancemissing")

    assert caught.value.message == errors.TASK_NOT_FOUND.format(
        task_id="zzconformancemissing", hint=errors.TASK_HINT_NONE_CLOSE
    )
    assert caught.value.extra["examined"] == 1


# --- read_plan --------------------------------------------------------------------------


async def test_empty_room_plan_has_a_stable_created_at_across_calls(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    first = await plan_selectors.plan_get(room)
    frozen_clock[0] += timedelta(days=3)
    second = await plan_selectors.plan_get(room)

    assert first["tasks"] == []
    assert ISO_MS.match(first["created_at"])
    assert second["created_at"] == first["created_at"]
    assert second["updated_at"] == first["updated_at"]
    # The fixture's access check ran on the real clock, before the frozen one.
    assert first["created_at"] != clock.iso_from_ms(int(frozen_clock[0].timestamp() * 1000))


async def test_created_at_of_the_plan_survives_adding_tasks(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    before = await plan_selectors.plan_get(room)
    frozen_clock[0] += timedelta(hours=1)
    await add(room, "t")

    after = await plan_selectors.plan_get(room)

    assert after["created_at"] == before["created_at"]
    assert after["updated_at"] == "2031-05-06T08:08:09.123Z"


# --- get_unblocked_tasks ----------------------------------------------------------------


async def test_unblocked_tasks_are_pending_with_every_dependency_done(room: RoomRef) -> None:
    a = await add(room, "a")
    b = await add(room, "b", depends_on=[a["id"]])
    c = await add(room, "c")
    await update(room, c["id"], "in_progress")

    assert [t["id"] for t in await plan_selectors.task_list_unblocked(room, agent_id=None)] == [
        a["id"]
    ]

    await update(room, a["id"], "done")

    assert [t["id"] for t in await plan_selectors.task_list_unblocked(room, agent_id=None)] == [
        b["id"]
    ]


async def test_dependency_not_done_keeps_a_task_blocked(room: RoomRef) -> None:
    a = await add(room, "a")
    b = await add(room, "b")
    both = await add(room, "both", depends_on=[a["id"], b["id"]])
    await update(room, a["id"], "done")

    ready = [t["id"] for t in await plan_selectors.task_list_unblocked(room, agent_id=None)]

    assert ready == [b["id"]]
    assert both["id"] not in ready


async def test_missing_dependency_is_unmet(room: RoomRef) -> None:
    a = await add(room, "a")
    await update(room, a["id"], "done")
    orphan = await add(room, "orphan", depends_on=[a["id"], "t_never_added"])

    ready = await plan_selectors.task_list_unblocked(room, agent_id=None)

    assert orphan["id"] not in [t["id"] for t in ready]
    assert ready == []


async def test_unblocked_with_agent_id_leaves_out_tasks_owned_by_others(room: RoomRef) -> None:
    free = await add(room, "free")
    mine = await add(room, "mine")
    theirs = await add(room, "theirs")
    await update(room, mine["id"], "pending", owner="backend")
    await update(room, theirs["id"], "pending", owner="frontend")

    for_backend = await plan_selectors.task_list_unblocked(room, agent_id="backend")
    for_anyone = await plan_selectors.task_list_unblocked(room, agent_id=None)

    assert [t["id"] for t in for_backend] == [free["id"], mine["id"]]
    assert [t["id"] for t in for_anyone] == [free["id"], mine["id"], theirs["id"]]


async def test_unblocked_tasks_are_ordered_by_priority_then_plan_order(room: RoomRef) -> None:
    p5a = await add(room, "p5a", priority=5)
    p1 = await add(room, "p1", priority=1)
    p5b = await add(room, "p5b", priority=5)
    p0 = await add(room, "p0", priority=0)

    ready = await plan_selectors.task_list_unblocked(room, agent_id=None)

    assert [t["id"] for t in ready] == [p0["id"], p1["id"], p5a["id"], p5b["id"]]


async def test_unblocked_tasks_without_priority_follow_prioritised_ones_in_plan_order(
    room: RoomRef,
) -> None:
    none_a = await add(room, "none a")
    p3 = await add(room, "p3", priority=3)
    none_b = await add(room, "none b")

    ready = await invoke(room, "get_unblocked_tasks")

    assert [t["id"] for t in ready] == [p3["id"], none_a["id"], none_b["id"]]


async def test_priority_survives_an_update(room: RoomRef) -> None:
    low = await add(room, "low", priority=9)
    high = await add(room, "high", priority=2)
    await update(room, high["id"], "pending", note="still waiting")

    ready = await plan_selectors.task_list_unblocked(room, agent_id=None)

    assert [(t["id"], t["priority"]) for t in ready] == [(high["id"], 2), (low["id"], 9)]


# --- get_my_tasks -----------------------------------------------------------------------


async def test_my_tasks_are_those_owned_by_the_agent_in_plan_order(room: RoomRef) -> None:
    a = await add(room, "a")
    b = await add(room, "b")
    c = await add(room, "c")
    await update(room, c["id"], "in_progress", owner="backend")
    await update(room, a["id"], "done", owner="backend")
    await update(room, b["id"], "in_progress", owner="frontend")

    mine = await invoke(room, "get_my_tasks", agentId="backend")

    assert [t["id"] for t in mine] == [a["id"], c["id"]]
    assert await plan_selectors.task_list_for_agent(room, agent_id="nobody") == []


async def test_cleared_owner_drops_the_task_from_my_tasks(room: RoomRef) -> None:
    a = await add(room, "a")
    await update(room, a["id"], "in_progress", owner="backend")
    await update(room, a["id"], "pending", owner="")

    assert await plan_selectors.task_list_for_agent(room, agent_id="backend") == []
