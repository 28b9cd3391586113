"""wait_for_events: at once when something is unread, the moment a write lands, or timedOut;
exactly once; and many waiters share one subscription. A quiet event stream reads nothing."""

from __future__ import annotations

import asyncio

import pytest
import redis
from django.conf import settings

from rooms.refs import WAIT_MAX_MS, RoomRef
from rooms.selectors import events as events_selectors
from rooms.selectors import plan as plan_selectors
from rooms.services import events as events_services
from rooms.store import connections as connections_store
from rooms.store import wakeups as wakeups_store
from tests.conftest import commandstats

pytestmark = pytest.mark.anyio


async def post(room: RoomRef, n: int) -> dict[str, object]:
    return await events_services.event_post(
        room, type_="tick", from_="writer", to="all", payload={"n": n}
    )


async def registered(count: int = 1) -> None:
    """Returns once `count` waiters are registered with the wake hub (a bounded wait,
    yielding to the loop between looks)."""
    async with asyncio.timeout(10):
        while wakeups_store.wake_hub().waiting() < count:
            await asyncio.sleep(0)


async def test_returns_at_once_when_something_is_unread(room: RoomRef) -> None:
    event = await post(room, 1)
    got = await events_services.event_wait(
        room, agent_id="a", timeout_ms=30_000, limit=10, addressed_only=False
    )
    assert got["timedOut"] is False and [e["id"] for e in got["events"]] == [event["id"]]
    assert got["cursor"] == event["id"]


async def test_times_out_with_nothing_new(room: RoomRef) -> None:
    await post(room, 1)
    await events_services.event_take_unread(room, agent_id="a", limit=10, addressed_only=False)
    got = await events_services.event_wait(
        room, agent_id="a", timeout_ms=150, limit=10, addressed_only=False
    )
    assert got == {
        "events": [],
        "cursor": got["cursor"],
        "count": 0,
        "timedOut": True,
        "timeoutMs": 150,
        "capped": False,
    }


async def test_a_wait_nothing_woke_reads_the_room_once(room: RoomRef) -> None:
    """An idle agent's wait costs one read: with nothing written while it waited (the
    subscription was live before the read), reading again at the timeout finds nothing
    new, so it is not done."""
    await post(room, 1)
    for _ in range(2):  # the second: the process has used the script (an EVAL the first time)
        await events_services.event_wait(
            room, agent_id="a", timeout_ms=1, limit=10, addressed_only=False
        )
    r = connections_store.client()
    before = await commandstats(r)
    got = await events_services.event_wait(
        room, agent_id="a", timeout_ms=100, limit=10, addressed_only=False
    )
    after = await commandstats(r)
    scripts = sum(
        n - before.get(name, 0) for name, n in after.items() if name.startswith("cmdstat_eval")
    )
    assert got["timedOut"] is True and scripts == 1


async def test_a_quiet_stream_reads_nothing_between_keep_alives(room: RoomRef) -> None:
    """An event stream (SSE) that nobody writes to reads the log once, then only keeps
    alive: no read each keep-alive period. A write still reaches it."""
    r = connections_store.client()
    follow = events_selectors.event_follow(room, after=None, keepalive_seconds=0.05)
    try:
        assert await anext(follow) is None  # the first read is behind it
        before = await commandstats(r)
        for _ in range(5):
            assert await anext(follow) is None
        after = await commandstats(r)
        assert after.get("cmdstat_xrange", 0) == before.get("cmdstat_xrange", 0)
        event = await post(room, 1)
        while (got := await anext(follow)) is None:
            pass
        assert got["id"] == event["id"]
    finally:
        await follow.aclose()


async def test_a_wait_longer_than_the_most_is_cut_and_says_so(room: RoomRef) -> None:
    """Clients give up on a call after about 60 s: whatever timeoutMs asks, one wait ends
    within WAIT_MAX_MS (here woken by a write, so the test does not sleep 30 s)."""
    waiting = asyncio.ensure_future(
        events_services.event_wait(
            room, agent_id="a", timeout_ms=3_600_000, limit=10, addressed_only=False
        )
    )
    await registered()
    await post(room, 2)
    got = await asyncio.wait_for(waiting, 10)
    assert got["timeoutMs"] == WAIT_MAX_MS == 30_000
    assert got["capped"] is True and got["count"] == 1


async def test_wakes_on_the_next_write(room: RoomRef) -> None:
    waiting = asyncio.ensure_future(
        events_services.event_wait(
            room, agent_id="a", timeout_ms=30_000, limit=10, addressed_only=False
        )
    )
    await registered()
    event = await post(room, 7)
    got = await asyncio.wait_for(waiting, 30)
    assert got["timedOut"] is False and [e["payload"] for e in got["events"]] == [{"n": 7}]
    assert got["events"][0]["id"] == event["id"]


async def test_a_write_for_someone_else_does_not_end_an_addressed_wait(room: RoomRef) -> None:
    waiting = asyncio.ensure_future(
        events_services.event_wait(
            room, agent_id="bob", timeout_ms=30_000, limit=10, addressed_only=True
        )
    )
    await registered()
    await events_services.event_post(room, type_="dm", from_="x", to="carol", payload={})
    for _ in range(50):  # give the wake-up every chance to (wrongly) end the wait
        await asyncio.sleep(0)
    assert not waiting.done()
    mine = await events_services.event_post(room, type_="dm", from_="x", to="bob", payload={})
    got = await asyncio.wait_for(waiting, 30)
    assert [e["id"] for e in got["events"]] == [mine["id"]]


async def test_two_waits_of_one_agent_share_the_events_exactly_once(room: RoomRef) -> None:
    waits = [
        asyncio.ensure_future(
            events_services.event_wait(
                room, agent_id="a", timeout_ms=1_000, limit=10, addressed_only=False
            )
        )
        for _ in range(2)
    ]
    await registered(2)
    event = await post(room, 1)
    results = await asyncio.gather(*waits)
    delivered = [e["id"] for r in results for e in r["events"]]
    assert delivered == [event["id"]]
    assert sorted(r["timedOut"] for r in results) == [False, True]


async def test_three_hundred_waiters_share_one_connection_and_one_write_wakes_them_all(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    before = len(sync_redis.client_list())
    agents = [f"agent-{i}" for i in range(300)]
    waits = [
        asyncio.ensure_future(
            events_services.event_wait(
                room, agent_id=a, timeout_ms=30_000, limit=10, addressed_only=False
            )
        )
        for a in agents
    ]
    await registered(len(agents))
    # No connection per waiter: at most the (bounded) pool plus one subscriber, and while
    # all 300 wait, every pooled connection is free for other calls.
    assert len(sync_redis.client_list()) - before <= settings.REDIS_MAX_CONNECTIONS + 1
    plan = await asyncio.wait_for(plan_selectors.plan_get(room), 5)
    assert plan["tasks"] == []
    event = await post(room, 1)
    results = await asyncio.wait_for(asyncio.gather(*waits), 60)
    assert all(r["timedOut"] is False for r in results)
    assert {e["id"] for r in results for e in r["events"]} == {event["id"]}
    assert wakeups_store.wake_hub().waiting() == 0
