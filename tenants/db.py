"""Reaching the ORM from the async hot path (a miss in Redis) without leaking connections.

`sync_to_async(thread_sensitive=False)` runs on a pool of worker threads that no request
cycle ever cleans up, so each call here closes its thread's connection when it is done
(or keeps it, with CONN_MAX_AGE > 0, until it is too old) — as Django does per request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

P = ParamSpec("P")
T = TypeVar("T")


async def db_run(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    def call() -> T:
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return await sync_to_async(call, thread_sensitive=False)()
