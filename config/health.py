"""GET /health: 200 when every dependency answers, else 503 naming each one that does not.

Checked live (the result is reused for HEALTH_CACHE_SECONDS, so a load balancer polling
hard costs one round of checks, not one per poll), each check bounded by HEALTH_TIMEOUT, so
an outage is reported within a second and recovery is seen without a restart.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from django.conf import settings
from django.db import connection

from rooms import store
from tenants.db import db_run

HEALTH_TIMEOUT = 0.8
HEALTH_CACHE_SECONDS = 0.25
_last: tuple[float, int, bytes] | None = None


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
    return await store.broker_health(url, timeout)


async def health() -> tuple[int, bytes]:
    """(status, JSON body)."""
    global _last
    now = time.monotonic()
    if _last is not None and now - _last[0] < HEALTH_CACHE_SECONDS:
        return _last[1], _last[2]
    redis_problem, db_problem, broker_problem = await asyncio.gather(
        store.store_health(HEALTH_TIMEOUT),
        _database(HEALTH_TIMEOUT),
        _broker(HEALTH_TIMEOUT),
    )
    checks: dict[str, str] = {
        "redis": redis_problem or "ok",
        "database": db_problem or "ok",
        "broker": broker_problem or ("ok" if not settings.CELERY_TASK_ALWAYS_EAGER else "eager"),
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
    body: dict[str, Any] = {"status": "unavailable" if failing else "ok", "checks": checks}
    if failing:
        body["failing"] = failing
    status = 503 if failing else 200
    encoded = json.dumps(body).encode()
    _last = (time.monotonic(), status, encoded)
    return status, encoded
