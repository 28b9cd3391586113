"""/health covers the background processes (issue 31, point 2): the Celery worker, its
scheduler and the webhook relay each write a heartbeat, and one that is stale or missing
past the web process's first intervals is a 503 naming it. Time is moved, not waited for."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from celery import signals

from config import celery as celery_config
from config import health
from mcp_gateway.relay import Relay
from rooms import clock
from rooms.keys import heartbeat
from rooms.store import heartbeats as heartbeats_store
from tests.conftest import redis_for_assertions

PROCESSES = ["worker", "scheduler", "relay"]


@pytest.fixture
def moved(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[datetime]]:
    """A clock the test moves, heartbeats checked (not eager), no answer cached, and no
    heartbeat left from another test."""
    now = [datetime.now(UTC)]
    clock.set_clock(lambda: now[0])
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = ""  # the broker has a check of its own
    settings.HEALTH_PROCESSES = PROCESSES
    settings.PROCESS_HEARTBEAT_SECONDS = 10
    monkeypatch.setattr(health, "_last", None)
    monkeypatch.setattr(health, "_started_ms", clock.now_ms())
    r = redis_for_assertions()
    for process in PROCESSES:  # one at a time: on a cluster they are in different slots
        r.delete(heartbeat(process))
    try:
        yield now
    finally:
        clock.set_clock(None)
        for process in PROCESSES:
            r.delete(heartbeat(process))
        r.close()


async def answer(monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict[str, Any]]:
    monkeypatch.setattr(health, "_last", None)
    status, body = await health.health()
    return status, json.loads(body)


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_stale_heartbeat_is_a_503_naming_its_process(
    moved: list[datetime], monkeypatch: pytest.MonkeyPatch, redis_client_closed: None
) -> None:
    for process in PROCESSES:
        await heartbeats_store.heartbeat_write(process, clock.now_ms())
    moved[0] += timedelta(minutes=5)  # long past the web process's start
    for process in PROCESSES:
        await heartbeats_store.heartbeat_write(process, clock.now_ms())
    status, body = await answer(monkeypatch)
    assert status == 200 and body["status"] == "ok"
    assert {p: body["checks"][p] for p in PROCESSES} == dict.fromkeys(PROCESSES, "ok")

    moved[0] += timedelta(seconds=31)  # three intervals and a second
    await heartbeats_store.heartbeat_write("relay", clock.now_ms())
    status, body = await answer(monkeypatch)
    assert status == 503 and body["status"] == "unavailable"
    assert body["failing"] == ["worker", "scheduler"]
    assert body["checks"]["worker"] == "last heartbeat 31 s ago (expected every 10 s)"
    assert body["checks"]["relay"] == "ok" and body["checks"]["redis"] == "ok"

    await heartbeats_store.heartbeat_write("worker", clock.now_ms())
    await heartbeats_store.heartbeat_write("scheduler", clock.now_ms())
    status, body = await answer(monkeypatch)
    assert status == 200 and "failing" not in body


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_process_never_heard_from_is_starting_then_failing(
    moved: list[datetime], monkeypatch: pytest.MonkeyPatch, redis_client_closed: None
) -> None:
    await heartbeats_store.heartbeat_write("worker", clock.now_ms())
    moved[0] += timedelta(seconds=5)  # `make run`'s first seconds
    status, body = await answer(monkeypatch)
    assert status == 200
    assert body["checks"]["worker"] == "ok" and body["checks"]["scheduler"] == "starting"

    moved[0] += timedelta(seconds=26)
    await heartbeats_store.heartbeat_write("worker", clock.now_ms())
    status, body = await answer(monkeypatch)
    assert status == 503 and body["failing"] == ["scheduler", "relay"]
    assert body["checks"]["relay"] == "no heartbeat (expected every 10 s)"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_no_process_is_required_when_tasks_run_eagerly_or_none_is_asked_for(
    moved: list[datetime], settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved[0] += timedelta(minutes=5)  # no heartbeat at all, long after the start
    settings.HEALTH_PROCESSES = ["worker"]
    status, body = await answer(monkeypatch)
    assert status == 503 and body["failing"] == ["worker"]
    assert body["checks"]["scheduler"] == "not checked"

    settings.HEALTH_PROCESSES = []
    status, body = await answer(monkeypatch)
    assert status == 200 and body["checks"]["worker"] == "not checked"

    settings.HEALTH_PROCESSES = PROCESSES
    settings.CELERY_TASK_ALWAYS_EAGER = True
    status, body = await answer(monkeypatch)
    assert status == 200
    assert {p: body["checks"][p] for p in PROCESSES} == dict.fromkeys(PROCESSES, "eager")


def written(process: str, bound: float = 10.0) -> int:
    """The heartbeat `process` wrote, once there is one (a bounded wait on the store)."""
    r = redis_for_assertions()
    try:
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            raw = r.get(heartbeat(process))
            if raw is not None:
                return int(raw)
            time.sleep(0.05)
        raise AssertionError(f"no {process} heartbeat within {bound} s")
    finally:
        r.close()


def test_the_worker_writes_its_heartbeat_from_ready_to_shutdown(moved: list[datetime]) -> None:
    signals.worker_ready.send(sender=None)
    try:
        assert written("worker") == clock.now_ms()
    finally:
        signals.worker_shutdown.send(sender=None)


def test_the_scheduler_writes_its_heartbeat_as_it_ticks(
    moved: list[datetime], tmp_path: Path
) -> None:
    beat = celery_config.Scheduler(
        app=celery_config.app, schedule_filename=str(tmp_path / "schedule")
    )
    try:
        wait = beat.tick()
        assert written("scheduler") == clock.now_ms()
        # It wakes for its next heartbeat even when no task is due before then.
        assert 0 < wait <= 10
    finally:
        beat.close()


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_relay_writes_its_heartbeat_while_it_runs(
    moved: list[datetime], redis_client_closed: None
) -> None:
    task = asyncio.get_running_loop().create_task(Relay().run())
    try:
        assert await asyncio.to_thread(written, "relay") == clock.now_ms()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
