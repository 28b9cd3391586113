"""Service signals: revocations and webhook changes published to every process (each hears
them through wakeups.signal_hub), and the Celery broker's health."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from rooms.keys import revocations_channel, webhooks_channel
from rooms.store.connections import StoreDown, client
from rooms.store.engine import awaited


async def revocation_publish(refs: list[str]) -> None:
    """Tell every process that these credentials' live uses must be checked again now."""
    r = client()
    for ref in refs:
        await r.execute_command("PUBLISH", revocations_channel(), ref)


async def webhooks_changed_publish(room_id: str) -> None:
    await client().execute_command("PUBLISH", webhooks_channel(), room_id)


async def broker_health(url: str, timeout: float) -> str | None:
    """None when the Celery broker at `url` (a Redis URL) answers a PING in time."""
    broker = aioredis.Redis.from_url(
        url.replace("redis+socket://", "unix://"),
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
    )
    try:
        await asyncio.wait_for(awaited(broker.ping()), timeout)
    except StoreDown as exc:
        return f"{type(exc).__name__}: {exc}"[:200] or "no answer"
    finally:
        await broker.aclose()
    return None
