"""No command the store sends is longer than REDIS_ARGS_MAX (ElastiCache Serverless refuses
one of more than 3,999 arguments): tests/lanes.py fails a test that sends one, and the steps
whose length follows a room's size send theirs in runs. Here, those steps at their worst."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
from redis.connection import Connection

from rooms.keys import RoomKeys
from rooms.refs import RoomRef
from rooms.schemas import MAX_DEPENDS_ON
from rooms.search import GROUPS_MAX
from rooms.services import locks as locks_services
from rooms.store import bearers as bearers_store
from rooms.store.archives import SNAPSHOT_CHUNK
from rooms.store.connections import REDIS_ARGS_MAX, arguments_runs
from rooms.suggest import HINT_SAMPLE
from tests.lanes import too_long

pytestmark = pytest.mark.anyio

# Past what one command may carry, with room to spare for the command's own keys.
MANY = REDIS_ARGS_MAX + 100


def packed(*commands: tuple[Any, ...]) -> bytes:
    """The bytes redis-py sends for `commands` (a pipeline's, for more than one)."""
    conn = Connection()
    return b"".join(bytes(part) for part in conn.pack_commands(commands))


def test_the_suite_names_a_command_longer_than_redis_args_max() -> None:
    keys = [f"k{i}" for i in range(MANY)]
    assert too_long(packed(("UNLINK", *keys[: REDIS_ARGS_MAX - 1]))) == []
    assert too_long(packed(("UNLINK", *keys[:REDIS_ARGS_MAX]))) == [("UNLINK", REDIS_ARGS_MAX + 1)]
    # A script's keys and arguments count, and so does each command of a pipeline.
    evalsha = ("EVALSHA", "0" * 40, 2, "a", "b", *keys[: REDIS_ARGS_MAX - 4])
    assert too_long(packed(("PING",), evalsha, ("GET", "*5000\r\n"))) == [
        ("EVALSHA", REDIS_ARGS_MAX + 1)
    ]
    assert too_long(packed(("SET", "k", "*5000\r\n$1\r\n"))) == []


def test_runs_fit_one_command_each_and_keep_every_item_in_order() -> None:
    items = list(range(2 * REDIS_ARGS_MAX))
    runs = list(arguments_runs(items, beside=2))
    assert [x for run in runs for x in run] == items
    assert max(len(run) for run in runs) + 2 == REDIS_ARGS_MAX


async def test_a_room_holding_more_locks_than_one_command_takes_is_deleted_whole(
    room: RoomRef, settings: Any, sync_redis: redis.Redis
) -> None:
    settings.ROOM_LOCKS_MAX = MANY
    resources = [f"r{i}" for i in range(MANY)]
    for at in range(0, MANY, 200):
        await asyncio.gather(
            *(
                locks_services.lock_acquire(room, resource=r, agent_id="a", ttl_seconds=300)
                for r in resources[at : at + 200]
            )
        )
    keys = room.keys
    assert sync_redis.zcard(keys.lock_index) == MANY

    await bearers_store.room_forget(keys)

    assert sync_redis.exists(keys.lock_index, keys.meta) == 0
    assert not any(sync_redis.exists(keys.lock(r)) for r in resources[:: MANY // 20])
    assert not sync_redis.exists(keys.lock(resources[-1]))


def test_commands_a_quota_or_a_constant_sizes_stay_within_redis_args_max(settings: Any) -> None:
    """The commands whose length follows a list that a quota or a constant bounds, at that
    bound: one HMGET of every kept handoff or review, of a task's depends_on, of the
    message hints; one EVALSHA replacing what a room inherits, or searching a query's
    groups; the archives' chunks and their load."""
    parts = len(RoomKeys("r").snapshot_parts())
    longest = {
        "HMGET handoffs (ROOM_HANDOFFS_MAX)": 2 + settings.ROOM_HANDOFFS_MAX,
        "HMGET reviews (ROOM_REVIEWS_MAX)": 2 + settings.ROOM_REVIEWS_MAX,
        "HMGET task_titles (MAX_DEPENDS_ON)": 2 + MAX_DEPENDS_ON,
        "HMGET messages (HINT_SAMPLE)": 2 + HINT_SAMPLE,
        "EVALSHA inherited_replace (ROOM_INHERITED_MAX)": 6 + 2 * settings.ROOM_INHERITED_MAX,
        "EVALSHA search (GROUPS_MAX)": 3 + 7 + 3 + GROUPS_MAX,
        "HSET/ZADD staged (SNAPSHOT_CHUNK)": 2 + 2 * SNAPSHOT_CHUNK,
        "EVALSHA load_room (snapshot parts)": 3 + 2 + 2 * parts + 6 + 5 * parts,
    }
    over = {what: n for what, n in longest.items() if n > REDIS_ARGS_MAX}
    assert not over, over
