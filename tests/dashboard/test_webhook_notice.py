"""The room page tells the team's operators when the room's webhooks are not being
delivered (issue 31, point 2): the worker or the relay is down (its heartbeat, as /health
reads it), deliveries are piling up or failing, a webhook was disabled."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from config import health
from rooms import clock
from rooms.keys import heartbeat
from rooms.store import engine as engine_store
from rooms.store import heartbeats as heartbeats_store
from tenants import services, webhooks
from tenants.models import Room, WebhookDelivery
from tests.conftest import new_room_id, redis_for_assertions
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store

NOTICE = 'class="notice webhook-notice"'


@pytest.fixture
def moved(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[datetime]]:
    """Heartbeats checked (Celery not eager) against a clock the test moves, long after the
    web process started."""
    now = [datetime.now(UTC)]
    clock.set_clock(lambda: now[0])
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.HEALTH_PROCESSES = ["worker", "scheduler", "relay"]
    settings.PROCESS_HEARTBEAT_SECONDS = 10
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    monkeypatch.setattr(health, "_started_ms", clock.now_ms() - 3_600_000)
    try:
        yield now
    finally:
        clock.set_clock(None)
        r = redis_for_assertions()
        for process in ("worker", "scheduler", "relay"):
            r.delete(heartbeat(process))
        r.close()


def beat(*processes: str) -> None:
    for process in processes:
        engine_store.run_sync(heartbeats_store.heartbeat_write, process, clock.now_ms())


def hooked_room(person: Person) -> Room:
    room = services.room_create(team=person.team, room_id=new_room_id("hooked"), actor="t")
    webhooks.webhook_create(room=room, url="http://127.0.0.1:9/hook", actor="t")
    return room


def page(person: Person, room: Room) -> str:
    response = person.client.get(f"/rooms/{room.room_id}/")
    assert response.status_code == 200
    return str(response.content.decode())


def test_the_room_page_says_its_webhooks_wait_while_the_worker_is_down(
    ann: Person, moved: list[datetime]
) -> None:
    room = hooked_room(ann)
    quiet = services.room_create(team=ann.team, room_id=new_room_id("quiet"), actor="t")
    beat("worker", "scheduler", "relay")
    assert NOTICE not in page(ann, room)

    moved[0] += timedelta(seconds=45)
    beat("scheduler", "relay")  # the worker died
    shown = page(ann, room)
    assert NOTICE in shown
    assert (
        "Webhooks are not being delivered: the Celery worker is not running, last heartbeat "
        "45 s ago (expected every 10 s). Deliveries wait until it runs again." in shown
    )
    assert "the webhook relay" not in shown
    assert NOTICE not in page(ann, quiet)  # no webhooks there: nothing waits

    beat("worker")
    assert NOTICE not in page(ann, room)


def test_the_room_page_names_late_and_failing_deliveries_and_a_disabled_webhook(
    ann: Person, moved: list[datetime]
) -> None:
    room = hooked_room(ann)
    beat("worker", "scheduler", "relay")
    hook = room.webhooks.get()
    delivery = WebhookDelivery.objects.create(webhook=hook, event_id="1-0", event={"id": "1-0"})
    assert NOTICE not in page(ann, room)  # just made: on its way

    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        created_at=timezone.now() - timedelta(minutes=5)
    )
    type(hook).objects.filter(pk=hook.pk).update(failed_attempts=3)
    shown = page(ann, room)
    assert "1 webhook delivery waiting for over 2 minutes." in shown
    assert "Deliveries to http://127.0.0.1:9/hook are failing (3 attempts in a row)." in shown

    webhooks.webhook_disable(hook=hook, reason="5 deliveries in a row failed", actor="t")
    shown = page(ann, room)
    assert "A webhook to http://127.0.0.1:9/hook was disabled: 5 deliveries in a row failed." in (
        shown
    )
    assert "waiting for over" not in shown  # a disabled webhook's deliveries wait for nothing
