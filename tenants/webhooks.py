"""Webhooks (Agent Room's "webhook wake-up"; docs/webhooks.md): register a URL per room,
and every matching event is POSTed to it, signed with HMAC-SHA256 over "<timestamp>.<body>".

The relay (woken by the room's own wake channel: mcp_gateway/relay.py) reads the room's
stream after each webhook's cursor, so nothing is skipped when a worker was down; a unique
(webhook, event) row makes each delivery happen once however many relays run. Deliveries
retry with exponential backoff and a webhook that keeps failing is disabled. The SSRF guard
refuses receivers on private, loopback, link-local (cloud metadata) and reserved addresses
unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is on. This module holds the rules and the records;
the HTTP request itself is made by the agent-facing door (mcp_gateway/webhooks.py).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import hmac
import ipaddress
import json
import logging
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rooms import clock, traces
from rooms.keys import RoomKeys
from rooms.quotas import quota_error, quota_limit
from rooms.records import event_addressed_to, event_from_entry
from rooms.results import Event
from rooms.store import engine as engine_store
from rooms.store import events as events_store
from rooms.store import signals as signals_store
from tenants import errors, services
from tenants.credentials import WEBHOOK_PREFIX
from tenants.models import Room, Webhook, WebhookDelivery

log = logging.getLogger(__name__)
SIGNATURE_HEADER = "X-Roomservice-Signature"
TIMESTAMP_HEADER = "X-Roomservice-Timestamp"
DELIVERY_HEADER = "X-Roomservice-Delivery"
EVENT_HEADER = "X-Roomservice-Event"
TRACEPARENT_HEADER = "traceparent"  # W3C Trace Context: the call's, when it carried one
URL_REFUSED = "Webhook URL refused: {reason}."
RELAY_BATCH = 500


# --- The SSRF guard -----------------------------------------------------------------------
#
# A receiver's host is resolved once per check, with a timeout, and every address it
# resolves to must be globally routable (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS): not
# private, loopback, link-local (cloud metadata), shared (100.64/10), reserved, site-local
# (fec0::/10) or multicast, also when hidden in an IPv4-mapped, NAT64 or 6to4 address. A
# delivery then connects to the address it vetted (the Host header and TLS name stay the
# URL's), so a name that starts resolving to loopback between the check and the connection
# (DNS rebinding) reaches nothing.

Resolver = Callable[[str, int], list[str]]
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_dns = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="webhook-dns")


def _system_resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]).split("%", 1)[0] for info in infos]  # drop an IPv6 zone


_resolver: Resolver = _system_resolve


def resolver_set(fn: Resolver | None) -> None:
    """Replace the resolver (tests: a name that answers public first, loopback second)."""
    global _resolver
    _resolver = fn if fn is not None else _system_resolve


def address_refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why a receiver at this address may not be called, or None."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address_refusal(address.ipv4_mapped)
        if address in _NAT64:
            return address_refusal(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if address.sixtofour is not None:
            return address_refusal(address.sixtofour)
        if address in _NAT64_LOCAL or address.is_site_local:
            return "a non-public address"
    if not address.is_global or address.is_multicast or address.is_reserved:
        return "a non-public address"
    return None


@dataclass(frozen=True, slots=True)
class Target:
    """Where one delivery goes: the URL as registered, and the vetted address to dial."""

    url: str
    scheme: str
    host: str
    port: int
    address: str

    def dial_url(self) -> str:
        """The URL with the vetted address in place of the host name."""
        parts = urlsplit(self.url)
        literal = f"[{self.address}]" if ":" in self.address else self.address
        return urlunsplit(
            (self.scheme, f"{literal}:{self.port}", parts.path or "/", parts.query, "")
        )

    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def webhook_target(url: str) -> Target | str:
    """The vetted Target of a receiver URL, or why it is refused (a sentence fragment)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "only http(s) URLs with a host"
    if parts.username or parts.password:
        return "credentials in the URL"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "a port out of range"
    host = parts.hostname
    try:
        host.encode("idna")
    except UnicodeError:
        return "a host name that cannot be encoded"
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        future = _dns.submit(_resolver, host, port)
        try:
            addresses = future.result(timeout=float(settings.WEBHOOK_DNS_TIMEOUT_SECONDS))
        except concurrent.futures.TimeoutError:
            return f"{host} did not resolve within {settings.WEBHOOK_DNS_TIMEOUT_SECONDS} s"
        except (OSError, UnicodeError):
            return f"{host} does not resolve"
    if not addresses:
        return f"{host} does not resolve"
    if not settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS:
        for found in addresses:
            try:
                parsed = ipaddress.ip_address(found)
            except ValueError:
                return f"{host} resolves to an address that is not one ({found})"
            if address_refusal(parsed):
                return f"{host} resolves to a non-public address ({parsed})"
    return Target(url=url, scheme=parts.scheme, host=host, port=port, address=addresses[0])


