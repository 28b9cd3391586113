"""Webhooks: signed deliveries to a real local receiver, retries, filters, catch-up,
disabling after failures, the SSRF guard, and the REST API."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from rest_framework.test import APIClient

from rooms import services as room_services
from tenants import access, errors, services, webhooks
from tenants.auth import Caller
from tenants.db import db_run
from tenants.models import Room, Webhook, WebhookDelivery
from tests.conftest import new_room_id

pytestmark = pytest.mark.anyio


@dataclass
class Receiver:
    """A real HTTP server on 127.0.0.1 that records each POST and fails the first N."""

    fail_first: int = 0
    status_when_failing: int = 500
    seen: list[dict[str, Any]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.seen.append({"headers": dict(self.headers), "body": body})
            failing = len(state.seen) <= state.fail_first
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
        team=services.team_for_slug(team), room_id=new_room_id("hooked"), actor="t"
    )


TEAM = Caller(team_id="hooks-team", kind="static", credential_id="hooks-team")


async def post(room_id: str, kind: str = "ping", to: str = "all", n: int = 0) -> dict[str, Any]:
    return await access.tool_run(  # type: ignore[no-any-return]
        TEAM,
        "post_event",
        {"roomId": room_id, "type": kind, "from": "a", "to": to, "payload": {"n": n}},
    )


async def test_each_event_reaches_the_receiver_signed_and_once(
    receiver: Receiver, redis_client_closed: None
) -> None:
    room = await db_run(make_room)
    minted = await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    assert minted.secret.startswith("whsec_")
    events = [await post(room.room_id, n=i) for i in range(3)]
    assert [json.loads(r["body"])["id"] for r in receiver.seen] == [e["id"] for e in events]
    for request, event in zip(receiver.seen, events, strict=True):
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
    receiver: Receiver, redis_client_closed: None
) -> None:
    receiver.fail_first = 2
    room = await db_run(make_room)
    await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    event = await post(room.room_id)
    assert [json.loads(r["body"])["id"] for r in receiver.seen] == [event["id"]] * 3
    delivery = await db_run(lambda: WebhookDelivery.objects.get())
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("delivered", 3, 204)
    # Each retry is the same delivery: the receiver can de-duplicate on its id.
    assert len({r["headers"]["X-Roomservice-Delivery"] for r in receiver.seen}) == 1


async def test_filters_by_event_type_and_agent(
    receiver: Receiver, redis_client_closed: None
) -> None:
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
    assert [json.loads(r["body"])["id"] for r in receiver.seen] == [e["id"] for e in wanted]


async def test_events_written_while_nobody_relayed_are_caught_up_in_order(
    receiver: Receiver, redis_client_closed: None
) -> None:
    room = await db_run(make_room)
    await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    ref = await access.room_access(TEAM, room.room_id, True)
    quiet = [  # straight through the services: no door, so no nudge
        await room_services.event_post(ref, type_="quiet", from_="a", to="all", payload={"n": i})
        for i in range(4)
    ]
    assert receiver.seen == []
    loud = await post(room.room_id)
    assert [json.loads(r["body"])["id"] for r in receiver.seen] == [e["id"] for e in [*quiet, loud]]


async def test_a_webhook_that_keeps_failing_is_disabled(
    receiver: Receiver, settings: Any, redis_client_closed: None
) -> None:
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    settings.WEBHOOK_DISABLE_AFTER = 2
    receiver.fail_first = 10**6
    room = await db_run(make_room)
    minted = await db_run(lambda: webhooks.webhook_create(room=room, url=receiver.url, actor="t"))
    await post(room.room_id, n=1)
    await post(room.room_id, n=2)
    hook = await db_run(lambda: Webhook.objects.get(pk=minted.webhook.pk))
    assert hook.active is False and "2 deliveries in a row failed" in hook.disabled_reason
    failed = await db_run(
        lambda: list(WebhookDelivery.objects.values_list("status", "attempts", "last_error"))
    )
    assert failed == [("failed", 2, "HTTP 500")] * 2
    seen = len(receiver.seen)
    await post(room.room_id, n=3)  # the room is no longer hooked: nothing more is sent
    assert len(receiver.seen) == seen
    assert (await access.room_access(TEAM, room.room_id, False)).hooked is False


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
    assert receiver.seen == []
    delivery = await db_run(lambda: WebhookDelivery.objects.get())
    assert delivery.status == "failed" and "non-public address" in delivery.last_error


def test_the_rest_api_registers_lists_logs_and_disables(receiver: Receiver) -> None:
    team = services.team_for_slug("hooks-api")
    key = services.api_key_create(team=team, name="k").secret
    other = services.api_key_create(team=services.team_for_slug("hooks-other"), name="k").secret
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
    owner = services.team_for_slug("hooks-owner")
    room = services.room_create(team=owner, room_id=new_room_id("theirs"), actor="t")
    intruder = services.api_key_create(
        team=services.team_for_slug("hooks-intruder"), name="k"
    ).secret
    response = APIClient().post(
        f"/api/v1/rooms/{room.room_id}/webhooks",
        {"url": "https://example.com/h"},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {intruder}",
    )
    assert response.status_code == 404
    assert response.json()["message"] == "Room not found or access denied."
    assert not Webhook.objects.filter(room=room).exists()
