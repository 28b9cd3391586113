"""A wake hub that falls behind is dropped by Redis (client-output-buffer-limit pubsub, as a
managed Redis sets it and nobody can change) and comes back without losing a wake-up: its
waiters re-read once it has subscribed again, and later writes wake new waiters.

On a private redis-server of the test's own, whose subscribers may queue 4 kB at most."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from pytest_django.fixtures import Settings

from config.embedded_redis import EmbeddedRedis
from rooms.keys import RoomKeys
from rooms.store.connections import pubsub_client_forget
from rooms.store.wakeups import WakeHub
from tests.conftest import new_room_id, on_cluster

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(on_cluster(), reason="one Redis; tests/cluster has the sharded hub's"),
]

SUBSCRIBER_BUFFER = "pubsub 4kb 0 0"


@pytest.fixture
def tight_redis(tmp_path: Path) -> Iterator[redis.Redis]:
    """A redis-server of this test's own that drops a subscriber 4 kB behind."""
    server = EmbeddedRedis(folder=tmp_path / "redis", persistent=False)
    server.start()
    r = redis.Redis(unix_socket_path=str(server.socket), decode_responses=True)
    r.config_set("client-output-buffer-limit", SUBSCRIBER_BUFFER)
    try:
        yield r
    finally:
        r.close()
        server.stop()


def pattern_subscribers(r: redis.Redis) -> int:
    return sum(1 for c in r.client_list() if int(c.get("psub", 0)))


def falls_behind(r: redis.Redis, channel: str) -> int:
    """Publish wake-ups to `channel` (event ids, as writes do) while the caller's event loop
    is busy with this very call, until Redis has dropped the subscriber that cannot read
    them; returns how many it took."""
    sent = 0
    while pattern_subscribers(r):
        assert sent < 200_000, "Redis never dropped the subscriber"
        pipe = r.pipeline(transaction=False)
        for _ in range(1000):
            pipe.publish(channel, f"{1_700_000_000_000 + sent}-0")
            sent += 1
        pipe.execute()
    return sent


async def test_a_hub_dropped_for_falling_behind_wakes_its_waiter_and_subscribes_again(
    tight_redis: redis.Redis, settings: Settings
) -> None:
    settings.REDIS_URL = f"unix://{tight_redis.get_connection_kwargs()['path']}"
    settings.REDIS_CLUSTER = False
    await pubsub_client_forget()
    quiet, busy = RoomKeys(new_room_id("quiet")), RoomKeys(new_room_id("busy"))
    hub = WakeHub()
    try:
        # The hub's first subscription wakes whoever waits already (they re-read): a
        # waiter armed once it is live is set by a write alone.
        hub.unwatch(quiet.room_id, await hub.watch(quiet.room_id))
        woken = await hub.watch(quiet.room_id)
        assert not woken.is_set()
        assert pattern_subscribers(tight_redis) == 1
        before = int(tight_redis.info("stats").get("client_output_buffer_limit_disconnections", 0))

        # The hub's loop is busy (this synchronous flood runs on it) while another room's
        # writes pile up: Redis drops the hub, and the quiet room's write meanwhile reaches
        # nobody.
        assert falls_behind(tight_redis, busy.wake) > 0
        assert tight_redis.publish(quiet.wake, "1700000000001-0") == 0
        after = tight_redis.info("stats").get("client_output_buffer_limit_disconnections")
        if after is not None:  # Redis 7 counts them; 6.2 only logs them
            assert int(after) == before + 1

        # The waiter is not lost: the hub wakes it when its subscription is lost (its read
        # then says whether Redis is away), and again once it has subscribed again.
        await asyncio.wait_for(woken.wait(), 5)
        hub.unwatch(quiet.room_id, woken)
        async with asyncio.timeout(5):
            while pattern_subscribers(tight_redis) != 1:
                await asyncio.sleep(0.01)
            while (again := await hub.watch(quiet.room_id)).is_set():
                hub.unwatch(quiet.room_id, again)  # armed before the resubscription's wake
                await asyncio.sleep(0.01)
        assert tight_redis.publish(quiet.wake, "1700000000002-0") == 1
        await asyncio.wait_for(again.wait(), 5)
        hub.unwatch(quiet.room_id, again)
    finally:
        await hub.close()
        await pubsub_client_forget()
