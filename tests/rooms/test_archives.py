"""Nothing silently expires (docs/protocol.md "Lifecycle and durable rooms"): a room
is archived to Postgres whole, leaves Redis, answers reads from its archive, and comes
back exactly (event ids, cursors, idempotency records, the search index) on restore; the
sweep archives rooms before their idle TTL runs out; a room moves between deployments as
one signed JSON document."""

from __future__ import annotations

import asyncio
import copy
import io
import json
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from calls.runner import tool_run
from rooms import errors, keys, snapshots
from rooms.keys import RoomKeys
from rooms.refs import RoomRef
from tenants import archives, imports
from tenants.capabilities import Caller
from tenants.db import db_run
from tenants.models import AuditEvent, Room, RoomArchive, Team
from tests import callers

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room_id: str, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room_id, **args})


def room_keys_in_redis(sync_redis: redis.Redis, room_id: str) -> list[str]:
    pattern = f"{keys.prefix()}:{{{room_id}}}:*"
    return sorted(str(k) for k in sync_redis.scan_iter(match=pattern, count=1000))


async def furnish(caller: Caller, room_id: str) -> dict[str, Any]:
    """A room with some of everything: plan, claims, context versions, events, presence,
    cursors, vars, reviews, handoffs, messages, leases, a lock and a keyed write."""
    one = await call(caller, room_id, "add_task", title="parser", description="write it")
    two = await call(caller, room_id, "add_task", title="lexer", description="and this")
    await call(caller, room_id, "claim_task", taskId=one["id"], agentId="alice", leaseSeconds=600)
    await call(caller, room_id, "heartbeat", agentId="alice", tags=["backend"])
    await call(caller, room_id, "heartbeat", agentId="bob")
    entry = await call(
        caller,
        room_id,
        "write_context",
        type="note",
        summary="use postgres",
        consuming_agents=["bob"],
        payload={"text": "postgres, it is there"},
        author="alice",
    )
    await call(
        caller,
        room_id,
        "update_context",
        id=entry["id"],
        summary="use postgres 16",
        payload={"text": "postgres 16, it is there"},
        author="alice",
    )
    await call(caller, room_id, "set_shared_var", key="port", value="8080", agentId="alice")
    await call(
        caller,
        room_id,
        "lease_claim",
        path="src/parser/**",
        agentId="alice",
        taskId=one["id"],
        ttlSeconds=600,
    )
    await call(
        caller, room_id, "send_message", **{"from": "alice"}, to="bob", body="parser is mine"
    )
    await call(
        caller,
        room_id,
        "handoff_task",
        taskId=one["id"],
        **{"from": "alice"},
        to="bob",
        note="over to you",
    )
    await call(caller, room_id, "acquire_lock", resource="deploy", agentId="alice", ttlSeconds=60)
    await tool_run(
        caller,
        "add_task",
        {"roomId": room_id, "title": "keyed", "idempotencyKey": "k-1"},
    )
    # carol has read some of the log: her cursor sits mid-way.
    await call(caller, room_id, "get_unread_events", agentId="carol", limit=4)
    return {"one": one, "two": two, "entry": entry}


READS: list[tuple[str, dict[str, Any]]] = [
    ("read_plan", {}),
    ("get_task", {"taskId": "{one}"}),
    ("list_context", {}),
    ("read_context", {"id": "{entry}"}),
    ("get_context_history", {"id": "{entry}"}),
    ("read_events", {"limit": 100}),
    ("get_presence", {}),
    ("list_shared_vars", {}),
    ("list_reviews", {}),
    ("lease_list", {}),
    ("sent_messages", {"agentId": "alice"}),
    ("search", {"q": "parser"}),
    ("get_room_info", {}),
]


def _args(args: dict[str, Any], made: dict[str, Any]) -> dict[str, Any]:
    out = dict(args)
    for k, v in out.items():
        if v == "{one}":
            out[k] = made["one"]["id"]
        if v == "{entry}":
            out[k] = made["entry"]["id"]
    return out


async def answers(caller: Caller, room_id: str, made: dict[str, Any]) -> dict[str, Any]:
    return {name: await call(caller, room_id, name, **_args(args, made)) for name, args in READS}


def without_status_events(answer: Any) -> Any:
    """The log after a restore also says the room was archived and restored."""
    if isinstance(answer, list):
        return [
            e
            for e in answer
            if not (isinstance(e, dict) and e.get("type") == "room_status_changed")
        ]
    return answer


