"""idempotencyKey on every tool that writes (docs/protocol.md "Claims and safe retries"): a repeat
of the same call changes nothing and answers what the first call answered, even when both
arrive at once; the same key on another call is refused; the records are bounded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
import redis

from calls.runner import tool_run
from rooms import errors, registry
from rooms.refs import RoomRef
from tenants.capabilities import Caller
from tests.conftest import new_room_id, redis_for_assertions

pytestmark = pytest.mark.anyio

WRITERS = sorted(t.name for t in registry.TOOLS if not t.read_only)
Setup = Callable[[Caller, str], Awaitable[dict[str, Any]]]


@pytest.fixture
def raw() -> Iterator[redis.Redis]:
    r = redis_for_assertions(decode_responses=False)
    yield r
    r.close()


async def call(caller: Caller, room_id: str, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room_id, **args})


async def _task(caller: Caller, room_id: str) -> str:
    return str((await call(caller, room_id, "add_task", title="a task"))["id"])


async def _event(caller: Caller, room_id: str) -> str:
    posted = await call(caller, room_id, "post_event", type="ping", payload={}, **{"from": "a"})
    return str(posted["id"])


async def _setup_update(c: Caller, room: str) -> dict[str, Any]:
    return {"taskId": await _task(c, room), "status": "blocked", "note": "n", "agentId": "a"}


async def _setup_claim(c: Caller, room: str) -> dict[str, Any]:
    return {"taskId": await _task(c, room), "agentId": "a", "leaseSeconds": 600}


async def _setup_release(c: Caller, room: str) -> dict[str, Any]:
    task = await _task(c, room)
    await call(c, room, "claim_task", taskId=task, agentId="a")
    return {"taskId": task, "agentId": "a", "note": "later"}


async def _setup_update_context(c: Caller, room: str) -> dict[str, Any]:
    entry = await call(
        c,
        room,
        "write_context",
        type="note",
        summary="s",
        consuming_agents=["b"],
        payload={"text": "hi"},
        author="a",
    )
    return {"id": entry["id"], "author": "a", "summary": "s2"}


async def _setup_reply(c: Caller, room: str) -> dict[str, Any]:
    return {"replyToId": await _event(c, room), "type": "pong", "payload": {}, "from": "b"}


async def _setup_mark(c: Caller, room: str) -> dict[str, Any]:
    return {"eventId": await _event(c, room), "agentId": "b"}


async def _setup_release_lock(c: Caller, room: str) -> dict[str, Any]:
    await call(c, room, "acquire_lock", resource="db", agentId="a")
    return {"resource": "db", "agentId": "a"}


async def _setup_leave(c: Caller, room: str) -> dict[str, Any]:
    await call(c, room, "heartbeat", agentId="a")
    return {"agentId": "a"}


async def _setup_task_id(c: Caller, room: str) -> dict[str, Any]:
    return {"taskId": await _task(c, room)}


async def _setup_priority(c: Caller, room: str) -> dict[str, Any]:
    return {"taskId": await _task(c, room), "priority": 3}


async def _setup_dependency(c: Caller, room: str) -> dict[str, Any]:
    return {"taskId": await _task(c, room), "dependsOn": await _task(c, room)}


async def _setup_delete_context(c: Caller, room: str) -> dict[str, Any]:
    return {"id": (await _setup_update_context(c, room))["id"]}


async def _setup_delete_event(c: Caller, room: str) -> dict[str, Any]:
    return {"eventId": await _event(c, room)}


async def _review(c: Caller, room: str) -> str:
    made = await call(
        c,
        room,
        "request_review",
        targetType="task",
        targetId=await _task(c, room),
        requestedBy="a",
        reviewer="b",
    )
    return str(made["id"])


async def _setup_request_review(c: Caller, room: str) -> dict[str, Any]:
    return {
        "targetType": "task",
        "targetId": await _task(c, room),
        "requestedBy": "a",
        "reviewer": "b",
        "note": "look",
    }


async def _setup_resolve(c: Caller, room: str) -> dict[str, Any]:
    return {"reviewId": await _review(c, room), "agentId": "b", "note": "fine"}


async def _lease(c: Caller, room: str) -> str:
    made = await call(c, room, "lease_claim", agentId="a", path="docs/*.md")
    return str(made["lease"]["id"])


async def _setup_lease_renew(c: Caller, room: str) -> dict[str, Any]:
    return {"agentId": "a", "leaseId": await _lease(c, room), "ttlSeconds": 900}


async def _setup_lease_release(c: Caller, room: str) -> dict[str, Any]:
    return {"agentId": "a", "leaseId": await _lease(c, room)}


async def _setup_room_release(c: Caller, room: str) -> dict[str, Any]:
    await call(c, room, "room_claim", agentId="a", path="tmp/x")
    return {"agentId": "a", "path": "tmp/x"}


async def _setup_send(c: Caller, room: str) -> dict[str, Any]:
    await call(c, room, "heartbeat", agentId="b")
    return {"from": "a", "to": "*", "body": "once", "ackRequired": True}


async def _setup_ack(c: Caller, room: str) -> dict[str, Any]:
    await call(c, room, "heartbeat", agentId="b")
    sent = await call(c, room, "send_message", **{"from": "a", "to": "b", "body": "ack me"})
    return {"agentId": "b", "messageId": sent["messageId"]}


async def _setup_submit(c: Caller, room: str) -> dict[str, Any]:
    task = await call(c, room, "add_task", title="proven")
    await call(c, room, "claim_task", taskId=task["id"], agentId="a")
    return {"taskId": task["id"], "agentId": "a", "evidence": [{"kind": "note", "text": "ok"}]}


async def _setup_verify(c: Caller, room: str) -> dict[str, Any]:
    submitted = await _setup_submit(c, room)
    await call(c, room, "submit_task", **submitted)
    return {"taskId": submitted["taskId"], "agentId": "b", "verdict": "accept"}


async def _setup_handoff(c: Caller, room: str) -> dict[str, Any]:
    await call(c, room, "heartbeat", agentId="b")
    task = await call(c, room, "add_task", title="handed")
    await call(c, room, "claim_task", taskId=task["id"], agentId="a")
    return {"taskId": task["id"], "from": "a", "to": "b", "note": "over to you"}


async def _setup_answer(c: Caller, room: str) -> dict[str, Any]:
    offered = await call(c, room, "handoff_task", **await _setup_handoff(c, room))
    return {"handoffId": offered["id"], "agentId": "b"}


def _fixed(args: dict[str, Any]) -> Setup:
    async def setup(c: Caller, room: str) -> dict[str, Any]:
        return dict(args)

    return setup


SETUPS: dict[str, Setup] = {
    "add_task": _fixed({"title": "t", "depends_on": ["t_notyet"]}),
    "update_task": _setup_update,
    "claim_task": _setup_claim,
    "release_task": _setup_release,
    "write_context": _fixed(
        {
            "type": "note",
            "summary": "s",
            "consuming_agents": ["b"],
            "payload": {"text": "hi"},
            "author": "a",
        }
    ),
    "update_context": _setup_update_context,
    "post_event": _fixed({"type": "ping", "from": "a", "to": "b", "payload": {"n": 1}}),
    "reply_to_event": _setup_reply,
    "mark_event_read": _setup_mark,
    "heartbeat": _fixed({"agentId": "a"}),
    "acquire_lock": _fixed({"resource": "db", "agentId": "a", "ttlSeconds": 60}),
    "release_lock": _setup_release_lock,
    "set_shared_var": _fixed({"key": "port", "value": "3000", "agentId": "a"}),
    "leave_room": _setup_leave,
    "delete_task": _setup_task_id,
    "set_task_priority": _setup_priority,
    "add_dependency": _setup_dependency,
    "delete_context": _setup_delete_context,
    "delete_event": _setup_delete_event,
    "request_review": _setup_request_review,
    "approve": _setup_resolve,
    "reject": _setup_resolve,
    "create_room_from_template": _fixed({"templateId": "incident"}),
    "lease_claim": _fixed({"agentId": "a", "path": "src/**", "reason": "r"}),
    "lease_renew": _setup_lease_renew,
    "lease_release": _setup_lease_release,
    "note_read": _fixed({"agentId": "a", "path": "a.py", "sha256": "c" * 64}),
    "room_claim": _fixed({"agentId": "a", "path": "lib/**"}),
    "room_release": _setup_room_release,
    "room_broadcast": _fixed({"agentId": "a", "text": "once"}),
    "send_message": _setup_send,
    "submit_task": _setup_submit,
    "verify_task": _setup_verify,
    "set_room_mode": _fixed({"agentId": "a", "evidenceRequired": True}),
    "handoff_task": _setup_handoff,
    "accept_handoff": _setup_answer,
    "decline_handoff": _setup_answer,
    "set_room_status": _fixed({"status": "completed", "agentId": "a"}),
    "ack_message": _setup_ack,
}
# Tools a second run of changes nothing more, or refuses (what was deleted is gone).
ONCE_ONLY = {
    "mark_event_read",
    "release_lock",
    "release_task",
    "claim_task",
    "leave_room",
    "delete_task",
    "add_dependency",
    "delete_context",
    "delete_event",
    "approve",
    "reject",
    "create_room_from_template",
    "lease_release",
    "room_release",
    "ack_message",
    "submit_task",
    "verify_task",
    "set_room_mode",
    "handoff_task",
    "accept_handoff",
    "decline_handoff",
    "set_room_status",
}


def snapshot(r: redis.Redis, room: RoomRef, *, presence: bool = False) -> dict[str, Any]:
    """Every key of the room but the idempotency records, as Redis serialises it; without
    `presence`, presence left out too (a repeat is an act of its agent: it marks the agent
    present, issue 24)."""
    left_out = [room.keys.idempotency, room.keys.idempotency_times]
    if not presence:
        left_out.append(room.keys.presence)
    keys = [k for k in [*room.keys.durable(), room.keys.lock("db")] if k not in left_out]
    return {k: r.dump(k) for k in keys}


def test_every_tool_that_writes_takes_an_idempotency_key_and_no_reader_does() -> None:
    for tool in registry.TOOLS:
        keyed = "idempotencyKey" in tool.input_model.model_fields
        assert keyed == (not tool.read_only), tool.name
    assert sorted(SETUPS) == WRITERS


@pytest.mark.parametrize("tool", WRITERS)
async def test_a_repeat_with_the_same_key_answers_the_first_result_and_changes_nothing(
    tool: str,
    team_a: Caller,
    room: RoomRef,
    raw: redis.Redis,
    frozen_clock: list[datetime],
) -> None:
    args = await SETUPS[tool](team_a, room.room_id)
    first = await call(team_a, room.room_id, tool, **args, idempotencyKey="retry-1")
    before = snapshot(raw, room)
    with_presence = snapshot(raw, room, presence=True)
    frozen_clock[0] += timedelta(seconds=5)  # a second run would write other times

    again = await call(team_a, room.room_id, tool, **args, idempotencyKey="retry-1")

    assert again == first
    assert snapshot(raw, room) == before
    # The same call without the key is a new call (where a second run changes anything).
    if tool not in ONCE_ONLY:
        frozen_clock[0] += timedelta(seconds=5)
        await call(team_a, room.room_id, tool, **args)
        assert snapshot(raw, room, presence=True) != with_presence


async def test_the_same_key_on_another_call_is_refused_and_changes_nothing(
    team_a: Caller, room: RoomRef, raw: redis.Redis
) -> None:
    await call(team_a, room.room_id, "add_task", title="first", idempotencyKey="k")
    before = snapshot(raw, room)

    with pytest.raises(errors.IdempotencyKeyReusedError) as caught:
        await call(team_a, room.room_id, "add_task", title="second", idempotencyKey="k")
    assert 'idempotencyKey "k"' in caught.value.message and "add_task" in caught.value.message
    with pytest.raises(errors.IdempotencyKeyReusedError) as other_tool:
        await call(
            team_a,
            room.room_id,
            "post_event",
            type="x",
            payload={},
            idempotencyKey="k",
            **{"from": "a"},
        )
    assert other_tool.value.extra == {"idempotencyKey": "k", "usedBy": "add_task"}
    assert snapshot(raw, room) == before


async def test_twenty_identical_keyed_calls_at_once_write_once_and_answer_alike(
    team_a: Caller, room: RoomRef
) -> None:
    results = await asyncio.gather(
        *(
            call(team_a, room.room_id, "add_task", title="once", idempotencyKey="burst")
            for _ in range(20)
        )
    )

    assert all(r == results[0] for r in results)
    plan = await call(team_a, room.room_id, "read_plan")
    assert [t["id"] for t in plan["tasks"]] == [results[0]["id"]]
    events = await call(team_a, room.room_id, "read_events", limit=100)
    assert [e["type"] for e in events] == ["task_added"]


async def test_a_key_is_kept_for_the_window_and_per_room(
    team_a: Caller, room: RoomRef, frozen_clock: list[datetime]
) -> None:
    first = await call(team_a, room.room_id, "add_task", title="t", idempotencyKey="day")
    frozen_clock[0] += timedelta(hours=23, minutes=59)
    assert await call(team_a, room.room_id, "add_task", title="t", idempotencyKey="day") == first

    # Another room of the team: a key of its own.
    other = new_room_id("other")
    elsewhere = await call(team_a, other, "add_task", title="t", idempotencyKey="day")
    assert elsewhere["id"] != first["id"]

    frozen_clock[0] += timedelta(minutes=2)  # past 24 h: a new call
    later = await call(team_a, room.room_id, "add_task", title="t", idempotencyKey="day")
    assert later["id"] != first["id"]


async def test_past_the_quota_the_oldest_key_is_forgotten_first(
    team_a: Caller, room: RoomRef, settings: Any
) -> None:
    settings.ROOM_IDEMPOTENCY_KEYS_MAX = 3
    made = [
        await call(team_a, room.room_id, "add_task", title=f"t{i}", idempotencyKey=f"k{i}")
        for i in range(4)
    ]

    newest = await call(team_a, room.room_id, "add_task", title="t3", idempotencyKey="k3")
    assert newest == made[3]
    oldest = await call(team_a, room.room_id, "add_task", title="t0", idempotencyKey="k0")
    assert oldest["id"] != made[0]["id"]  # forgotten: it ran again


async def test_a_refused_call_leaves_no_record_so_its_retry_runs(
    team_a: Caller, room: RoomRef
) -> None:
    task = await _task(team_a, room.room_id)
    await call(team_a, room.room_id, "claim_task", taskId=task, agentId="backend")

    with pytest.raises(errors.TaskClaimError):
        await call(
            team_a, room.room_id, "claim_task", taskId=task, agentId="qa", idempotencyKey="q"
        )
    await call(team_a, room.room_id, "release_task", taskId=task, agentId="backend")

    claimed = await call(
        team_a, room.room_id, "claim_task", taskId=task, agentId="qa", idempotencyKey="q"
    )
    assert claimed["owner"] == "qa"


async def test_an_empty_or_overlong_key_is_refused(team_a: Caller, room: RoomRef) -> None:
    for key in ("", "x" * 129):
        with pytest.raises(errors.ToolArgumentsError) as caught:
            await call(team_a, room.room_id, "add_task", title="t", idempotencyKey=key)
        assert "idempotencyKey" in caught.value.message


def test_every_write_step_takes_the_key_and_every_post_its_turn_as_arguments() -> None:
    """Issue 23: the idempotency record and the turn rule reach the store as parameters of
    the step (no default, so no caller can leave them out unseen), never as context. Issue
    24: so does the acting agent the step marks present."""
    import importlib
    import inspect
    import pkgutil

    import rooms.store

    modules = [
        importlib.import_module(f"rooms.store.{info.name}")
        for info in pkgutil.iter_modules(rooms.store.__path__)
    ]
    writes = [
        fn
        for module in modules
        for name, fn in inspect.getmembers(module, inspect.iscoroutinefunction)
        if fn.__module__ == module.__name__
        and name not in ("run_write", "presence_touch")  # a read's presence: never keyed
        and "run_write(" in inspect.getsource(fn)
    ]
    assert len(writes) >= 30, writes
    for fn in writes:
        for param in ("keyed", "actor"):
            given = inspect.signature(fn).parameters.get(param)
            assert given is not None and given.default is inspect.Parameter.empty, fn.__qualname__
    for module_name, name in (("events", "event_append"), ("messages", "message_send")):
        step = getattr(importlib.import_module(f"rooms.store.{module_name}"), name)
        turn = inspect.signature(step).parameters["turn"]
        assert turn.default is inspect.Parameter.empty, name
    for module in modules:
        assert "contextvars" not in inspect.getsource(module), module.__name__


async def test_a_record_kept_before_outcomes_had_names_is_not_run_again(
    team_a: Caller, room: RoomRef, raw: redis.Redis
) -> None:
    """A retry that spans the upgrade of issue 32 finds its key's record as the older server
    kept it (an answer by number, no `outcomes`): the call was done then, so it is refused
    with a clear word, not run again and not a failure of ours; other keys work as ever."""
    await call(team_a, room.room_id, "add_task", title="once", idempotencyKey="spans")
    field = "k:spans"
    record = json.loads(raw.hget(room.keys.idempotency, field))
    del record["outcomes"]
    record["res"] = json.dumps([1, "t-1"])
    raw.hset(room.keys.idempotency, field, json.dumps(record))
    before = snapshot(raw, room)

    with pytest.raises(errors.IdempotencyKeyReusedError) as caught:
        await call(team_a, room.room_id, "add_task", title="once", idempotencyKey="spans")
    assert "before the server was upgraded" in caught.value.message
    assert caught.value.extra == {"idempotencyKey": "spans", "usedBy": "add_task"}
    assert snapshot(raw, room) == before
    await call(team_a, room.room_id, "add_task", title="next", idempotencyKey="fresh")
    titles = [t["title"] for t in (await call(team_a, room.room_id, "read_plan"))["tasks"]]
    assert sorted(titles) == ["next", "once"]
