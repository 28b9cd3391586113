"""GET /health: 200 when every dependency answers, else 503 naming each one that does not.

Checked live (the result is reused for HEALTH_CACHE_SECONDS, so a load balancer polling
hard costs one round of checks, not one per poll), each check bounded by HEALTH_TIMEOUT, so
an outage is reported within a second and recovery is seen without a restart.

The background processes (HEALTH_PROCESSES: the Celery worker, its scheduler, the webhook
relay) are checked by the heartbeat each writes every PROCESS_HEARTBEAT_SECONDS: one older
than three of those fails. A web process gives them that long after its own start
("starting"), and none is checked while Celery runs eager, in the web process ("eager").
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from django.conf import settings
from django.db import connection

from rooms import clock
from rooms.store import engine as engine_store
from rooms.store import heartbeats as heartbeats_store
from rooms.store import signals as signals_store
from tenants.db import db_run

HEALTH_TIMEOUT = 0.8
HEALTH_CACHE_SECONDS = 0.25
_last: tuple[float, int, bytes] | None = None
# Heartbeats missed before a process counts as down, and the grace after this web process
# started (in heartbeat intervals).
HEARTBEATS_MISSED = 3
PROCESSES = ("worker", "scheduler", "relay")
_started_ms = clock.now_ms()


def _database_check() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


async def _database(timeout: float) -> str | None:
    try:
        await asyncio.wait_for(db_run(_database_check), timeout)
    except Exception as exc:  # any failure of the database is the answer
        return f"{type(exc).__name__}: {exc}"[:200] or "no answer"
    return None


async def _broker(timeout: float) -> str | None:
    url = str(settings.CELERY_BROKER_URL or "")
    if settings.CELERY_TASK_ALWAYS_EAGER or not url:
        return None
    if not url.startswith(("redis://", "rediss://", "redis+socket://", "unix://")):
        return None  # another kind of broker: its own tooling watches it
    return await signals_store.broker_health(url, timeout)


async def process_states(timeout: float) -> dict[str, tuple[str, bool]]:
    """Each background process /health requires: (what its check says, failing?). A
    heartbeat older than HEARTBEATS_MISSED intervals fails, unless this web process is
    itself younger than that. Empty when Redis does not answer (its own check says so)."""
    every = int(settings.PROCESS_HEARTBEAT_SECONDS)
    try:
        seen = await asyncio.wait_for(
            heartbeats_store.heartbeats_read(settings.HEALTH_PROCESSES), timeout
        )
    except Exception:  # the redis check reports the store itself
        return {}
    now = clock.now_ms()
    stale_ms = HEARTBEATS_MISSED * every * 1000
    states: dict[str, tuple[str, bool]] = {}
    for process, at in seen.items():
        if at is not None and now - at < stale_ms:
            states[process] = ("ok", False)
        elif now - _started_ms < stale_ms:
            states[process] = ("starting", False)
        elif at is None:
            states[process] = (f"no heartbeat (expected every {every} s)", True)
        else:
            ago = (now - at) // 1000
            states[process] = (f"last heartbeat {ago} s ago (expected every {every} s)", True)
    return states


async def _nothing() -> dict[str, tuple[str, bool]]:
    return {}


async def health() -> tuple[int, bytes]:
    """(status, JSON body)."""
    global _last
    now = time.monotonic()
    if _last is not None and now - _last[0] < HEALTH_CACHE_SECONDS:
        return _last[1], _last[2]
    eager = bool(settings.CELERY_TASK_ALWAYS_EAGER)
    redis_problem, db_problem, broker_problem, processes = await asyncio.gather(
        engine_store.store_health(HEALTH_TIMEOUT),
        _database(HEALTH_TIMEOUT),
        _broker(HEALTH_TIMEOUT),
        _nothing() if eager or not settings.HEALTH_PROCESSES else process_states(HEALTH_TIMEOUT),
    )
    checks: dict[str, str] = {
        "redis": redis_problem or "ok",
        "database": db_problem or "ok",
        "broker": broker_problem or ("eager" if eager else "ok"),
    }
    failing = [
        name
        for name, problem in (
            ("redis", redis_problem),
            ("database", db_problem),
            ("broker", broker_problem),
        )
        if problem
    ]
    for process in PROCESSES:
        said, failed = processes.get(process, ("eager" if eager else "not checked", False))
        checks[process] = said
        if failed:
            failing.append(process)
    body: dict[str, Any] = {"status": "unavailable" if failing else "ok", "checks": checks}
    if failing:
        body["failing"] = failing
    status = 503 if failing else 200
    encoded = json.dumps(body).encode()
    _last = (time.monotonic(), status, encoded)
    return status, encoded
