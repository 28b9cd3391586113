"""Celery tasks: thin doors onto tenants.webhooks (relay, delivery) and tenants.purges."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from mcp_gateway.webhooks import webhook_deliver as deliver
from tenants import purges, webhooks


@shared_task(name="webhooks.relay", ignore_result=True)
def webhook_relay(room_id: str) -> None:
    for delivery_id in webhooks.webhook_relay(room_id):
        webhook_deliver.delay(delivery_id)


@shared_task(name="webhooks.deliver", bind=True, max_retries=None, ignore_result=True)
def webhook_deliver(self: Any, delivery_id: int) -> None:
    attempt = deliver(delivery_id)
    if not attempt.done:
        raise self.retry(countdown=attempt.retry_in_seconds)


@shared_task(name="purges.retry", ignore_result=True)
def purges_retry() -> None:
    purges.purges_retry()
