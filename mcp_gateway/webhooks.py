"""The webhook door: POST a prepared, signed delivery to the address tenants.webhooks
vetted for it (the URL's host stays in the Host header and the TLS name), holding one of
its team's delivery slots, and hand back what came of it."""

from __future__ import annotations

import secrets

import httpx
from django.conf import settings
from prometheus_client import Counter

from rooms import clock
from rooms.store import budgets as budgets_store
from rooms.store import engine as engine_store
from tenants import webhooks
from tenants.webhooks import Attempt, Outgoing

_http: httpx.Client | None = None
WEBHOOK_FAILURES = Counter("roomservice_webhook_failures", "Webhook delivery attempts that failed.")
SLOT_RETRY_SECONDS = 2


def _client() -> httpx.Client:
    """One pooled client per process: a fresh one per delivery costs ~20 ms of set-up."""
    global _http
    if _http is None:
        _http = httpx.Client(timeout=settings.WEBHOOK_TIMEOUT_SECONDS, follow_redirects=False)
    return _http


def _post(outgoing: Outgoing) -> tuple[int | None, str]:
    target = outgoing.target
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    try:
        response = _client().post(
            target.dial_url(),
            content=outgoing.body,
            headers=outgoing.headers,
            timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            extensions=extensions,
        )
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return response.status_code, ""


def webhook_deliver(delivery_id: int) -> Attempt:
    """One attempt at one delivery."""
    outgoing = webhooks.delivery_prepare(delivery_id)
    if isinstance(outgoing, Attempt):
        return outgoing
    bucket = f"deliveries:team:{outgoing.team_id}"
    slot = secrets.token_hex(8)
    lease_ms = (int(settings.WEBHOOK_TIMEOUT_SECONDS) + 5) * 1000
    if not engine_store.run_sync(
        budgets_store.slot_admit,
        bucket,
        slot,
        now_ms=clock.now_ms(),
        lease_ms=lease_ms,
        cap=int(settings.WEBHOOK_TEAM_CONCURRENCY),
    ):
        return webhooks.delivery_defer(delivery_id, SLOT_RETRY_SECONDS)
    try:
        status, error = _post(outgoing)
    finally:
        engine_store.run_sync(budgets_store.slot_release, bucket, slot)
    if status is None or not 200 <= status < 300:
        WEBHOOK_FAILURES.inc()
    return webhooks.delivery_record(delivery_id, response_status=status, error=error)