def comparable(name: str, answer: Any) -> Any:
    answer = copy.deepcopy(answer)
    if name == "read_events":
        return without_status_events(answer)
    if name == "search":
        # Scores weigh each word by how many events hold it: the status events move them.
        return [(h["kind"], h["id"], h["snippet"]) for h in answer["hits"]]
    if name == "get_presence":
        # sent_messages names alice as its acting agent: each round of reads marks her
        # present anew (issue 24), so her lastSeen is the reads' own time.
        return [{**p, "lastSeen": None} if p["agentId"] == "alice" else p for p in answer]
    if name == "get_room_info" and isinstance(answer, dict):
        for volatile in ("status", "eventCount", "events", "lastEventId", "updatedAt"):
            answer.pop(volatile, None)
    if name == "get_my_summary" and isinstance(answer, dict):
        answer.pop("recentEvents", None)
        answer.pop("unreadCount", None)
        answer.pop("room", None)
    return answer


async def test_an_archived_room_leaves_redis_answers_reads_and_comes_back_exactly(
    team_a: Caller, room: RoomRef, sync_redis: redis.Redis
) -> None:
    made = await furnish(team_a, room.room_id)
    before = await answers(team_a, room.room_id, made)
    log_before = await call(team_a, room.room_id, "read_events", limit=100)

    moved = await call(team_a, room.room_id, "set_room_status", status="archived", agentId="lead")
    assert moved == {"roomId": room.room_id, "status": "archived", "previousStatus": "active"}
    # Nothing of the room is left but a tombstone of minutes: its meta, saying archived.
    left = room_keys_in_redis(sync_redis, room.room_id)
    assert left == [RoomKeys(room.room_id).meta]
    assert sync_redis.hgetall(left[0]) == {"status": "archived"}
    assert 0 < sync_redis.pttl(left[0]) <= 10 * 60 * 1000
    archive = await db_run(lambda: RoomArchive.objects.get(room__room_id=room.room_id))
    assert archive.reason == "requested" and archive.size_bytes > 1000
    assert {"tasks", "events", "ctx_versions", "idem", "search_events"} <= set(
        archive.document["parts"]
    )

    # Archived: reads answer from the archive; writes say how to restore.
    while_archived = await answers(team_a, room.room_id, made)
    assert comparable("read_plan", while_archived["read_plan"]) == comparable(
        "read_plan", before["read_plan"]
    )
    assert while_archived["list_context"] == before["list_context"]
    with pytest.raises(errors.RoomClosedError, match="is archived") as refused:
        await call(team_a, room.room_id, "add_task", title="refused")
    assert "restore" in refused.value.message  # how, in words any profile can follow
    view = room_keys_in_redis(sync_redis, room.room_id)
    assert view, "the reads loaded a copy"
    # The copy lives as long as its owner key: then the next read loads it afresh.
    assert (
        0
        < sync_redis.pttl(RoomKeys(room.room_id).owner)
        <= (settings.ROOM_ARCHIVE_VIEW_SECONDS * 1000)
    )
    assert (
        sync_redis.pttl(RoomKeys(room.room_id).tasks) <= settings.ROOM_ARCHIVE_VIEW_SECONDS * 1000
    )

    restored = await call(team_a, room.room_id, "set_room_status", status="active", agentId="lead")
    assert restored == {"roomId": room.room_id, "status": "active", "previousStatus": "archived"}
    after = await answers(team_a, room.room_id, made)
    for name, _ in READS:
        assert comparable(name, after[name]) == comparable(name, before[name]), name

    log_after = await call(team_a, room.room_id, "read_events", limit=100)
    assert without_status_events(log_after) == without_status_events(log_before)
    status_events = [
        e["payload"]
        for e in sorted(log_after, key=lambda e: e["id"])
        if e["type"] == "room_status_changed"
    ]
    assert status_events[-2:] == [
        {"status": "archived", "previousStatus": "active"},
        {"status": "active", "previousStatus": "archived"},
    ]

    # Carol's cursor goes on where it was: the rest of the log, then the new event, once.
    rest = await call(team_a, room.room_id, "get_unread_events", agentId="carol", limit=100)
    ids_before = sorted(e["id"] for e in log_before)
    got = [e["id"] for e in rest["events"] if e["type"] != "room_status_changed"]
    assert got == ids_before[4:]
    new = await call(team_a, room.room_id, "add_task", title="after the restore")
    fresh = await call(team_a, room.room_id, "get_unread_events", agentId="carol", limit=100)
    assert [e["type"] for e in fresh["events"]] == ["task_added"]
    assert fresh["events"][0]["id"] > ids_before[-1]
    assert new["title"] == "after the restore"

    # The keyed write is still remembered: its retry answers the first call's task.
    again = await tool_run(
        team_a, "add_task", {"roomId": room.room_id, "title": "keyed", "idempotencyKey": "k-1"}
    )
    plan = await call(team_a, room.room_id, "read_plan")
    assert [t["title"] for t in plan["tasks"]].count("keyed") == 1
    assert again["title"] == "keyed"
    # The claim's lease is the sweeper's again.
    assert sync_redis.zscore(keys.claims_due(), room.room_id) is not None
    audits = await db_run(
        lambda: list(
            AuditEvent.objects.filter(object_id=room.room_id, action__startswith="room.")
            .order_by("id")
            .values_list("action", flat=True)
        )
    )
    assert audits[-2:] == ["room.archive", "room.restore"]


