"""Webhooks: signed deliveries to a real local receiver, retries, filters, catch-up,
disabling after failures, the SSRF guard, and the REST API."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from rest_framework.test import APIClient

from calls.runner import tool_run
from mcp_gateway.relay import Relay, relay_and_queue
from rooms import errors as room_errors
from rooms import traces
from rooms.services import events as events_services
from tenants import access, errors, services, webhooks
from tenants.capabilities import Caller
from tenants.db import db_run
from tenants.models import Room, Webhook, WebhookDelivery
from tests import callers
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]


@dataclass
class Receiver:
    """A real HTTP server on 127.0.0.1 that records each POST and fails the first N."""

    fail_first: int = 0
    status_when_failing: int = 500
    seen: list[dict[str, Any]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None
    arrived: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    async def wait_for(self, count: int, timeout: float = 15.0) -> list[dict[str, Any]]:
        """The first `count` requests, once they have arrived (a bounded wait, no sleep)."""

        def wait() -> bool:
            with self.arrived:
                return self.arrived.wait_for(lambda: len(self.seen) >= count, timeout)

        assert await asyncio.to_thread(wait), f"{len(self.seen)} of {count} requests arrived"
        return self.seen[:count]


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with state.arrived:
                state.seen.append({"headers": dict(self.headers), "body": body})
                failing = len(state.seen) <= state.fail_first
                state.arrived.notify_all()
            self.send_response(state.status_when_failing if failing else 204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    state.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=state.server.serve_forever, daemon=True)
    thread.start()
    yield state
    state.server.shutdown()
    state.server.server_close()


@pytest.fixture
async def relay(redis_client_closed: None) -> AsyncIterator[Relay]:
    """The webhook relay, running in this test's event loop (deliveries run eagerly)."""
    running = Relay()
    task = asyncio.get_running_loop().create_task(running.run())
    yield running
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The receiving side's check, as docs/webhooks.md shows it."""
    timestamp = headers["X-Roomservice-Timestamp"]
    expected = (
        "sha256="
        + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    )
    return hmac.compare_digest(expected, headers["X-Roomservice-Signature"])


def make_room(team: str = "hooks-team") -> Room:
    return services.room_create(
        team=services.team_ensure(team), room_id=new_room_id("hooked"), actor="t"
    )


async def post(room_id: str, kind: str = "ping", to: str = "all", n: int = 0) -> dict[str, Any]:
    team: Caller = await callers.team("hooks-team")
    return await tool_run(  # type: ignore[no-any-return]
        team,
        "post_event",
        {"roomId": room_id, "type": kind, "from": "a", "to": to, "payload": {"n": n}},
    )


def bodies(requests: list[dict[str, Any]]) -> list[str]:
    return [json.loads(r["body"])["id"] for r in requests]


async def test_each_event_reaches_the_receiver_signed_and_once(
    receiver: Receiver, relay: Relay
) -> None:
    room = await db_run(make_room)
    minted = await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    assert minted.secret.startswith("whsec_")
    events = [await post(room.room_id, n=i) for i in range(3)]
    seen = await receiver.wait_for(3)
    await relay.idle(room.room_id)
    assert sorted(bodies(seen)) == sorted(e["id"] for e in events)
    by_id = {json.loads(r["body"])["id"]: r for r in seen}
    for event in events:
        request = by_id[event["id"]]
        assert verify(minted.secret, request["headers"], request["body"])
        assert not verify("whsec_wrong", request["headers"], request["body"])
        assert request["headers"]["X-Roomservice-Event"] == event["id"]
        assert json.loads(request["body"]) == event
    deliveries = await db_run(
        lambda: list(WebhookDelivery.objects.order_by("id").values_list("status", "attempts"))
    )
    assert deliveries == [("delivered", 1)] * 3
    # A second relay over the same events delivers nothing again.
    assert await db_run(webhooks.webhook_relay, room.room_id) == []


async def test_a_failing_receiver_gets_retries_until_it_answers(
    receiver: Receiver, relay: Relay
) -> None:
    receiver.fail_first = 2
    room = await db_run(make_room)
    await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    event = await post(room.room_id)
    seen = await receiver.wait_for(3)
    await relay.idle(room.room_id)
    assert bodies(seen) == [event["id"]] * 3
    delivery = await db_run(lambda: WebhookDelivery.objects.get())
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("delivered", 3, 204)
    # Each retry is the same delivery: the receiver can de-duplicate on its id.
    assert len({r["headers"]["X-Roomservice-Delivery"] for r in seen}) == 1


