"""Celery tasks: thin doors onto tenants.webhooks (relay, delivery, upkeep),
tenants.purges and rooms.services.plan.claims_sweep."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from mcp_gateway.webhooks import webhook_deliver as deliver
from rooms.services import plan as plan_services
from rooms.store import engine as engine_store
from tenants import archives, purges, webhooks


@shared_task(name="webhooks.relay", ignore_result=True)
def webhook_relay(room_id: str) -> None:
    for delivery_id in webhooks.webhook_relay(room_id):
        webhook_deliver.delay(delivery_id)


@shared_task(name="webhooks.deliver", bind=True, max_retries=None, ignore_result=True)
def webhook_deliver(self: Any, delivery_id: int) -> None:
    attempt = deliver(delivery_id)
    if attempt.done:
        return
    if self.request.is_eager and not attempt.counted:
        # Run in-process, a retry would come at once, again and again: the delivery stays
        # pending with its next attempt time, and webhooks.resume picks it up.
        return
    raise self.retry(countdown=attempt.retry_in_seconds)


@shared_task(name="webhooks.resume", ignore_result=True)
def webhooks_resume() -> None:
    for delivery_id in webhooks.deliveries_due():
        webhook_deliver.delay(delivery_id)


@shared_task(name="webhooks.prune", ignore_result=True)
def webhooks_prune() -> None:
    webhooks.deliveries_prune()


@shared_task(name="purges.retry", ignore_result=True)
def purges_retry() -> None:
    purges.purges_retry()


@shared_task(name="claims.sweep", ignore_result=True)
def claims_sweep() -> None:
    engine_store.run_sync(plan_services.claims_sweep)


@shared_task(name="archives.sweep", ignore_result=True)
def archives_sweep() -> None:
    archives.archives_sweep()
