"""Webhooks (seeds/001 "webhook wake-up"): register a URL per room, and every matching
event is POSTed to it, signed with HMAC-SHA256 over "<timestamp>.<body>".

The relay (woken by the room's own wake channel: mcp_gateway/relay.py) reads the room's
stream after each webhook's cursor, so nothing is skipped when a worker was down; a unique
(webhook, event) row makes each delivery happen once however many relays run. Deliveries
retry with exponential backoff and a webhook that keeps failing is disabled. The SSRF guard
refuses receivers on private, loopback, link-local (cloud metadata) and reserved addresses
unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is on. This module holds the rules and the records;
the HTTP request itself is made by the agent-facing door (mcp_gateway/webhooks.py).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from rooms import store
from rooms.keys import RoomKeys
from rooms.records import event_from_entry
from tenants import errors, services
from tenants.credentials import WEBHOOK_PREFIX
from tenants.models import Room, Webhook, WebhookDelivery

log = logging.getLogger(__name__)
SIGNATURE_HEADER = "X-Roomservice-Signature"
TIMESTAMP_HEADER = "X-Roomservice-Timestamp"
DELIVERY_HEADER = "X-Roomservice-Delivery"
EVENT_HEADER = "X-Roomservice-Event"
URL_REFUSED = "Webhook URL refused: {reason}."
RELAY_BATCH = 500


# --- The SSRF guard -----------------------------------------------------------------------


def url_refusal(url: str) -> str | None:
    """Why this receiver may not be called, or None. Checked at registration and again at
    every delivery (a name can start resolving elsewhere)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "only http(s) URLs with a host"
    if parts.username or parts.password:
        return "credentials in the URL"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "a port out of range"
    try:
        parts.hostname.encode("idna")
    except UnicodeError:
        return "a host name that cannot be encoded"
    if settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS:
        return None
    try:
        infos = socket.getaddrinfo(parts.hostname, port)
    except (socket.gaierror, UnicodeError):
        return f"{parts.hostname} does not resolve"
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])  # drop an IPv6 zone
        if (
            address.is_private
            or address.is_loopback
            or address.is_link_local
            or address.is_reserved
            or address.is_multicast
            or address.is_unspecified
        ):
            return f"{parts.hostname} resolves to a non-public address ({address})"
    return None


# --- Registration ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MintedWebhook:
    webhook: Webhook
    secret: str  # shown once


def webhook_create(
    *,
    room: Room,
    url: str,
    agent_filter: str = "",
    event_types: list[str] | None = None,
    actor: str,
    created_by: User | None = None,
) -> MintedWebhook:
    reason = url_refusal(url)
    if reason:
        raise errors.NotPermittedError(URL_REFUSED.format(reason=reason))
    newest = store.run_sync(
        store.event_range, RoomKeys(room.room_id), start="-", end="+", count=1, reverse=True
    )
    ms, seq = _split(newest[0][0]) if newest else (0, 0)
    with transaction.atomic():
        hook, secret = services.credential_mint(
            Webhook,
            prefix=WEBHOOK_PREFIX,
            keep_secret=True,
            room=room,
            url=url,
            agent_filter=agent_filter,
            event_types=list(event_types or []),
            cursor_ms=ms,
            cursor_seq=seq,
            created_by=created_by,
        )
        services.audit_record(
            team=room.team,
            actor=actor,
            action="webhook.create",
            object_type="webhook",
            object_id=hook.pk,
            detail={"room": room.room_id, "url": url},
        )
        _changed_after_commit(room.room_id)
    return MintedWebhook(webhook=hook, secret=secret)


def _changed_after_commit(room_id: str) -> None:
    """Tell the relay (every process running one) to (re)consider this room's webhooks."""

    def publish() -> None:
        try:
            store.run_sync(store.webhooks_changed_publish, room_id)
        except Exception:  # the relay also re-reads its rooms periodically
            log.exception("could not tell the relay that webhooks changed")

    transaction.on_commit(publish)


def webhook_disable(*, hook: Webhook, reason: str, actor: str) -> Webhook:
    if hook.active:
        hook.active = False
        hook.disabled_reason = reason[:300]
        hook.save(update_fields=["active", "disabled_reason"])
        services.audit_record(
            team=hook.room.team,
            actor=actor,
            action="webhook.disable",
            object_type="webhook",
            object_id=hook.pk,
            detail={"reason": reason[:300]},
        )
        _changed_after_commit(hook.room.room_id)
    return hook


def rooms_with_webhooks() -> list[str]:
    """The ids of every room with an active webhook (what the relay listens to)."""
    return list(
        Webhook.objects.filter(active=True).values_list("room__room_id", flat=True).distinct()
    )


# --- Relay: events -> delivery rows ------------------------------------------------------------


def _split(event_id: str) -> tuple[int, int]:
    ms, seq = event_id.split("-", 1)
    return int(ms), int(seq)