def url_refusal(url: str) -> str | None:
    """Why this receiver may not be called, or None (checked at registration; each delivery
    checks again and dials the address it vetted)."""
    target = webhook_target(url)
    return target if isinstance(target, str) else None


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
    newest = engine_store.run_sync(
        events_store.event_range, RoomKeys(room.room_id), start="-", end="+", count=1, reverse=True
    )
    ms, seq = _split(newest[0][0]) if newest else (0, 0)
    with transaction.atomic():
        services.team_locked(room.team_id)
        in_room = Webhook.objects.filter(room=room, active=True).count()
        if in_room >= quota_limit("ROOM_WEBHOOKS_MAX"):
            raise quota_error("ROOM_WEBHOOKS_MAX", in_room)
        in_team = Webhook.objects.filter(room__team_id=room.team_id, active=True).count()
        if in_team >= quota_limit("TEAM_WEBHOOKS_MAX"):
            raise quota_error("TEAM_WEBHOOKS_MAX", in_team)
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
            engine_store.run_sync(signals_store.webhooks_changed_publish, room_id)
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


def _matches(hook: Webhook, event: Event) -> bool:
    if hook.event_types and event["type"] not in hook.event_types:
        return False
    return not hook.agent_filter or event_addressed_to(event, hook.agent_filter)


