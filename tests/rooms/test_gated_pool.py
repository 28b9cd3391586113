"""The store's pool (rooms.store.connections.GatedPool): past max_connections callers wait
for a connection, at most its timeout, then are told no connection is available; every
connection handed out is handed back, whatever happened to the command."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from django.conf import settings

from rooms.store.connections import GatedPool

# The pool of one Redis: a cluster's client is GatedCluster (skipped on the cluster run).
pytestmark = [pytest.mark.anyio, pytest.mark.single_redis]


def _pool(max_connections: int, timeout: float) -> GatedPool:
    url = str(settings.REDIS_URL)
    return GatedPool.from_url(url, max_connections=max_connections, timeout=timeout)


async def _taken(pool: GatedPool) -> None:
    """Returns once every connection of the pool is handed out (a bounded wait)."""
    async with asyncio.timeout(5):
        while pool._gate._value:
            await asyncio.sleep(0)


async def test_callers_past_the_limit_wait_for_a_connection() -> None:
    pool = _pool(2, 5)
    r = aioredis.Redis.from_pool(pool)
    try:
        started = asyncio.get_running_loop().time()
        # 20 blocking commands of 0.1 s on 2 connections: they queue, none fails.
        results = await asyncio.gather(*(r.blpop(["gated-pool-nothing"], 0.1) for _ in range(20)))
        assert results == [None] * 20
        assert asyncio.get_running_loop().time() - started >= 0.9
        assert len(pool._in_use_connections) == 0 and pool._gate._value == 2
    finally:
        await r.aclose()


async def test_a_caller_that_waits_too_long_is_told_so() -> None:
    pool = _pool(1, 0.2)
    r = aioredis.Redis.from_pool(pool)
    try:
        holder = asyncio.ensure_future(r.blpop(["gated-pool-nothing"], 1))
        await _taken(pool)
        with pytest.raises(aioredis.ConnectionError, match="No connection available"):
            await r.ping()
        await holder
        assert await r.ping() is True  # the slot came back
        assert pool._gate._value == 1
    finally:
        await r.aclose()


async def test_a_cancelled_command_gives_its_connection_back() -> None:
    pool = _pool(1, 5)
    r = aioredis.Redis.from_pool(pool)
    try:
        waiting = asyncio.ensure_future(r.blpop(["gated-pool-nothing"], 5))
        await _taken(pool)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await asyncio.wait_for(r.ping(), 2) is True
        assert pool._gate._value == 1
    finally:
        await r.aclose()