async def test_restores_at_once_restore_once_and_a_second_restore_changes_nothing(
    team_a: Caller, room: RoomRef
) -> None:
    await call(team_a, room.room_id, "add_task", title="kept")
    await call(team_a, room.room_id, "set_room_status", status="archived")
    results = await asyncio.gather(
        *(call(team_a, room.room_id, "set_room_status", status="active") for _ in range(8))
    )
    assert sorted(r["previousStatus"] for r in results) == ["active"] * 7 + ["archived"]
    again = await call(team_a, room.room_id, "set_room_status", status="active")
    assert again["previousStatus"] == "active"
    plan = await call(team_a, room.room_id, "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["kept"]
    events = await call(team_a, room.room_id, "read_events", limit=50)
    restores = [
        e for e in events if e["payload"] == {"status": "active", "previousStatus": "archived"}
    ]
    assert len(restores) == 1


async def test_archiving_twice_changes_nothing_and_other_statuses_wait_for_a_restore(
    team_a: Caller, room: RoomRef
) -> None:
    await call(team_a, room.room_id, "add_task", title="kept")
    await call(team_a, room.room_id, "set_room_status", status="archived")
    again = await call(team_a, room.room_id, "set_room_status", status="archived")
    assert again == {"roomId": room.room_id, "status": "archived", "previousStatus": "archived"}
    with pytest.raises(errors.RoomClosedError, match="Restore it first"):
        await call(team_a, room.room_id, "set_room_status", status="paused")
    assert (await db_run(lambda: Room.objects.get(room_id=room.room_id).status)) == "archived"


async def test_writes_racing_an_archive_are_either_in_it_or_refused(
    team_a: Caller, room: RoomRef
) -> None:
    """Many writers while the room is archived: every write that answered is in the
    archive (so in the restored room), every other one was refused saying why, and none
    was half-written."""
    await call(team_a, room.room_id, "add_task", title="first")

    async def writer(n: int) -> str | None:
        try:
            task = await call(team_a, room.room_id, "add_task", title=f"w{n}")
        except errors.RoomClosedError as exc:
            assert exc.code == "room_not_active"
            return None
        return str(task["title"])

    async def archiver() -> Any:
        await asyncio.sleep(0.01)  # some writers first: the race itself is the subject
        return await call(team_a, room.room_id, "set_room_status", status="archived")

    results = await asyncio.gather(*(writer(n) for n in range(40)), archiver())
    landed = {r for r in results[:-1] if r is not None}
    refused = sum(1 for r in results[:-1] if r is None)
    assert results[-1]["status"] == "archived"
    await call(team_a, room.room_id, "set_room_status", status="active")
    plan = await call(team_a, room.room_id, "read_plan")
    titles = [t["title"] for t in plan["tasks"]]
    assert sorted(titles) == sorted({"first", *landed})
    assert len(landed) + refused == 40


async def test_the_sweep_archives_rooms_before_their_idle_ttl_runs_out(
    team_a: Caller, room_id: str, sync_redis: redis.Redis, settings: Any
) -> None:
    """With the idle TTL shortened to seconds: the sweep archives the idle room, Redis
    then drops what was left, and the restore brings every task back. A room the sweep
    does not reach is gone (what the sweep prevents); a room in use is left alone."""
    settings.ROOM_IDLE_TTL_SECONDS = 2
    settings.ROOM_ARCHIVE_AHEAD_SECONDS = 1
    idle, unswept, busy = f"{room_id}-idle", f"{room_id}-lost", f"{room_id}-busy"
    for rid in (idle, unswept, busy):
        await call(team_a, rid, "add_task", title=f"task of {rid}")
    # The idle room was last active long ago (not slept for: its record moved back); the
    # busy one just now; the sweep never reaches the unswept one.
    await db_run(
        lambda: Room.objects.filter(room_id=idle).update(
            last_active_at=timezone.now() - timedelta(seconds=20)
        )
    )
    await db_run(lambda: Room.objects.filter(room_id=busy).update(last_active_at=timezone.now()))
    await db_run(
        lambda: Room.objects.filter(room_id=unswept).update(
            last_active_at=timezone.now() + timedelta(days=1)
        )
    )
    archived = await db_run(archives.archives_sweep)
    assert archived == [idle]
    # Past the idle TTL Redis drops the rest (its minute-long activity mark aside, which
    # holds no state): a bounded wait on Redis's own expiry.
    async with asyncio.timeout(10):
        while [k for k in room_keys_in_redis(sync_redis, unswept) if "active_mark" not in k]:
            await asyncio.sleep(0.05)
    assert room_keys_in_redis(sync_redis, idle) == [RoomKeys(idle).meta]  # the tombstone
    await call(team_a, idle, "set_room_status", status="active")
    plan = await call(team_a, idle, "read_plan")
    assert [t["title"] for t in plan["tasks"]] == [f"task of {idle}"]
    lost = await call(team_a, unswept, "read_plan")
    assert lost["tasks"] == []


def _team(slug: str) -> Team:
    return Team.objects.get(slug=slug)


def _import(team: str, body: bytes, room_id: str) -> Room:
    with imports.spooled(io.BytesIO(body)) as signed:
        return archives.room_import(team=_team(team), body=signed, room_id=room_id, actor="t")


async def test_a_room_moves_as_one_signed_document_and_a_changed_one_is_refused(
    team_a: Caller, room: RoomRef, sync_redis: redis.Redis
) -> None:
    made = await furnish(team_a, room.room_id)
    before = await answers(team_a, room.room_id, made)
    body = await db_run(archives.room_export, room.room_id)
    document = json.loads(body)
    assert document["format"] == "roomservice.room" and document["signature"]

    team_b = await callers.team("team-b")
    copy_id = f"{room.room_id}-copy"
    imported = await db_run(lambda: _import("team-b", body, copy_id))
    assert imported.team.slug == "team-b"
    after = json.loads(
        json.dumps(await answers(team_b, copy_id, made)).replace(copy_id, room.room_id)
    )
    for name, _ in READS:
        if name == "get_room_info":
            continue
        assert comparable(name, after[name]) == comparable(name, before[name]), name

    value = document["parts"]["vars"]["items"][1]
    changed = body.replace(json.dumps(value).encode(), json.dumps(value + "6").encode(), 1)
    assert changed != body
    unsigned = body[: body.rindex(b',"signature"')] + b"}"
    for bad, why in (
        (changed, "signature does not match"),
        (unsigned, "no signature"),
        (b'{"format":"x"}', "no signature"),
        (b"[]", "no signature"),
    ):
        with pytest.raises(errors.ToolArgumentsError, match=why):
            await db_run(_import, "team-b", bad, f"{room.room_id}-bad")
    assert not await db_run(lambda: Room.objects.filter(room_id=f"{room.room_id}-bad").exists())
    assert room_keys_in_redis(sync_redis, f"{room.room_id}-bad") == []
    with pytest.raises(errors.RoomAccessError):  # taken: the one room denial
        await db_run(lambda: _import("team-b", body, copy_id))


def test_every_durable_part_of_a_room_has_its_type_in_the_archive() -> None:
    """A key a later feature adds to a room is archived too, or this fails."""
    assert set(RoomKeys("r").snapshot_parts()) == set(snapshots.PART_TYPES)


async def test_archived_rooms_block_the_write_that_passed_access_just_before(
    team_a: Caller, room: RoomRef
) -> None:
    """The step's own guard: a write whose access check ran before the freeze (its status
    cached in this process) is refused by the store, not lost."""
    await call(team_a, room.room_id, "add_task", title="first")
    from rooms.store import archives as archives_store

    await archives_store.room_freeze(room.keys)
    with pytest.raises(errors.RoomClosedError, match="being archived"):
        from rooms.services import plan as plan_services

        await plan_services.task_add(
            room, title="late", description="", depends_on=[], priority=None, agent_id="a"
        )
    await archives_store.room_thaw(room.keys, "active")
    plan = await call(team_a, room.room_id, "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["first"]


def test_the_sweep_is_a_beat_task_that_runs_well_before_any_room_could_expire() -> None:
    from config.celery import app
    from mcp_gateway import tasks

    entry = settings.CELERY_BEAT_SCHEDULE["archives-sweep"]
    assert entry["task"] == "archives.sweep" == tasks.archives_sweep.name
    assert "archives.sweep" in app.tasks
    assert entry["schedule"] < settings.ROOM_ARCHIVE_AHEAD_SECONDS < settings.ROOM_IDLE_TTL_SECONDS


async def test_a_room_whose_keys_redis_lost_takes_writes_again(
    team_a: Caller, room: RoomRef, sync_redis: redis.Redis
) -> None:
    """Redis restarted without its data while this process had the room cached: the write
    step finds no owner, the room is checked again (the database says it is ours and not
    archived), and the write lands, keyed or not."""
    await call(team_a, room.room_id, "add_task", title="before")
    for key in room_keys_in_redis(sync_redis, room.room_id):
        sync_redis.delete(key)
    task = await call(team_a, room.room_id, "add_task", title="after")
    assert task["title"] == "after"
    for key in room_keys_in_redis(sync_redis, room.room_id):
        sync_redis.delete(key)
    keyed = {"roomId": room.room_id, "title": "keyed", "idempotencyKey": "after-loss"}
    first = await tool_run(team_a, "add_task", keyed)
    again = await tool_run(team_a, "add_task", keyed)
    assert first["id"] == again["id"]
    plan = await call(team_a, room.room_id, "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["keyed"]  # Redis lost "after" too


async def test_a_room_redis_lost_keeps_its_last_archive_and_its_pause(
    team_a: Caller, room: RoomRef, sync_redis: redis.Redis
) -> None:
    """Redis lost the room after a restore: archiving it again keeps the archive it was
    restored from (never an empty one); a paused room whose keys were lost stays paused;
    and no first touch can bring an archived room back to life in Redis."""
    from rooms.store import bearers as bearers_store

    await call(team_a, room.room_id, "add_task", title="kept")
    await call(team_a, room.room_id, "set_room_status", status="archived")
    await call(team_a, room.room_id, "set_room_status", status="active")
    for key in room_keys_in_redis(sync_redis, room.room_id):
        sync_redis.delete(key)
    await db_run(archives.room_archive, room.room_id, actor="test")
    # The tombstone: a request that read the record as live cannot make the room again.
    assert not await bearers_store.room_owner_cache(room.keys, room.team_id, recorded="active")
    await call(team_a, room.room_id, "set_room_status", status="active")
    plan = await call(team_a, room.room_id, "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["kept"]

    await call(team_a, room.room_id, "set_room_status", status="paused")
    for key in room_keys_in_redis(sync_redis, room.room_id):
        sync_redis.delete(key)
    with pytest.raises(errors.RoomClosedError, match="is paused"):
        await call(team_a, room.room_id, "add_task", title="refused")


async def test_one_room_that_fails_does_not_stop_the_sweep(
    team_a: Caller, room_id: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ROOM_IDLE_TTL_SECONDS = 3
    settings.ROOM_ARCHIVE_AHEAD_SECONDS = 2
    settings.ROOM_ARCHIVE_SWEEP_SECONDS = 1
    bad, good = f"{room_id}-bad", f"{room_id}-good"
    for rid in (bad, good):
        await call(team_a, rid, "add_task", title=rid)
    # Both idle long ago (their records moved back, not slept for).
    await db_run(
        lambda: Room.objects.filter(room_id__in=(bad, good)).update(
            last_active_at=timezone.now() - timedelta(seconds=20)
        )
    )
    real = archives.room_archive

    def failing(room_id: str, **kwargs: Any) -> Any:
        if room_id == bad:
            raise RuntimeError("the database refused the document")
        return real(room_id, **kwargs)

    monkeypatch.setattr(archives, "room_archive", failing)
    assert await db_run(archives.archives_sweep) == [good]


async def test_an_import_does_not_carry_another_teams_project_memory(
    team_a: Caller, room: RoomRef
) -> None:
    document = json.loads(await db_run(archives.room_export, room.room_id))
    document["parts"]["inherited"] = {"type": "hash", "items": ["r/c", "{}"]}
    signed = snapshots.document_encode(document, imports.export_key())
    copy_id = f"{room.room_id}-imp"
    await db_run(lambda: _import("team-a", signed, copy_id))
    summary = await call(team_a, copy_id, "get_my_summary", agentId="x")
    assert summary["inheritedContext"]["count"] == 0
