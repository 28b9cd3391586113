"""Rooms expire after the idle TTL, and every use refreshes it (docs/protocol.md
"Lifecycle and durable rooms")."""

from __future__ import annotations

import pytest
import redis

from rooms.refs import RoomRef
from rooms.services import context as context_services
from rooms.services import events as events_services
from rooms.services import locks as locks_services
from rooms.services import plan as plan_services
from rooms.services import presence as presence_services
from rooms.services import vars as vars_services
from tenants.access import room_access
from tenants.capabilities import Caller

pytestmark = pytest.mark.anyio
THIRTY_DAYS_MS = 30 * 24 * 3600 * 1000


async def test_every_room_key_carries_the_idle_ttl_and_use_refreshes_it(
    room: RoomRef, team_a: Caller, sync_redis: redis.Redis
) -> None:
    task = await plan_services.task_add(
        room, title="t", description="", depends_on=[], priority=None, agent_id="a"
    )
    await plan_services.task_update(
        room,
        task_id=task["id"],
        status="done",
        owner_given=False,
        owner=None,
        note="n",
        description=None,
        agent_id="a",
    )
    await context_services.context_write(
        room, type_="note", summary="s", consuming_agents=["b"], payload={"text": "x"}, author="a"
    )
    await events_services.event_take_unread(room, agent_id="a", limit=10, addressed_only=False)
    await presence_services.presence_heartbeat(room, agent_id="a")
    await vars_services.var_set(room, key="port", value="3000", agent_id="a")
    await locks_services.lock_acquire(room, resource="plan", agent_id="a", ttl_seconds=30)

    keys = [k for k in room.keys.durable() if sync_redis.exists(k)]
    assert len(keys) >= 12
    for key in keys:
        assert THIRTY_DAYS_MS - 60_000 < sync_redis.pttl(key) <= THIRTY_DAYS_MS, key

    # Shorten them, as if the room had sat unused; the next access puts them back.
    for key in keys:
        sync_redis.pexpire(key, 5_000)
    await room_access(team_a, room.room_id, write=False)
    for key in keys:
        assert sync_redis.pttl(key) > THIRTY_DAYS_MS - 60_000, key
