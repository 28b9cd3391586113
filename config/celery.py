"""The Celery app: webhook deliveries and the retry of pending Redis clean-ups.

The worker and its scheduler (beat) each write a heartbeat every PROCESS_HEARTBEAT_SECONDS
(rooms/store/heartbeats.py), which /health reads: a worker that died at start, or a beat
that never ran, is a 503 naming it rather than webhooks that silently never arrive.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from celery import Celery, signals
from celery.beat import PersistentScheduler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("roomservice")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["mcp_gateway"])

log = logging.getLogger(__name__)


def heartbeat(process: str) -> None:
    """Write `process`'s heartbeat once; a store that does not answer is logged, not raised
    (the process keeps doing its work, and /health reports the missing heartbeat)."""
    from rooms import clock
    from rooms.store import engine as engine_store
    from rooms.store import heartbeats as heartbeats_store

    try:
        engine_store.run_sync(heartbeats_store.heartbeat_write, process, clock.now_ms())
    except Exception:
        log.warning("could not write the %s heartbeat", process, exc_info=True)


def _interval() -> float:
    from django.conf import settings

    return float(settings.PROCESS_HEARTBEAT_SECONDS)


class Scheduler(PersistentScheduler):  # type: ignore[misc]  # Celery is untyped
    """Beat's scheduler, which also writes the scheduler's heartbeat as it ticks, and wakes
    for it when its next task is further away than that."""

    _heartbeat_due = 0.0

    def tick(self, *args: Any, **kwargs: Any) -> float:
        now = time.monotonic()
        if now >= self._heartbeat_due:
            heartbeat("scheduler")
            self._heartbeat_due = now + _interval()
        return min(float(super().tick(*args, **kwargs)), self._heartbeat_due - now)


_worker_stop = threading.Event()


def _worker_heartbeats(**kwargs: Any) -> None:
    """From the moment the worker consumes tasks until it shuts down, a thread writes its
    heartbeat (a thread, not a task: it must not wait behind slow deliveries)."""
    _worker_stop.clear()

    def beat() -> None:
        heartbeat("worker")
        while not _worker_stop.wait(_interval()):
            heartbeat("worker")

    threading.Thread(target=beat, name="worker-heartbeat", daemon=True).start()


def _worker_heartbeats_stop(**kwargs: Any) -> None:
    _worker_stop.set()


# The process that imported this module: in the beat process a worker forks (`--beat`), that
# worker, whose pid the fork does not change here.
_IMPORTED_BY = os.getpid()


def _beat_dies_with_worker(**kwargs: Any) -> None:
    """The beat process a worker forked (`--beat`) dies with that worker, however it dies: a
    worker killed outright (kill -9, the OOM killer, `make run`'s own death) cannot stop it,
    and an orphaned beat would go on scheduling for a worker that is gone. If the worker died
    between its fork and this (billiard names no parent to check), this ends it at once."""
    from config.lifecycle import die_with_parent

    die_with_parent(_IMPORTED_BY)


signals.worker_ready.connect(_worker_heartbeats)
signals.worker_shutdown.connect(_worker_heartbeats_stop)
signals.beat_embedded_init.connect(_beat_dies_with_worker)
