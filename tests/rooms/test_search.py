"""search: ranked full-text over tasks, context entries and retained events, from an index
the writes keep (never a scan of the room)."""

from __future__ import annotations

import io
import json
import struct
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from django.core.management import call_command

from calls.runner import tool_run
from rooms import errors, search
from rooms.refs import RoomRef
from tenants.access import room_access
from tenants.capabilities import Caller
from tests.conftest import redis_for_assertions

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def post(caller: Caller, room: RoomRef, text: str, type_: str = "note") -> str:
    event = await call(
        caller, room, "post_event", type=type_, payload={"text": text}, **{"from": "x"}
    )
    return str(event["id"])


async def note(caller: Caller, room: RoomRef, summary: str, text: str) -> str:
    """A note context entry's id."""
    entry = await call(
        caller,
        room,
        "write_context",
        type="note",
        consuming_agents=[],
        summary=summary,
        payload={"text": text},
        author="x",
    )
    return str(entry["id"])


async def hits(caller: Caller, room: RoomRef, q: str, **args: Any) -> list[tuple[str, str]]:
    found = await call(caller, room, "search", q=q, **args)
    return [(h["kind"], h["id"]) for h in found["hits"]]


async def test_every_kind_of_document_is_found_with_a_snippet(
    team_a: Caller, room: RoomRef
) -> None:
    task = await call(
        team_a,
        room,
        "add_task",
        title="Wire the payment webhook",
        description="Stripe sends checkout.completed",
    )
    entry = await note(team_a, room, "Payments API contract", "POST /charge")
    event = await post(team_a, room, "the payment provider returned 502 twice")

    found = await call(team_a, room, "search", q="payment*")

    kinds = {(h["kind"], h["id"]) for h in found["hits"]}
    assert ("task", task["id"]) in kinds
    assert ("context", entry) in kinds
    assert ("event", event) in kinds
    by_id = {h["id"]: h for h in found["hits"]}
    assert "payment webhook" in by_id[task["id"]]["snippet"]
    assert "502" in by_id[event]["snippet"]
    assert found["count"] == len(found["hits"])


async def test_title_and_summary_words_rank_above_body_words(team_a: Caller, room: RoomRef) -> None:
    body = await call(
        team_a,
        room,
        "add_task",
        title="Refactor the client",
        description="also touches the invoice module",
    )
    title = await call(
        team_a, room, "add_task", title="Invoice totals are wrong", description="rounding"
    )

    ranked = await call(team_a, room, "search", q="invoice")

    ids = [h["id"] for h in ranked["hits"] if h["kind"] == "task"]
    assert ids.index(title["id"]) < ids.index(body["id"])
    scores = {h["id"]: h["score"] for h in ranked["hits"]}
    assert scores[title["id"]] > scores[body["id"]]


async def test_hits_holding_every_word_come_before_hits_holding_some(
    team_a: Caller, room: RoomRef
) -> None:
    one = await post(team_a, room, "login page is slow")
    both = await post(team_a, room, "login page crashes on safari")
    other = await post(team_a, room, "safari only")

    found = await hits(team_a, room, "login safari")

    assert found[0] == ("event", both)
    assert {("event", one), ("event", other)} <= set(found[1:])


async def test_a_phrase_needs_its_words_together_and_in_order(
    team_a: Caller, room: RoomRef
) -> None:
    together = await post(team_a, room, "rotate the signing key before friday")
    apart = await post(team_a, room, "the key is fine; signing happens later")

    found = await hits(team_a, room, '"signing key"')

    assert found == [("event", together)]
    assert ("event", apart) in await hits(team_a, room, "signing key")


async def test_updates_and_deletions_keep_the_index_true(team_a: Caller, room: RoomRef) -> None:
    task = await call(team_a, room, "add_task", title="Nightly export", description="csv")
    await call(
        team_a,
        room,
        "update_task",
        taskId=task["id"],
        description="parquet files",
        status="pending",
        agentId="x",
    )
    assert ("task", task["id"]) in await hits(team_a, room, "parquet")
    assert ("task", task["id"]) not in await hits(team_a, room, "csv")

    storage = await note(team_a, room, "We store blobs in S3", "bucket")
    await call(
        team_a, room, "update_context", id=storage, summary="We store blobs in GCS", author="x"
    )
    assert ("context", storage) in await hits(team_a, room, "gcs")
    assert ("context", storage) not in await hits(team_a, room, "s3")

    event = await post(team_a, room, "flamingo sighting")
    await call(team_a, room, "delete_event", eventId=event)
    await call(team_a, room, "delete_task", taskId=task["id"])
    await call(team_a, room, "delete_context", id=storage)
    assert await hits(team_a, room, "flamingo") == []
    assert await hits(team_a, room, "parquet") == []
    assert ("context", storage) not in await hits(team_a, room, "gcs")


async def test_trimmed_events_leave_the_index_and_its_words(
    team_a: Caller, room: RoomRef, settings: Any, sync_redis: redis.Redis
) -> None:
    settings.ROOM_EVENT_CAP = 5
    await post(team_a, room, "zanzibar once")
    for i in range(10):
        await post(team_a, room, f"filler number{i}")

    assert await hits(team_a, room, "zanzibar") == []
    assert await hits(team_a, room, "number0") == []
    assert len(await hits(team_a, room, "filler")) == 5
    assert sync_redis.zscore(room.keys.search_vocab, "zanzibar") is None
    assert not sync_redis.hexists(room.keys.search_events, "zanzibar")
    assert sync_redis.ttl(room.keys.search_events) > 0  # it goes with the room


