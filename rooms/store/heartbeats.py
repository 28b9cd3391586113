"""Heartbeats of the background processes (the Celery worker, its scheduler, the webhook
relay): each writes when it last was alive, and /health reads them (config/health.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rooms.keys import heartbeat
from rooms.store.connections import client
from rooms.store.engine import awaited

# Kept long after a process stops, so /health can say how long ago it was last seen
# rather than only that it never was.
_KEPT_MS = 7 * 86_400_000


async def heartbeat_write(process: str, now_ms: int) -> None:
    await awaited(client().set(heartbeat(process), now_ms, px=_KEPT_MS))


async def heartbeats_read(processes: Sequence[str]) -> dict[str, int | None]:
    """When each process last wrote its heartbeat (ms since the epoch), None for never. One
    GET each: on a cluster the keys live in different slots."""
    r = client()
    found = await asyncio.gather(*(awaited(r.get(heartbeat(p))) for p in processes))
    return {
        p: int(raw) if raw is not None else None for p, raw in zip(processes, found, strict=True)
    }