def _matches(hook: Webhook, event: Mapping[str, Any]) -> bool:
    if hook.event_types and event["type"] not in hook.event_types:
        return False
    return not hook.agent_filter or event.get("to") in ("all", hook.agent_filter)


def webhook_relay(room_id: str) -> list[int]:
    """Create the deliveries for every event after each active webhook's cursor; returns
    the ids of deliveries this call created (each to be sent once)."""
    created: list[int] = []
    keys = RoomKeys(room_id)
    for hook in Webhook.objects.filter(room__room_id=room_id, active=True):
        cursor = f"{hook.cursor_ms}-{hook.cursor_seq}"
        while True:
            entries = store.run_sync(
                store.event_range,
                keys,
                start=f"({cursor}",
                end="+",
                count=RELAY_BATCH,
                reverse=False,
            )
            for entry in entries:
                event = event_from_entry(entry)
                if not _matches(hook, event):
                    continue
                try:
                    with transaction.atomic():
                        delivery = WebhookDelivery.objects.create(
                            webhook=hook, event_id=event["id"], event=event
                        )
                except IntegrityError:
                    continue  # another relay got there first
                created.append(delivery.pk)
            if not entries:
                break
            cursor = entries[-1][0]
            ms, seq = _split(cursor)
            Webhook.objects.filter(pk=hook.pk).filter(
                Q(cursor_ms__lt=ms) | Q(cursor_ms=ms, cursor_seq__lt=seq)
            ).update(cursor_ms=ms, cursor_seq=seq)
            if len(entries) < RELAY_BATCH:
                break
    return created


# --- Delivery: what to send, and what came of it (the door sends it) ----------------------------


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """What X-Roomservice-Signature carries: sha256=<hex HMAC of "<timestamp>.<body>">."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


@dataclass(frozen=True, slots=True)
class Attempt:
    done: bool  # delivered, or failed for good: no retry
    retry_in_seconds: int = 0


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One signed POST, ready to send."""

    delivery_id: int
    url: str
    body: bytes
    headers: dict[str, str]


def delivery_prepare(delivery_id: int) -> Outgoing | Attempt:
    """The request to make for a pending delivery, or the Attempt that ends it without one
    (already sent, webhook disabled, receiver refused by the SSRF guard)."""
    delivery = WebhookDelivery.objects.select_related(
        "webhook", "webhook__room", "webhook__room__team"
    ).get(pk=delivery_id)
    hook = delivery.webhook
    if delivery.status != WebhookDelivery.Status.PENDING:
        return Attempt(done=True)
    if not hook.active:
        return _give_up(delivery, "webhook disabled", count_failure=False)
    refusal = url_refusal(hook.url)
    if refusal:
        return _give_up(delivery, URL_REFUSED.format(reason=refusal), count_failure=True)
    body = json.dumps(delivery.event, ensure_ascii=False, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Roomservice-Webhooks/1",
        SIGNATURE_HEADER: signature(hook.secret, timestamp, body),
        TIMESTAMP_HEADER: timestamp,
        DELIVERY_HEADER: str(delivery.pk),
        EVENT_HEADER: delivery.event_id,
    }
    return Outgoing(delivery_id=delivery.pk, url=hook.url, body=body, headers=headers)


def delivery_record(delivery_id: int, *, response_status: int | None, error: str) -> Attempt:
    """What one POST came to: delivered (a 2xx), a retry later, or failed for good."""
    delivery = WebhookDelivery.objects.select_related("webhook", "webhook__room__team").get(
        pk=delivery_id
    )
    hook = delivery.webhook
    delivery.attempts += 1
    delivery.response_status = response_status
    ok = not error and response_status is not None and 200 <= response_status < 300
    if ok:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = timezone.now()
        delivery.last_error = ""
        delivery.save()
        if hook.consecutive_failures:
            Webhook.objects.filter(pk=hook.pk).update(consecutive_failures=0)
        return Attempt(done=True)
    delivery.last_error = (error or f"HTTP {response_status}")[:500]
    if delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
        return _give_up(delivery, delivery.last_error, count_failure=True)
    delivery.save()
    return Attempt(done=False, retry_in_seconds=min(2**delivery.attempts, 600))


def _give_up(delivery: WebhookDelivery, error: str, *, count_failure: bool) -> Attempt:
    delivery.status = WebhookDelivery.Status.FAILED
    delivery.last_error = error[:500]
    delivery.save()
    hook = delivery.webhook
    if count_failure:
        hook.consecutive_failures += 1
        hook.save(update_fields=["consecutive_failures"])
        if hook.consecutive_failures >= settings.WEBHOOK_DISABLE_AFTER:
            webhook_disable(
                hook=hook,
                reason=f"{hook.consecutive_failures} deliveries in a row failed: {error}",
                actor="system",
            )
    return Attempt(done=True)