async def test_filters_by_event_type_and_agent(receiver: Receiver, relay: Relay) -> None:
    room = await db_run(make_room)
    await db_run(
        lambda: webhooks.webhook_create(
            room=room, url=receiver.url, agent_filter="bob", event_types=["ping"], actor="t"
        )
    )
    await post(room.room_id, kind="pong", to="all")
    await post(room.room_id, kind="ping", to="carol")
    wanted = [
        await post(room.room_id, kind="ping", to="bob"),
        await post(room.room_id, kind="ping", to="all"),
    ]
    marker = await post(room.room_id, kind="ping", to="all", n=99)
    seen = await receiver.wait_for(3)
    assert sorted(bodies(seen)) == sorted([*(e["id"] for e in wanted), marker["id"]])


async def test_events_written_while_no_relay_ran_are_caught_up_in_order(
    receiver: Receiver, redis_client_closed: None
) -> None:
    room = await db_run(make_room)
    await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    ref = await access.room_access(await callers.team("hooks-team"), room.room_id, write=True)
    quiet = [
        await events_services.event_post(ref, type_="quiet", from_="a", to="all", payload={"n": i})
        for i in range(4)
    ]
    assert receiver.seen == []  # no relay is running
    task = asyncio.get_running_loop().create_task(Relay().run())
    try:
        assert bodies(await receiver.wait_for(4)) == [e["id"] for e in quiet]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_relay_is_woken_by_the_write_itself(receiver: Receiver, relay: Relay) -> None:
    """No tool call reaches up to the webhooks: a write through the services alone, with no
    door around it, is delivered because the room's wake channel woke the relay."""
    room = await db_run(make_room)
    await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    ref = await access.room_access(await callers.team("hooks-team"), room.room_id, write=True)
    event = await events_services.event_post(ref, type_="plain", from_="a", to="all", payload={})
    assert bodies(await receiver.wait_for(1)) == [event["id"]]