async def test_a_word_found_in_many_events_reads_its_newest(team_a: Caller, room: RoomRef) -> None:
    newest = [await post(team_a, room, f"common word {i}") for i in range(30)]

    found = await hits(team_a, room, "common", limit=10)

    assert [e for _, e in found] == list(reversed(newest))[:10]


async def test_words_are_cut_as_the_index_cuts_them(team_a: Caller, room: RoomRef) -> None:
    event = await post(team_a, room, 'Straße "quoted"\nnext-line Ünïcode')
    for q in ["STRAßE", "quoted", "next", "line", "Ünïcode", "next-line", "stra*"]:
        assert ("event", event) in await hits(team_a, room, q), q
    # ASCII letters are folded; others match as written (the index is kept in Redis's Lua,
    # which knows no Unicode case).
    assert await hits(team_a, room, "ünïcode") == []
    assert search.words('a\\nb "C" d\u00e9') == ["a", "b", "c", "d\u00e9"]


@pytest.mark.parametrize("q", ["the", "a of to", "x", '""', "*"])
async def test_a_q_with_no_searchable_word_says_so(team_a: Caller, room: RoomRef, q: str) -> None:
    with pytest.raises(errors.ToolArgumentsError, match="no word to search for"):
        await call(team_a, room, "search", q=q)


async def test_semantic_says_plainly_it_is_not_configured(team_a: Caller, room: RoomRef) -> None:
    event = await post(team_a, room, "kubernetes rollout")

    found = await call(team_a, room, "search", q="rollout", semantic=True)

    assert found["hits"][0]["id"] == event
    assert "semantic search is not configured" in found["warnings"][0]


async def test_a_long_query_is_cut_to_its_first_groups_and_says_so(
    team_a: Caller, room: RoomRef
) -> None:
    await post(team_a, room, "w1 w2")
    q = " ".join(f"w{i}" for i in range(1, 20))

    found = await call(team_a, room, "search", q=q)

    assert found["hits"] and "more than 8" in found["warnings"][0]


async def test_one_room_never_finds_another_rooms_documents(team_a: Caller, room: RoomRef) -> None:
    other_room = await room_access(team_a, room.room_id + "-other", write=True)
    await post(team_a, other_room, "secret albatross")

    assert await hits(team_a, room, "albatross") == []
    assert len(await hits(team_a, other_room, "albatross")) == 1


async def test_a_room_from_before_the_index_is_indexed_and_counted_once_by_search_reindex(
    team_a: Caller, room: RoomRef, settings: Any, sync_redis: redis.Redis
) -> None:
    """Events and a task written straight into Redis (as the store wrote them before the
    index existed), then a live write, then the command, twice."""
    legacy = [
        sync_redis.xadd(
            room.keys.events,
            {"type": "note", "from": "x", "to": "all", "payload": f'{{"text":"legacy ibis {i}"}}'},
        )
        for i in range(3)
    ]
    task = {"id": "t_legacyaaaaaa", "title": "Legacy heron", "status": "pending"}
    sync_redis.hset(room.keys.tasks, task["id"], json.dumps(task))
    sync_redis.rpush(room.keys.task_order, task["id"])
    live = await post(team_a, room, "live ibis")
    assert await hits(team_a, room, "ibis") == [("event", live)]

    for _ in range(2):
        await sync_to_async(call_command)("search_reindex", room.room_id, stdout=io.StringIO())

    found = await hits(team_a, room, "ibis")
    assert found == [("event", e) for e in [live, *reversed(legacy)]]
    assert await hits(team_a, room, "heron") == [("task", task["id"])]
    stats = await call(team_a, room, "get_room_analytics", days=1)
    assert stats["events"]["inWindow"] == stats["events"]["total"] == 4  # legacy ones counted
    raw = redis_for_assertions(decode_responses=False)
    try:
        posted = raw.hget(room.keys.search_events, "ibis")
    finally:
        raw.close()
    assert isinstance(posted, bytes)
    assert struct.unpack(">I", posted[:4])[0] == 4  # each event counted once
    assert len(posted) == 4 + 4 * 11
    # Trimmed, every one of them leaves the index: nothing is left behind.
    settings.ROOM_EVENT_CAP = 1
    await post(team_a, room, "last")
    assert not sync_redis.hexists(room.keys.search_events, "ibis")
    assert sync_redis.zscore(room.keys.search_vocab, "ibis") is None


async def test_words_nobody_repeats_cannot_grow_the_index_past_the_rooms_byte_quota(
    team_a: Caller, room: RoomRef, settings: Any, sync_redis: redis.Redis
) -> None:
    """The attack: every event full of words seen nowhere else (the most index per byte
    sent). The index is counted with the log against ROOM_EVENT_BYTES_MAX, so the log
    trims to keep both in the quota, and the newest event is still found."""
    settings.ROOM_EVENT_BYTES_MAX = 100_000
    last = ""
    for i in range(400):
        text = " ".join(f"u{i:04d}x{j:02d}" for j in range(64))
        last = await post(team_a, room, text)

    held = int(sync_redis.hget(room.keys.meta, "event_bytes") or 0)
    assert held <= 100_000
    real = sum(
        int(sync_redis.memory_usage(k, samples=0) or 0)
        for k in (room.keys.events, room.keys.search_events, room.keys.search_vocab)
    )
    assert real <= 2 * 100_000, f"{real} bytes in Redis for a quota of 100,000"
    assert await hits(team_a, room, "u0399x61") == [("event", last)]
    assert await hits(team_a, room, "u0000x00") == []  # trimmed, and gone from the index
