"""A room's shared variables (rooms/lua/vars/)."""

from __future__ import annotations

from typing import cast

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import AtQuota, awaited, event_args, event_keys, idle_ttl_ms, run_write


async def var_set(
    keys: RoomKeys,
    *,
    key: str,
    value: str,
    agent_id: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> str | AtQuota:
    """The shared_var_set event id, or AtQuota (ROOM_VARS_MAX) for a new key."""
    res = await run_write(
        keys,
        scripts.SET_SHARED_VAR_SCRIPT,
        [keys.vars, *event_keys(keys)],
        [key, value, agent_id, idle_ttl_ms(), *event_args(keys), int(settings.ROOM_VARS_MAX)],
        keyed=keyed,
        actor=actor,
    )
    return str(res[1]) if res[0] == "ok" else AtQuota(int(res[1]))


async def var_get(keys: RoomKeys, key: str) -> str | None:
    return cast("str | None", await awaited(client().hget(keys.vars, key)))


async def var_all(keys: RoomKeys) -> dict[str, str]:
    return cast("dict[str, str]", await awaited(client().hgetall(keys.vars)))