async def test_a_webhook_that_keeps_failing_is_disabled(
    receiver: Receiver, settings: Any, relay: Relay
) -> None:
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    settings.WEBHOOK_DISABLE_AFTER = 2
    receiver.fail_first = 10**6
    room = await db_run(make_room)
    minted = await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    await post(room.room_id, n=1)
    await post(room.room_id, n=2)
    await receiver.wait_for(4)
    await relay.idle(room.room_id)
    hook = await db_run(lambda: Webhook.objects.get(pk=minted.webhook.pk))
    assert hook.active is False and "2 deliveries in a row failed" in hook.disabled_reason
    failed = await db_run(
        lambda: list(WebhookDelivery.objects.values_list("status", "attempts", "last_error"))
    )
    assert failed == [("failed", 2, "HTTP 500")] * 2
    seen = len(receiver.seen)
    await post(room.room_id, n=3)  # the webhook is disabled: nothing more is sent
    assert await db_run(relay_and_queue, room.room_id) == 0
    assert len(receiver.seen) == seen
    assert room.room_id not in await db_run(webhooks.rooms_with_webhooks)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://10.1.2.3/",
        "http://192.168.0.10/",
        "http://172.16.5.4/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://0.0.0.0/",
        "ftp://example.com/",
        "http://user:pw@example.com/",
    ],
)
def test_the_ssrf_guard_refuses_non_public_receivers(url: str, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    room = make_room()
    with pytest.raises(errors.NotPermittedError) as caught:
        webhooks.webhook_create(room=room, url=url, actor="t")
    assert caught.value.message.startswith("Webhook URL refused:")
    assert not Webhook.objects.filter(room=room).exists()


async def test_a_receiver_that_became_private_is_refused_at_delivery(
    receiver: Receiver, settings: Any, redis_client_closed: None
) -> None:
    room = await db_run(make_room)
    await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    await post(room.room_id)
    assert await db_run(relay_and_queue, room.room_id) == 1
    assert receiver.seen == []
    delivery = await db_run(lambda: WebhookDelivery.objects.get())
    assert delivery.status == "failed" and "non-public address" in delivery.last_error


def test_the_rest_api_registers_lists_logs_and_disables(receiver: Receiver) -> None:
    team = services.team_ensure("hooks-api")
    key = services.api_key_create(team=team, name="k").secret
    other = services.api_key_create(team=services.team_ensure("hooks-other"), name="k").secret
    room = services.room_create(team=team, room_id=new_room_id("api-hook"), actor="t")
    client = APIClient()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    created = client.post(
        f"/api/v1/rooms/{room.room_id}/webhooks",
        {"url": receiver.url, "eventTypes": ["ping"]},
        format="json",
        **auth,
    )
    assert created.status_code == 201 and created.json()["secret"].startswith("whsec_")
    hook_id = created.json()["id"]
    listed = client.get(f"/api/v1/rooms/{room.room_id}/webhooks", **auth).json()
    assert [h["id"] for h in listed] == [hook_id] and "secret" not in listed[0]
    tool = client.post(
        f"/api/v1/rooms/{room.room_id}/tools/post_event",
        {"type": "ping", "from": "a", "payload": {}},
        format="json",
        **auth,
    )
    assert tool.status_code == 200
    assert relay_and_queue(room.room_id) == 1  # what the relay does when the write wakes it
    log = client.get(f"/api/v1/rooms/{room.room_id}/webhooks/{hook_id}/deliveries", **auth).json()
    assert [(d["eventId"], d["status"], d["attempts"]) for d in log] == [
        (tool.json()["id"], "delivered", 1)
    ]
    # Another team sees none of it.
    for path in (
        f"/api/v1/rooms/{room.room_id}/webhooks",
        f"/api/v1/rooms/{room.room_id}/webhooks/{hook_id}/deliveries",
    ):
        assert client.get(path, HTTP_AUTHORIZATION=f"Bearer {other}").status_code == 404
    assert (
        client.post(
            f"/api/v1/rooms/{room.room_id}/webhooks/{hook_id}/disable",
            HTTP_AUTHORIZATION=f"Bearer {other}",
        ).status_code
        == 404
    )
    disabled = client.post(f"/api/v1/rooms/{room.room_id}/webhooks/{hook_id}/disable", **auth)
    assert disabled.json()["active"] is False
    refused = client.post(
        f"/api/v1/rooms/{room.room_id}/webhooks", {"url": "ftp://x.example/"}, format="json", **auth
    )
    assert refused.status_code == 403 and "only http(s)" in refused.json()["message"]
    from django.conf import settings

    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    private = client.post(
        f"/api/v1/rooms/{room.room_id}/webhooks",
        {"url": "http://10.0.0.1/h"},
        format="json",
        **auth,
    )
    assert private.status_code == 403 and private.json()["message"].startswith(
        "Webhook URL refused:"
    )


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com:99999/hook", "a port out of range"),
        ("http://" + "a" * 70 + ".example.com/", "a host name that cannot be encoded"),
        ("http:///nohost", "only http(s) URLs with a host"),
    ],
)
def test_malformed_receiver_urls_are_refused_not_a_crash(
    url: str, reason: str, settings: Any
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    room = make_room()
    with pytest.raises(errors.NotPermittedError) as caught:
        webhooks.webhook_create(room=room, url=url, actor="t")
    assert caught.value.message == webhooks.URL_REFUSED.format(reason=reason)


def test_another_team_cannot_register_a_webhook_on_a_room() -> None:
    owner = services.team_ensure("hooks-owner")
    room = services.room_create(team=owner, room_id=new_room_id("theirs"), actor="t")
    intruder = services.api_key_create(team=services.team_ensure("hooks-intruder"), name="k").secret
    response = APIClient().post(
        f"/api/v1/rooms/{room.room_id}/webhooks",
        {"url": "https://example.com/h"},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {intruder}",
    )
    assert response.status_code == 404
    assert response.json()["message"] == room_errors.ROOM_ACCESS_DENIED
    assert not Webhook.objects.filter(room=room).exists()


# --- The SSRF guard: every address, resolved once, dialled as vetted -------------------------


@pytest.mark.parametrize(
    "address",
    [
        "100.100.100.200",  # cloud metadata of some providers: shared address space 100.64/10
        "100.64.0.1",
        "fec0::1",  # IPv6 site-local
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b:1::a00:1",  # local-use NAT64
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "198.18.0.1",  # benchmarking
        "224.0.0.1",  # multicast
    ],
)
def test_non_public_addresses_are_refused_in_every_disguise(address: str, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    literal = f"[{address}]" if ":" in address else address
    refusal = webhooks.url_refusal(f"http://{literal}/hook")
    assert refusal is not None and "non-public address" in refusal
    assert webhooks.url_refusal("http://93.184.216.34/hook") is None  # a public one passes


@pytest.fixture
def dns() -> Iterator[dict[str, list[list[str]]]]:
    """A resolver of our own: each name answers its next list of addresses, in turn."""
    answers: dict[str, list[list[str]]] = {}

    def resolve(host: str, port: int) -> list[str]:
        queue = answers[host]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    webhooks.resolver_set(resolve)
    yield answers
    webhooks.resolver_set(None)


async def test_a_name_rebinding_to_loopback_after_the_check_reaches_nothing(
    receiver: Receiver, settings: Any, dns: dict[str, list[list[str]]], redis_client_closed: None
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    dns["rebind.example.test"] = [["93.184.216.34"], ["127.0.0.1"]]
    port = receiver.url.split(":")[2].split("/")[0]
    room = await db_run(make_room)
    await db_run(
        lambda: webhooks.webhook_create(
            room=room, url=f"http://rebind.example.test:{port}/hook", actor="t"
        )
    )  # registration saw the public address
    await post(room.room_id)
    assert await db_run(relay_and_queue, room.room_id) == 1
    delivery = await db_run(lambda: WebhookDelivery.objects.get())
    assert delivery.status == "failed" and "non-public address (127.0.0.1)" in delivery.last_error
    assert receiver.seen == []  # the loopback receiver was never dialled


async def test_a_delivery_dials_the_vetted_address_keeping_the_host_name(
    receiver: Receiver, dns: dict[str, list[list[str]]], redis_client_closed: None
) -> None:
    dns["hooks.example.test"] = [["127.0.0.1"]]  # private networks allowed (the fixture)
    port = receiver.url.split(":")[2].split("/")[0]
    room = await db_run(make_room)
    await db_run(
        lambda: webhooks.webhook_create(
            room=room, url=f"http://hooks.example.test:{port}/hook?x=1", actor="t"
        )
    )
    await post(room.room_id)
    assert await db_run(relay_and_queue, room.room_id) == 1
    [request] = await receiver.wait_for(1)
    assert request["headers"]["Host"] == f"hooks.example.test:{port}"


def test_a_name_that_does_not_resolve_in_time_is_refused(
    settings: Any, dns: dict[str, list[list[str]]]
) -> None:
    import time

    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    settings.WEBHOOK_DNS_TIMEOUT_SECONDS = 0.2

    def slow(host: str, port: int) -> list[str]:
        time.sleep(1.0)  # the stub DNS server's delay, not the test's
        return ["93.184.216.34"]

    webhooks.resolver_set(slow)
    assert webhooks.url_refusal("http://slow.example.test/h") == (
        "slow.example.test did not resolve within 0.2 s"
    )


# --- Fairness: breakers, per-team concurrency, a cap per room, pruning ------------------------


async def test_a_black_holed_receiver_opens_its_breaker_and_is_left_alone(
    receiver: Receiver, settings: Any, redis_client_closed: None
) -> None:
    from mcp_gateway.webhooks import webhook_deliver

    settings.WEBHOOK_BREAKER_FAILURES = 2
    settings.WEBHOOK_MAX_ATTEMPTS = 10
    receiver.fail_first = 10**6
    room = await db_run(make_room)
    minted = await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    await post(room.room_id)
    created = await db_run(webhooks.webhook_relay, room.room_id)
    [delivery_id] = created
    first = await db_run(webhook_deliver, delivery_id)
    second = await db_run(webhook_deliver, delivery_id)
    assert first.counted and second.counted and len(receiver.seen) == 2
    hook = await db_run(lambda: Webhook.objects.get(pk=minted.webhook.pk))
    assert hook.failed_attempts == 2 and hook.breaker_until is not None
    held = await db_run(webhook_deliver, delivery_id)
    assert held.done is False and held.counted is False and held.retry_in_seconds > 0
    assert len(receiver.seen) == 2  # the receiver was not called again
    delivery = await db_run(lambda: WebhookDelivery.objects.get(pk=delivery_id))
    assert delivery.attempts == 2 and delivery.status == "pending"


async def test_a_team_at_its_delivery_concurrency_waits_while_others_deliver(
    receiver: Receiver, settings: Any, redis_client_closed: None
) -> None:
    from mcp_gateway.webhooks import webhook_deliver
    from rooms import clock
    from rooms.store import budgets as budgets_store

    settings.WEBHOOK_TEAM_CONCURRENCY = 1
    busy_room = await db_run(make_room, "busy-team")
    calm_room = await db_run(make_room, "calm-team")
    for r in (busy_room, calm_room):
        await db_run(lambda r=r: webhooks.webhook_create(room=r, url=receiver.url, actor="t"))
        ref = await access.room_access(await callers.team(r.team.slug), r.room_id, write=True)
        await events_services.event_post(ref, type_="x", from_="a", to="all", payload={})
    [busy] = await db_run(webhooks.webhook_relay, busy_room.room_id)
    [calm] = await db_run(webhooks.webhook_relay, calm_room.room_id)
    # Another delivery of busy-team is in flight (holding its one slot).
    bucket = f"deliveries:team:{busy_room.team_id}"
    assert await budgets_store.slot_admit(
        bucket, "in-flight", now_ms=clock.now_ms(), lease_ms=60_000, cap=1
    )
    deferred = await db_run(webhook_deliver, busy)
    assert deferred.done is False and deferred.counted is False
    assert (await db_run(webhook_deliver, calm)).done is True  # the other team is not held up
    assert len(receiver.seen) == 1
    await budgets_store.slot_release(bucket, "in-flight")
    assert (await db_run(webhook_deliver, busy)).done is True
    assert len(receiver.seen) == 2


def test_a_room_has_a_webhook_quota_and_a_team_another(settings: Any) -> None:
    settings.ROOM_WEBHOOKS_MAX = 2
    settings.TEAM_WEBHOOKS_MAX = 3
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    room = make_room("quota-team")
    for _ in range(2):
        webhooks.webhook_create(room=room, url="http://127.0.0.1:9/h", actor="t")
    with pytest.raises(room_errors.QuotaExceededError) as caught:
        webhooks.webhook_create(room=room, url="http://127.0.0.1:9/h", actor="t")
    assert caught.value.extra["quota"] == "ROOM_WEBHOOKS_MAX"
    other = make_room("quota-team")
    webhooks.webhook_create(room=other, url="http://127.0.0.1:9/h", actor="t")
    with pytest.raises(room_errors.QuotaExceededError) as caught:
        webhooks.webhook_create(room=other, url="http://127.0.0.1:9/h", actor="t")
    assert caught.value.extra["quota"] == "TEAM_WEBHOOKS_MAX"


def test_old_delivery_records_are_pruned_and_owed_ones_resumed(settings: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    room = make_room("prune-team")
    hook = webhooks.webhook_create(room=room, url="http://127.0.0.1:9/h", actor="t").webhook
    old = timezone.now() - timedelta(days=30)
    rows = [
        WebhookDelivery.objects.create(webhook=hook, event_id=f"{n}-0", event={}, status=status)
        for n, status in enumerate(["delivered", "failed", "pending", "delivered"])
    ]
    WebhookDelivery.objects.filter(pk__in=[r.pk for r in rows[:3]]).update(created_at=old)
    assert webhooks.deliveries_prune() == 2  # old and finished; the owed one stays
    assert set(WebhookDelivery.objects.values_list("event_id", flat=True)) == {"2-0", "3-0"}
    assert webhooks.deliveries_due() == [rows[2].pk]


async def test_a_delivery_carries_the_trace_of_the_call_that_wrote_its_event(
    receiver: Receiver, relay: Relay
) -> None:
    """A trace that began in the agent's client goes on to the webhook's receiver (W3C
    `traceparent`); a call without one sends none."""
    room = await db_run(make_room)
    await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    token = traces.TRACEPARENT.set(trace)
    try:
        traced = await post(room.room_id, n=1)
    finally:
        traces.TRACEPARENT.reset(token)
    plain = await post(room.room_id, n=2)
    seen = await receiver.wait_for(2)
    await relay.idle(room.room_id)
    by_id = {json.loads(r["body"])["id"]: r["headers"] for r in seen}
    assert by_id[traced["id"]]["traceparent"] == trace
    assert "traceparent" not in by_id[plain["id"]]
    assert "trace" not in json.loads(seen[0]["body"])
