"""A room's shared variables (rooms/lua/vars/)."""

from __future__ import annotations

from typing import cast

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import AtQuota, _awaited, _event_args, _event_keys, _run_write, _ttl


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
    res = await _run_write(
        keys,
        scripts.SET_SHARED_VAR_SCRIPT,
        [keys.vars, *_event_keys(keys)],
        [key, value, agent_id, _ttl(), *_event_args(keys), int(settings.ROOM_VARS_MAX)],
        keyed=keyed,
        actor=actor,
    )
    return str(res[1]) if int(res[0]) == 1 else AtQuota(int(res[1]))


async def var_get(keys: RoomKeys, key: str) -> str | None:
    return cast("str | None", await _awaited(client().hget(keys.vars, key)))


async def var_all(keys: RoomKeys) -> dict[str, str]:
    return cast("dict[str, str]", await _awaited(client().hgetall(keys.vars)))
