"""The cluster as a managed Redis sells it (ElastiCache Serverless): every node refuses
CONFIG and sends no keyspace notifications (tests/redis_cluster.py starts them so), and a
node drops a subscriber that falls behind, which the sharded wake hub survives without
losing a wake-up."""

from __future__ import annotations

import asyncio

import pytest
import redis

from rooms.keys import RoomKeys
from rooms.store import wakeups as wakeups_store
from tests.conftest import new_room_id
from tests.redis_cluster import LocalCluster

pytestmark = pytest.mark.anyio

SUBSCRIBER_BUFFER = "pubsub 4kb 0 0"


def test_every_node_refuses_config_and_sends_no_keyspace_notifications(
    cluster: LocalCluster,
) -> None:
    for port in cluster.alive_ports():
        r = redis.Redis(port=port, socket_timeout=2)
        try:
            with pytest.raises(redis.ResponseError, match="unknown command"):
                r.config_get("notify-keyspace-events")
        finally:
            r.close()
        assert cluster.config_get(port, "notify-keyspace-events") == ""


def shard_subscribers(node: redis.Redis) -> int:
    return sum(1 for c in node.client_list() if int(c.get("ssub", 0)))


def room_on(cluster: LocalCluster, port: int) -> RoomKeys:
    """A new room whose slot the master on `port` serves."""
    r = redis.RedisCluster(host="127.0.0.1", port=port)
    try:
        while True:
            keys = RoomKeys(new_room_id("busy"))
            if int(r.get_node_from_key(keys.wake).port) == port:
                return keys
    finally:
        r.close()


async def test_a_shard_dropped_for_falling_behind_wakes_its_waiters_and_subscribes_again(
    cluster: LocalCluster, redis_client_closed: None
) -> None:
    quiet = RoomKeys(new_room_id("quiet"))
    port = cluster.master_of(quiet.wake)
    busy = room_on(cluster, port)
    hub = wakeups_store.wake_hub()
    assert isinstance(hub, wakeups_store.ShardedWakeHub)
    node = redis.Redis(port=port, socket_timeout=5, decode_responses=True)
    usual = cluster.config_get(port, "client-output-buffer-limit")
    cluster.config_set(port, "client-output-buffer-limit", SUBSCRIBER_BUFFER)
    try:
        busy_waiter = await hub.watch(busy.room_id)
        woken = await hub.watch(quiet.room_id)
        assert shard_subscribers(node) == 1

        # The hub's loop is busy (this synchronous flood runs on it) while the busy room's
        # writes pile up on the shard both rooms share: the node drops it, and the quiet
        # room's write meanwhile reaches nobody.
        sent = 0
        while shard_subscribers(node):
            assert sent < 200_000, "the node never dropped the shard"
            pipe = node.pipeline(transaction=False)
            for _ in range(1000):
                pipe.execute_command("SPUBLISH", busy.wake, f"{1_700_000_000_000 + sent}-0")
                sent += 1
            pipe.execute()
        assert node.execute_command("SPUBLISH", quiet.wake, "1700000000001-0") == 0

        # The waiter is not lost: the lost shard wakes its rooms' waiters, who re-read.
        await asyncio.wait_for(woken.wait(), 5)
        hub.unwatch(quiet.room_id, woken)
        hub.unwatch(busy.room_id, busy_waiter)

        # Its next watch subscribes again, and a write wakes it.
        again = await hub.watch(quiet.room_id)
        assert not again.is_set()
        assert shard_subscribers(node) == 1
        assert node.execute_command("SPUBLISH", quiet.wake, "1700000000002-0") == 1
        await asyncio.wait_for(again.wait(), 5)
        hub.unwatch(quiet.room_id, again)
    finally:
        cluster.config_set(port, "client-output-buffer-limit", usual)
        node.close()
