"""The event log (docs/protocol.md "Event log"): post_event, read_events, get_unread_events,
mark_event_read, get_event_reads, reply_to_event, and get_my_summary's use of the cursor."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable
from typing import Any, TypeVar

import pytest
import redis

from rooms import clock, errors
from rooms.refs import RoomRef
from rooms.selectors import events as events_selectors
from rooms.services import context as context_services
from rooms.services import events as events_services
from rooms.services import plan as plan_services
from rooms.services import presence as presence_services
from rooms.services import vars as vars_services
from tests.rooms.conftest import invoke as registry_invoke

pytestmark = pytest.mark.anyio

T = TypeVar("T")
ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


async def post(
    room: RoomRef, n: int = 0, *, to: str = "all", type_: str = "note", from_: str = "alice"
) -> dict[str, Any]:
    return await events_services.event_post(room, type_=type_, from_=from_, to=to, payload={"n": n})


async def gather_in_chunks(calls: list[Awaitable[T]], size: int = 50) -> list[T]:
    """Many concurrent calls, at most `size` at once (the pool holds 64 connections)."""
    out: list[T] = []
    for i in range(0, len(calls), size):
        out.extend(await asyncio.gather(*calls[i : i + size]))
    return out


async def post_many(room: RoomRef, count: int) -> list[str]:
    """Post `count` events; their ids in log order."""
    await gather_in_chunks([post(room, i) for i in range(count)])
    return await log_ids(room)


async def log_ids(room: RoomRef) -> list[str]:
    ids: list[str] = []
    since: str | None = None
    while True:
        page = await events_selectors.event_list(room, since=since, limit=100, order="asc")
        if not page:
            return ids
        ids.extend(e["id"] for e in page)
        since = page[-1]["id"]


async def unread(
    room: RoomRef, agent: str, limit: int = 50, addressed_only: bool = False
) -> dict[str, Any]:
    return await events_services.event_take_unread(
        room, agent_id=agent, limit=limit, addressed_only=addressed_only
    )


def invoke(room: RoomRef, name: str, **arguments: Any) -> Any:
    async def access(room_id: str, write: bool) -> RoomRef:
        return room

    return registry_invoke(name, {"roomId": room.room_id, **arguments}, access)


def redis_ms(r: redis.Redis) -> int:
    seconds, micros = r.time()
    return int(seconds) * 1000 + int(micros) // 1000


def wait_for_redis_ms_after(r: redis.Redis, ms: int) -> None:
    """Bounded wait (not a sleep) until the server clock, which mints stream ids, passes ms."""
    for _ in range(100_000):
        if redis_ms(r) > ms:
            return
    raise AssertionError("the Redis clock did not move")


def pin_stream_millisecond(r: redis.Redis, room: RoomRef) -> int:
    """Append one well-formed event an hour ahead, so every later event of the room shares
    its millisecond (XADD * never goes back in time) and only the sequence part grows."""
    ms = redis_ms(r) + 3_600_000
    r.xadd(
        room.keys.events,
        {"type": "marker", "from": "test", "to": "all", "payload": "{}"},
        id=f"{ms}-0",
    )
    return ms


# --- post_event / read_events -----------------------------------------------------------


async def test_posted_event_has_its_stream_id_and_a_timestamp_from_it(room: RoomRef) -> None:
    event = await events_services.event_post(
        room, type_="peer_request", from_="alice", to="bob", payload={"ask": "review", "n": [1]}
    )

    assert re.fullmatch(r"\d+-\d+", event["id"])
    assert event["type"] == "peer_request"
    assert event["from"] == "alice"
    assert event["to"] == "bob"
    assert event["payload"] == {"ask": "review", "n": [1]}
    assert ISO_MS.match(event["timestamp"])
    assert event["timestamp"] == clock.iso_from_ms(int(event["id"].split("-")[0]))
    assert "reply_to_id" not in event
    assert await events_selectors.event_list(room, since=None, limit=20, order="desc") == [event]


async def test_post_event_through_the_registry_defaults_to_all_and_empty_payload(
    room: RoomRef,
) -> None:
    event = await invoke(room, "post_event", type="ping", **{"from": "alice"})

    assert (event["to"], event["payload"]) == ("all", {})


async def test_read_events_by_default_gives_the_newest_twenty_newest_first(room: RoomRef) -> None:
    ids = await post_many(room, 25)

    events = await invoke(room, "read_events")

    assert [e["id"] for e in events] == list(reversed(ids))[:20]


async def test_read_events_respects_limit(room: RoomRef) -> None:
    ids = await post_many(room, 10)

    events = await events_selectors.event_list(room, since=None, limit=3, order="desc")

    assert [e["id"] for e in events] == [ids[9], ids[8], ids[7]]


async def test_read_events_since_an_event_id_gives_only_later_events(room: RoomRef) -> None:
    ids = await post_many(room, 10)

    desc = await events_selectors.event_list(room, since=ids[6], limit=20, order="desc")
    asc = await invoke(room, "read_events", since=ids[6], order="asc", limit=2)

    assert [e["id"] for e in desc] == [ids[9], ids[8], ids[7]]
    assert [e["id"] for e in asc] == [ids[7], ids[8]]


async def test_read_events_since_an_iso_time_gives_only_events_after_it(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    first = await post(room, 0)
    first_ms = int(first["id"].split("-")[0])
    wait_for_redis_ms_after(sync_redis, first_ms)
    later = [await post(room, i) for i in (1, 2)]

    with_z = await events_selectors.event_list(
        room, since=first["timestamp"], limit=20, order="desc"
    )
    offset = first["timestamp"].replace("Z", "+00:00")
    with_offset = await events_selectors.event_list(room, since=offset, limit=20, order="asc")
    long_ago = await events_selectors.event_list(
        room, since="2001-01-01T00:00:00Z", limit=20, order="asc"
    )
    future = await events_selectors.event_list(
        room, since="2999-01-01T00:00:00Z", limit=20, order="asc"
    )

    assert [e["id"] for e in with_z] == [later[1]["id"], later[0]["id"]]
    assert [e["id"] for e in with_offset] == [later[0]["id"], later[1]["id"]]
    assert [e["id"] for e in long_ago] == [first["id"], later[0]["id"], later[1]["id"]]
    assert future == []


async def test_read_events_with_an_unreadable_since_is_refused(room: RoomRef) -> None:
    with pytest.raises(errors.ToolArgumentsError) as caught:
        await events_selectors.event_list(room, since="yesterday", limit=20, order="desc")

    assert caught.value.message == errors.SINCE_INVALID.format(since="yesterday")


async def test_paging_ascending_through_a_250_event_log_gives_every_event_once_in_order(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    await post_many(room, 250)
    expected = [eid for eid, _ in sync_redis.xrange(room.keys.events)]
    assert len(expected) == 250

    pages: list[list[str]] = []
    since: str | None = None
    while True:
        args: dict[str, Any] = {"order": "asc", "limit": 100}
        if since is not None:
            args["since"] = since
        page = [e["id"] for e in await invoke(room, "read_events", **args)]
        if not page:
            break
        pages.append(page)
        since = page[-1]

    assert [len(p) for p in pages] == [100, 100, 50]
    assert [eid for p in pages for eid in p] == expected


async def test_read_events_does_not_move_the_cursor(room: RoomRef) -> None:
    ids = await post_many(room, 5)
    await events_selectors.event_list(room, since=None, limit=100, order="asc")

    got = await unread(room, "bob")

    assert [e["id"] for e in got["events"]] == ids


# --- get_unread_events ------------------------------------------------------------------


async def test_unread_events_come_oldest_first_and_move_the_cursor(room: RoomRef) -> None:
    ids = await post_many(room, 5)

    first = await unread(room, "bob", limit=3)
    second = await unread(room, "bob", limit=3)
    third = await unread(room, "bob", limit=3)

    assert [e["id"] for e in first["events"]] == ids[:3]
    assert (first["cursor"], first["count"]) == (ids[2], 3)
    assert [e["id"] for e in second["events"]] == ids[3:]
    assert (second["cursor"], second["count"]) == (ids[4], 2)
    assert third["events"] == []
    assert (third["cursor"], third["count"]) == (ids[4], 0)
    assert "seen them all" in third["message"]


async def test_each_agent_has_its_own_cursor(room: RoomRef) -> None:
    ids = await post_many(room, 4)
    await unread(room, "bob", limit=4)

    got = await unread(room, "carol", limit=2)

    assert [e["id"] for e in got["events"]] == ids[:2]


async def test_unread_in_an_empty_room_says_the_log_is_empty(room: RoomRef) -> None:
    got = await invoke(room, "get_unread_events", agentId="bob")

    assert got["events"] == [] and got["count"] == 0
    assert got["cursor"] == "0-0"
    assert got["message"] == "No unread events: this room's event log is empty."


async def test_unread_default_limit_is_fifty(room: RoomRef) -> None:
    ids = await post_many(room, 60)

    got = await invoke(room, "get_unread_events", agentId="bob")

    assert got["count"] == 50
    assert [e["id"] for e in got["events"]] == ids[:50]


async def test_reader_a_thousand_events_behind_drains_everything_in_order(room: RoomRef) -> None:
    ids = await post_many(room, 1000)
    assert len(ids) == 1000

    delivered: list[str] = []
    batches = 0
    while True:
        got = await unread(room, "late", limit=100)
        if got["count"] == 0:
            break
        batches += 1
        assert got["count"] <= 100
        assert got["cursor"] == got["events"][-1]["id"]
        delivered.extend(e["id"] for e in got["events"])
        assert batches <= 10

    assert delivered == ids
    assert batches == 10


async def test_concurrent_unread_calls_by_one_agent_deliver_each_event_exactly_once(
    room: RoomRef,
) -> None:
    ids = await post_many(room, 300)

    results = await asyncio.gather(*(unread(room, "bob", limit=20) for _ in range(20)))

    delivered = [e["id"] for r in results for e in r["events"]]
    assert sorted(delivered) == sorted(ids)
    assert len(delivered) == len(set(delivered))
    for r in results:
        batch = [e["id"] for e in r["events"]]
        assert batch == sorted(batch, key=lambda i: tuple(map(int, i.split("-"))))


async def test_addressed_only_delivers_events_to_all_or_to_the_agent(room: RoomRef) -> None:
    to_all = await post(room, 0, to="all")
    await post(room, 1, to="carol")
    to_bob = await post(room, 2, to="bob")
    await post(room, 3, to="bobby")
    last = await post(room, 4, to="carol")

    got = await invoke(room, "get_unread_events", agentId="bob", addressedOnly=True)

    assert [e["id"] for e in got["events"]] == [to_all["id"], to_bob["id"]]
    # The events skipped for bob are behind him now too.
    assert got["cursor"] == last["id"]
    assert (await unread(room, "bob"))["events"] == []


async def test_addressed_only_with_a_limit_stops_at_the_last_delivered_event(
    room: RoomRef,
) -> None:
    a = await post(room, 0, to="bob")
    await post(room, 1, to="carol")
    b = await post(room, 2, to="bob")
    c = await post(room, 3, to="bob")

    got = await unread(room, "bob", limit=2, addressed_only=True)
    rest = await unread(room, "bob", limit=2, addressed_only=True)

    assert [e["id"] for e in got["events"]] == [a["id"], b["id"]]
    assert got["cursor"] == b["id"]
    assert [e["id"] for e in rest["events"]] == [c["id"]]


# --- read receipts ----------------------------------------------------------------------


async def test_mark_event_read_is_reported_by_get_event_reads(room: RoomRef) -> None:
    event = await post(room)

    ok = await events_services.event_mark_read(room, event_id=event["id"], agent_id="bob")
    await events_services.event_mark_read(room, event_id=event["id"], agent_id="carol")
    await events_services.event_mark_read(room, event_id=event["id"], agent_id="bob")
    reads = await invoke(room, "get_event_reads", eventId=event["id"])

    assert ok == {"eventId": event["id"], "agentId": "bob", "ok": True}
    assert reads["eventId"] == event["id"]
    assert reads["readBy"] == ["bob", "carol"]


async def test_event_nobody_read_has_empty_reads(room: RoomRef) -> None:
    event = await post(room)

    reads = await events_selectors.event_reads_get(room, event_id=event["id"])

    assert reads["readBy"] == []


async def test_mark_read_of_unknown_event_names_the_nearest_events(room: RoomRef) -> None:
    ids = await post_many(room, 5)
    ms, seq = ids[2].split("-")
    missing = f"{ms}-{int(seq) + 500}"

    with pytest.raises(errors.EventNotFoundError) as caught:
        await events_services.event_mark_read(room, event_id=missing, agent_id="bob")

    assert caught.value.message.startswith(f'Unknown event id "{missing}".')
    closest = caught.value.extra["closest"]
    assert 1 <= len(closest) <= 3
    assert set(closest) <= set(ids)
    for eid in closest:
        assert f'"{eid}" (note)' in caught.value.message
    assert await events_selectors.event_reads_get(room, event_id=ids[2]) == {
        "eventId": ids[2],
        "readBy": [],
        "reads": [],
    }


async def test_mark_read_of_a_malformed_event_id_names_the_newest_events(room: RoomRef) -> None:
    ids = await post_many(room, 5)

    with pytest.raises(errors.EventNotFoundError) as caught:
        await events_services.event_mark_read(room, event_id="evt_1", agent_id="bob")

    assert caught.value.extra["closest"] == [ids[4], ids[3], ids[2]]


async def test_get_event_reads_of_unknown_event_is_refused(room: RoomRef) -> None:
    with pytest.raises(errors.EventNotFoundError) as caught:
        await events_selectors.event_reads_get(room, event_id="1-0")

    assert caught.value.message == errors.EVENT_NOT_FOUND.format(
        event_id="1-0", hint=errors.EVENT_HINT_EMPTY
    )


# --- reply_to_event ---------------------------------------------------------------------


async def test_reply_links_to_its_parent(room: RoomRef) -> None:
    parent = await post(room, to="bob")

    reply = await invoke(
        room,
        "reply_to_event",
        replyToId=parent["id"],
        type="peer_response",
        to="alice",
        payload={"ok": True},
        **{"from": "bob"},
    )

    assert reply["reply_to_id"] == parent["id"]
    assert (reply["type"], reply["from"], reply["to"]) == ("peer_response", "bob", "alice")
    [stored] = await events_selectors.event_list(room, since=parent["id"], limit=10, order="asc")
    assert stored == reply


@pytest.mark.parametrize("parent_id", ["1-0", "not-an-id"])
async def test_reply_to_unknown_parent_is_refused_and_nothing_is_posted(
    room: RoomRef, parent_id: str
) -> None:
    existing = await post(room)

    with pytest.raises(errors.EventNotFoundError) as caught:
        await events_services.event_post(
            room, type_="reply", from_="bob", to="all", payload={}, reply_to=parent_id
        )

    assert caught.value.message.startswith(f'Unknown event id "{parent_id}".')
    assert caught.value.extra["closest"] == [existing["id"]]
    assert [
        e["id"] for e in await events_selectors.event_list(room, since=None, limit=10, order="asc")
    ] == [existing["id"]]


# --- get_my_summary ---------------------------------------------------------------------


async def write_note(room: RoomRef, text: str) -> dict[str, Any]:
    return await context_services.context_write(
        room, type_="note", summary=text, consuming_agents=[], payload={"text": text}, author="a"
    )


async def test_summary_consumes_unread_events_like_get_unread_events(room: RoomRef) -> None:
    ids = await post_many(room, 60)

    summary = await invoke(room, "get_my_summary", agentId="bob")
    rest = await unread(room, "bob", limit=100)

    assert summary["agentId"] == "bob"
    assert summary["roomId"] == room.room_id
    assert [e["id"] for e in summary["unreadEvents"]] == ids[:50]
    assert summary["cursor"] == ids[49]
    assert [e["id"] for e in rest["events"]] == ids[50:]


async def test_summary_reports_my_tasks_and_presence(room: RoomRef) -> None:
    task = await plan_services.task_add(
        room, title="t", description="", depends_on=[], priority=None, agent_id="lead"
    )
    await plan_services.task_update(
        room,
        task_id=task["id"],
        status="in_progress",
        owner_given=True,
        owner="bob",
        note=None,
        description=None,
        agent_id="bob",
    )
    await presence_services.presence_heartbeat(room, agent_id="bob")

    summary = await events_services.agent_summary(room, agent_id="bob")

    assert [t["id"] for t in summary["myTasks"]] == [task["id"]]
    assert [(p["agentId"], p["status"]) for p in summary["presence"]] == [("bob", "online")]


async def test_new_agent_counts_every_context_entry_as_new(room: RoomRef) -> None:
    entry = await write_note(room, "one")
    await write_note(room, "two")
    await context_services.context_update(
        room,
        entry_id=entry["id"],
        author="a",
        summary="one, revised",
        consuming_agents=None,
        payload=None,
        expected_version=None,
    )

    summary = await events_services.agent_summary(room, agent_id="newcomer")

    assert summary["newContextCount"] == 2


async def test_new_context_count_is_relative_to_the_previous_cursor(room: RoomRef) -> None:
    old = await write_note(room, "old")
    await write_note(room, "untouched")
    first = await events_services.agent_summary(room, agent_id="bob")
    assert first["newContextCount"] == 2

    await write_note(room, "new")
    await context_services.context_update(
        room,
        entry_id=old["id"],
        author="a",
        summary="old, revised",
        consuming_agents=None,
        payload=None,
        expected_version=None,
    )
    second = await events_services.agent_summary(room, agent_id="bob")
    third = await events_services.agent_summary(room, agent_id="bob")

    assert second["newContextCount"] == 2
    assert third["newContextCount"] == 0


async def test_context_written_before_the_cursor_in_the_same_millisecond_is_not_new(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    pin_stream_millisecond(sync_redis, room)
    await write_note(room, "seen already")  # <ms>-1
    await post_many(room, 5)  # <ms>-2 .. <ms>-6
    caught_up = await unread(room, "bob", limit=100)
    assert caught_up["count"] == 7

    summary = await events_services.agent_summary(room, agent_id="bob")

    assert summary["newContextCount"] == 0


async def test_context_written_after_the_cursor_in_the_same_millisecond_is_new(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    ms = pin_stream_millisecond(sync_redis, room)
    await post_many(room, 60)  # <ms>-1 .. <ms>-60
    caught_up = await unread(room, "bob", limit=100)
    assert caught_up["cursor"] == f"{ms}-60"
    await write_note(room, "fresh")  # <ms>-61

    summary = await events_services.agent_summary(room, agent_id="bob")

    assert summary["newContextCount"] == 1


async def test_shared_var_event_payload_round_trips(room: RoomRef) -> None:
    await vars_services.var_set(room, key="port", value="3000", agent_id="alice")

    [event] = (await unread(room, "bob"))["events"]

    assert (event["type"], event["from"], event["to"]) == ("shared_var_set", "alice", "all")
    assert event["payload"] == {"key": "port", "value": "3000"}
    assert json.dumps(event["payload"])


async def test_unknown_event_id_names_the_nearest_events_without_repeats(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    ms = pin_stream_millisecond(sync_redis, room)
    await post_many(room, 5)  # <ms>-1 .. <ms>-5
    missing = f"{ms}-100"

    with pytest.raises(errors.EventNotFoundError) as caught:
        await events_selectors.event_reads_get(room, event_id=missing)

    closest = caught.value.extra["closest"]
    assert len(closest) == len(set(closest))
    assert f"{ms}-5" in closest
    assert set(closest) <= {f"{ms}-3", f"{ms}-4", f"{ms}-5"}


async def test_addressed_only_reaches_an_event_behind_many_for_others(room: RoomRef) -> None:
    await gather_in_chunks([post(room, i, to="carol") for i in range(1100)])
    for_bob = await post(room, 9999, to="bob")

    got = await unread(room, "bob", limit=50, addressed_only=True)

    # The tool says "call again while count == limit": a shorter batch must mean caught up.
    assert [e["id"] for e in got["events"]] == [for_bob["id"]], got.get("message")