def webhook_relay(room_id: str) -> list[int]:
    """Create the deliveries for every event after each active webhook's cursor; returns
    the ids of deliveries this call created (each to be sent once)."""
    created: list[int] = []
    keys = RoomKeys(room_id)
    for hook in Webhook.objects.filter(room__room_id=room_id, active=True):
        cursor = f"{hook.cursor_ms}-{hook.cursor_seq}"
        while True:
            entries = engine_store.run_sync(
                events_store.event_range,
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
                            webhook=hook,
                            event_id=event["id"],
                            event=event,
                            traceparent=traces.traceparent_valid(entry[1].get("trace")),
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
    # False when nothing was sent (its webhook's breaker is open, or its team is at its
    # delivery concurrency): the attempt is owed, not spent.
    counted: bool = True


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One signed POST, ready to send to its vetted address."""

    delivery_id: int
    team_id: int
    target: Target
    body: bytes
    headers: dict[str, str]


def _breaker_wait(hook: Webhook) -> int:
    """Seconds until a webhook whose receiver kept failing may be tried again (0: now)."""
    if hook.breaker_until is None:
        return 0
    left = (hook.breaker_until - clock.now()).total_seconds()
    return max(0, -int(-left // 1))


def delivery_prepare(delivery_id: int) -> Outgoing | Attempt:
    """The request to make for a pending delivery, or the Attempt that ends or defers it
    without one (already sent, webhook disabled, breaker open, receiver refused by the
    SSRF guard). The receiver's address is resolved and vetted here, once; the door dials
    that address."""
    delivery = WebhookDelivery.objects.select_related(
        "webhook", "webhook__room", "webhook__room__team"
    ).get(pk=delivery_id)
    hook = delivery.webhook
    if delivery.status != WebhookDelivery.Status.PENDING:
        return Attempt(done=True)
    if not hook.active:
        return _give_up(delivery, "webhook disabled", count_failure=False)
    wait = _breaker_wait(hook)
    if wait:
        _defer(delivery, wait)
        return Attempt(done=False, retry_in_seconds=wait, counted=False)
    target = webhook_target(hook.url)
    if isinstance(target, str):
        return _give_up(delivery, URL_REFUSED.format(reason=target), count_failure=True)
    body = json.dumps(delivery.event, ensure_ascii=False, separators=(",", ":")).encode()
    timestamp = str(clock.now_ms() // 1000)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Roomservice-Webhooks/1",
        "Host": target.host_header(),
        SIGNATURE_HEADER: signature(hook.secret, timestamp, body),
        TIMESTAMP_HEADER: timestamp,
        DELIVERY_HEADER: str(delivery.pk),
        EVENT_HEADER: delivery.event_id,
    }
    if delivery.traceparent:
        headers[TRACEPARENT_HEADER] = delivery.traceparent
    return Outgoing(
        delivery_id=delivery.pk,
        team_id=hook.room.team_id,
        target=target,
        body=body,
        headers=headers,
    )


def _defer(delivery: WebhookDelivery, seconds: int) -> None:
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=clock.now() + timedelta(seconds=seconds)
    )


def delivery_defer(delivery_id: int, seconds: int) -> Attempt:
    """Nothing sent now (the team is at its delivery concurrency): try again shortly."""
    WebhookDelivery.objects.filter(pk=delivery_id).update(
        next_attempt_at=clock.now() + timedelta(seconds=seconds)
    )
    return Attempt(done=False, retry_in_seconds=seconds, counted=False)


def delivery_record(delivery_id: int, *, response_status: int | None, error: str) -> Attempt:
    """What one POST came to: delivered (a 2xx), a retry later, or failed for good. Failed
    attempts in a row open the webhook's breaker: its deliveries wait, and its receiver is
    left alone, for WEBHOOK_BREAKER_SECONDS."""
    delivery = WebhookDelivery.objects.select_related("webhook", "webhook__room__team").get(
        pk=delivery_id
    )
    hook = delivery.webhook
    delivery.attempts += 1
    delivery.response_status = response_status
    ok = not error and response_status is not None and 200 <= response_status < 300
    if ok:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = clock.now()
        delivery.last_error = ""
        delivery.next_attempt_at = None
        delivery.save()
        if hook.consecutive_failures or hook.failed_attempts or hook.breaker_until:
            Webhook.objects.filter(pk=hook.pk).update(
                consecutive_failures=0, failed_attempts=0, breaker_until=None
            )
        return Attempt(done=True)
    delivery.last_error = (error or f"HTTP {response_status}")[:500]
    hook.failed_attempts += 1
    opened = hook.failed_attempts >= int(settings.WEBHOOK_BREAKER_FAILURES)
    hook.breaker_until = (
        clock.now() + timedelta(seconds=int(settings.WEBHOOK_BREAKER_SECONDS)) if opened else None
    )
    Webhook.objects.filter(pk=hook.pk).update(
        failed_attempts=hook.failed_attempts, breaker_until=hook.breaker_until
    )
    if delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
        return _give_up(delivery, delivery.last_error, count_failure=True)
    retry = min(2**delivery.attempts, 600)
    if opened:
        retry = max(retry, int(settings.WEBHOOK_BREAKER_SECONDS))
    delivery.next_attempt_at = clock.now() + timedelta(seconds=retry)
    delivery.save()
    return Attempt(done=False, retry_in_seconds=retry)


def _give_up(delivery: WebhookDelivery, error: str, *, count_failure: bool) -> Attempt:
    delivery.status = WebhookDelivery.Status.FAILED
    delivery.last_error = error[:500]
    delivery.next_attempt_at = None
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


# --- Upkeep: deliveries owed, deliveries old --------------------------------------------------


def deliveries_due(*, stale_seconds: int = 120, limit: int = 500) -> list[int]:
    """Pending deliveries whose next attempt is overdue (a worker died holding one, or it
    was deferred while Celery ran eagerly): the periodic task queues them again."""
    cutoff = clock.now() - timedelta(seconds=stale_seconds)
    return list(
        WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, webhook__active=True)
        .filter(
            Q(next_attempt_at__lte=cutoff) | Q(next_attempt_at__isnull=True, created_at__lte=cutoff)
        )
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )


def deliveries_prune() -> int:
    """Delete finished deliveries older than WEBHOOK_DELIVERY_RETENTION_DAYS (in batches:
    one call never holds the table long). Returns how many went."""
    cutoff = clock.now() - timedelta(days=int(settings.WEBHOOK_DELIVERY_RETENTION_DAYS))
    removed = 0
    while True:
        batch = list(
            WebhookDelivery.objects.filter(created_at__lt=cutoff)
            .exclude(status=WebhookDelivery.Status.PENDING)
            .values_list("pk", flat=True)[:1000]
        )
        if not batch:
            return removed
        removed += WebhookDelivery.objects.filter(pk__in=batch).delete()[0]


class WebhookQueue(Collector):
    """Webhook deliveries owed, read at scrape time from the database (every process sees
    the same number, so /metrics collects it once: config.telemetry.scraped_add)."""

    def collect(self) -> Iterator[Metric]:
        try:
            depth = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING).count()
        except Exception:  # the database is away: the other metrics still answer
            return
        family = GaugeMetricFamily("roomservice_webhook_queue_depth", "Webhook deliveries pending.")
        family.add_metric([], depth)
        yield family
