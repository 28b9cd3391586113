"""A person's OAuth clients in the dashboard (issue 33, point 3): the Account page lists
their own and disconnects one, the Keys page lists the team's and revokes one, each act is
in the audit log with the person and the client, and so is every act the client does.

The attacks: another person's connection from the Account page, another team's from the
Keys page, a member who may not manage keys, a GET, a POST without CSRF: each is refused
and nothing is revoked."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.test import Client
from oauth2_provider.models import Application

from tenants import services
from tenants.models import AuditEvent, Membership, OAuthConnection
from tests.conftest import new_room_id
from tests.tenants.test_oauth import client_app, consent, pkce, rpc, signed_in, token_exchange

pytestmark = pytest.mark.store

CLIENT_URL = "https://chat.example.com/oauth/client.json"


def connect(
    email: str, *, team_id: int | None = None, name: str = "Chat app", **choices: Any
) -> tuple[str, OAuthConnection, Client]:
    """`email`'s new account connects a client through the whole flow, to their own team
    or `team_id`: (access token, the connection, their signed-in browser)."""
    browser, user = signed_in(email)
    app = client_app(name)
    verifier, challenge = pkce()
    team = team_id or Membership.objects.get(user=user).team_id
    query = consent(browser, app, challenge, team, **choices)
    token = token_exchange(app, query["code"][0], verifier).json()["access_token"]
    return token, OAuthConnection.objects.get(user=user, application=app), browser


def works(token: str) -> bool:
    return bool(rpc("/oauth/mcp", token, "tools/list", {}).status_code == 200)


def test_the_account_page_lists_the_persons_own_clients() -> None:
    token, mine, browser = connect("ann@example.com", read_only="1", tools_profile="core")
    assert works(token)
    Application.objects.filter(pk=mine.application_id).update(client_id=CLIENT_URL)
    connect("bob@example.com", name="Bob's app")
    page = browser.get("/account").content.decode()
    mine.refresh_from_db()
    assert mine.last_used_at is not None
    assert "Chat app" in page and "(chat.example.com)" in page
    assert html.escape(mine.team.name) in page and "all rooms" in page and "chat-agent" in page
    assert "read-only" in page and "<td>core</td>" in page
    assert f"<td>{mine.last_used_at:%Y-%m-%d %H:%M}</td>" in page
    assert f"/account/connections/{mine.pk}/disconnect" in page
    assert "Bob&#x27;s app" not in page
    assert 'role="region" aria-label="Connected clients' in page


def test_a_person_disconnects_their_client_and_its_next_call_is_refused() -> None:
    token, mine, browser = connect("ann@example.com")
    assert works(token)
    answer = browser.post(f"/account/connections/{mine.pk}/disconnect")
    assert answer.status_code == 302 and answer["Location"] == "/account"
    assert not OAuthConnection.objects.filter(pk=mine.pk).exists()
    assert not works(token)
    row = AuditEvent.objects.get(action="oauth.revoke")
    assert row.actor == f"user:{mine.user_id}" and row.object_id == str(mine.pk)
    assert row.detail == {"client": "Chat app", "person": f"user:{mine.user_id}"}
    assert "No clients connected." in browser.get("/account").content.decode()


def test_nobody_disconnects_another_persons_client_from_their_account() -> None:
    _, _, ann = connect("ann@example.com")
    token, bobs, _ = connect("bob@example.com")
    assert ann.post(f"/account/connections/{bobs.pk}/disconnect").status_code == 404
    assert ann.get(f"/account/connections/{bobs.pk}/disconnect").status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(bobs.user)
    assert strict.post(f"/account/connections/{bobs.pk}/disconnect").status_code == 403
    assert OAuthConnection.objects.filter(pk=bobs.pk).exists() and works(token)
    assert not AuditEvent.objects.filter(action="oauth.revoke").exists()


def test_the_keys_page_lists_and_revokes_the_teams_clients() -> None:
    _, _, ann = connect("ann@example.com", name="Ann's app")
    ann_team = Membership.objects.get(user__email="ann@example.com").team
    browser, bob = signed_in("bob@example.com")
    services.membership_add(team=ann_team, user=bob, role=Membership.Role.MEMBER, actor="test")
    app = client_app("Bob's app")
    verifier, challenge = pkce()
    room = services.room_create(team=ann_team, room_id=new_room_id(), actor="test", name="Launch")
    code = consent(browser, app, challenge, ann_team.pk, room=room.room_id)["code"][0]
    token = token_exchange(app, code, verifier).json()["access_token"]
    bobs = OAuthConnection.objects.get(user=bob)

    page = ann.get("/keys").content.decode()
    assert "Bob&#x27;s app" in page and "bob@example.com" in page and "Ann&#x27;s app" in page
    assert "<td>Launch</td>" in page and "all rooms" in page
    assert 'role="region" aria-label="Connected clients' in page
    assert browser.post(f"/keys/connections/{bobs.pk}/revoke").status_code == 404  # a member
    assert works(token)

    answer = ann.post(f"/keys/connections/{bobs.pk}/revoke")
    assert answer.status_code == 302 and answer["Location"] == "/keys"
    assert not OAuthConnection.objects.filter(pk=bobs.pk).exists() and not works(token)
    row = AuditEvent.objects.get(action="oauth.revoke")
    assert row.actor == f"user:{ann_team.memberships.get(role='owner').user_id}"
    assert row.team_id == ann_team.pk and row.detail["person"] == f"user:{bob.pk}"


def test_nobody_revokes_another_teams_client_from_the_keys_page() -> None:
    _, _, ann = connect("ann@example.com")
    token, carols, _ = connect("carol@example.com")
    assert ann.post(f"/keys/connections/{carols.pk}/revoke").status_code == 404
    assert "carol@example.com" not in ann.get("/keys").content.decode()
    assert OAuthConnection.objects.filter(pk=carols.pk).exists() and works(token)
    assert not AuditEvent.objects.filter(action="oauth.revoke").exists()


def test_the_audit_names_the_person_and_the_client_beside_every_act() -> None:
    token, mine, browser = connect("ann@example.com")
    connected = AuditEvent.objects.get(action="oauth.connect")
    assert connected.actor == f"user:{mine.user_id}" and connected.object_id == str(mine.pk)
    assert connected.detail["client"] == "Chat app" and connected.detail["agent"] == "chat-agent"

    room = new_room_id()
    called = rpc(
        "/oauth/mcp",
        token,
        "tools/call",
        {"name": "add_task", "arguments": {"roomId": room, "title": "From a chat"}},
    )
    assert not called.json()["result"].get("isError"), called.text
    claimed = AuditEvent.objects.get(action="room.claim", object_id=room)
    assert claimed.actor == f"user:{mine.user_id} via oauth:{mine.pk}"

    browser.post(f"/account/connections/{mine.pk}/disconnect")
    page = browser.get("/audit").content.decode()  # the client is still named once revoked
    assert page.count("ann@example.com via Chat app") == 1
    assert f'title="user:{mine.user_id} via oauth:{mine.pk}"' in page
    assert "oauth.connect" in page and "oauth.revoke" in page and "client: Chat app" in page
