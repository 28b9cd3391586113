"""The webhook door: POST a prepared, signed delivery to its receiver (tenants.webhooks
decides what to send and records what came of it)."""

from __future__ import annotations

import httpx
from django.conf import settings

from tenants import webhooks
from tenants.webhooks import Attempt

_http: httpx.Client | None = None


def _client() -> httpx.Client:
    """One pooled client per process: a fresh one per delivery costs ~20 ms of set-up."""
    global _http
    if _http is None:
        _http = httpx.Client(timeout=settings.WEBHOOK_TIMEOUT_SECONDS, follow_redirects=False)
    return _http


def webhook_deliver(delivery_id: int) -> Attempt:
    """One attempt at one delivery."""
    outgoing = webhooks.delivery_prepare(delivery_id)
    if isinstance(outgoing, Attempt):
        return outgoing
    try:
        response = _client().post(
            outgoing.url,
            content=outgoing.body,
            headers=outgoing.headers,
            timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
        )
    except httpx.HTTPError as exc:
        return webhooks.delivery_record(
            delivery_id, response_status=None, error=f"{type(exc).__name__}: {exc}"
        )
    return webhooks.delivery_record(delivery_id, response_status=response.status_code, error="")
