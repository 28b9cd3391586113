"""Every dashboard URL of team A is a 404 for a person of team B (and a sign-in redirect
for nobody), for every method the URL answers."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from dashboard import urls as dashboard_urls
from tenants import people, services
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store

PUBLIC = {
    "landing",
    "signup",
    "login",
    "logout",
    "join",
    "shared",
    "shared-live",
    "hook-script",
    "connect-setup",  # a setup script: no secret, and no room is looked up
    "sign-in-once",
}
# Pages about the signed-in person's own things (no object of team A in the URL).
OWN = {"account", "team", "team-switch", "team-acting", "rooms", "keys", "audit"}


@pytest.fixture
def team_a_objects(ann: Person) -> dict[str, Any]:
    room = services.room_create(team=ann.team, room_id="team-a-room", actor="test")
    key = services.api_key_create(team=ann.team, name="ann-secret-key-name").key
    invite = services.invite_create(room=room, label="a invite").invite
    share = people.share_link_create(
        room=room, label="", expires_at=None, created_by=None, actor="t"
    )
    membership = ann.team.memberships.get()
    entry_id = "c_doesnotmatter"
    from calls.runner import tool_run
    from rooms.store import engine as engine_store
    from tests import callers

    task = engine_store.run_sync(
        tool_run,
        callers.team_caller(ann.team.slug),
        "add_task",
        {"roomId": room.room_id, "title": "a task of team A"},
    )
    from django.test import override_settings

    from tenants import webhooks

    with override_settings(WEBHOOK_ALLOW_PRIVATE_NETWORKS=True):
        hook = webhooks.webhook_create(room=room, url="http://127.0.0.1:9/h", actor="t").webhook
    from oauth2_provider.models import Application

    from tenants import oauth

    client = Application.objects.create(
        name="a client",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1:9/cb",
    )
    connection = oauth.connection_save(
        user=ann.user,
        application=client,
        team_id=ann.team.pk,
        room_id="",
        agent_name="a-agent",
        read_only=False,
        tools_profile=None,
    )
    return {
        "connection_id": connection.pk,
        "room_id": room.room_id,
        "key_id": key.pk,
        "invite_id": invite.pk,
        "link_id": share.link.pk,
        "membership_id": membership.pk,
        "entry_id": entry_id,
        "token": share.token,
        "webhook_id": hook.pk,
        "task_id": task["id"],
        "action": "broadcast",
    }


def team_a_urls(objects: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, path) of every dashboard URL that names one of team A's objects."""
    found = []
    for pattern in dashboard_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        if pattern.name in PUBLIC or pattern.name in OWN:
            continue
        kwargs = {k: objects[k] for k in pattern.pattern.converters}
        found.append((str(pattern.name), reverse(str(pattern.name), kwargs=kwargs)))
    return found


def test_every_url_is_classified() -> None:
    names = {p.name for p in dashboard_urls.urlpatterns}  # type: ignore[union-attr]
    covered = (
        PUBLIC
        | OWN
        | {
            n
            for n, _ in team_a_urls(
                {
                    k: 1
                    for k in (
                        "connection_id",
                        "room_id",
                        "key_id",
                        "invite_id",
                        "link_id",
                        "membership_id",
                        "entry_id",
                        "token",
                        "webhook_id",
                        "task_id",
                        "action",
                    )
                }
            )
        }
    )
    assert names == covered


def test_team_b_gets_404_on_every_url_of_team_a(
    team_a_objects: dict[str, Any], ann: Person, bob: Person
) -> None:
    urls = team_a_urls(team_a_objects)
    assert len(urls) == 22
    for name, path in urls:
        for method in ("get", "post"):
            response = getattr(bob.client, method)(path)
            assert response.status_code in (404, 405), (name, method, response.status_code)
            if response.status_code == 405:
                continue
            body = response.content.decode()
            assert "team-a-room" not in body or name == "context", (name, method)
            assert "a task of team A" not in body, (name, method)
        # Team A's owner reaches the same URL (a GET or POST answers something other than 404),
        # so the 404 above is about tenancy, not a broken URL.
    for name, path in urls:
        if name in ("context",):
            continue
        answered = ann.client.get(path).status_code
        if answered == 405:
            continue
        assert answered in (200, 302), (name, answered)


def test_team_b_does_not_see_team_a_in_its_own_pages(
    team_a_objects: dict[str, Any], bob: Person
) -> None:
    for path in ("/rooms", "/keys", "/team", "/audit", "/account"):
        body = bob.client.get(path).content.decode()
        assert "team-a-room" not in body, path
        assert "ann-secret-key-name" not in body and "ann@example.com" not in body, path


def test_team_b_cannot_switch_into_team_a(
    team_a_objects: dict[str, Any], ann: Person, bob: Person
) -> None:
    assert bob.client.post("/team/switch", {"team": ann.team.slug}).status_code == 404
    assert "team-a-room" not in bob.client.get("/rooms").content.decode()


def test_nobody_signed_in_is_sent_to_sign_in(team_a_objects: dict[str, Any]) -> None:
    anonymous = Client()
    for name, path in [*team_a_urls(team_a_objects), ("rooms", "/rooms"), ("keys", "/keys")]:
        response = anonymous.get(path)
        if response.status_code == 405:
            continue
        assert response.status_code == 302 and response["Location"].startswith("/login"), name


def test_a_revoked_or_expired_share_link_is_404(
    team_a_objects: dict[str, Any], ann: Person
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from tenants.models import Room, ShareLink

    token = team_a_objects["token"]
    assert Client().get(f"/s/{token}/").status_code == 200
    link = ShareLink.objects.get(pk=team_a_objects["link_id"])
    people.share_link_revoke(link=link, actor="test")
    assert Client().get(f"/s/{token}/").status_code == 404
    assert Client().get(f"/s/{token}/live").status_code == 404
    room = Room.objects.get(room_id="team-a-room")
    expired = people.share_link_create(
        room=room,
        label="",
        expires_at=timezone.now() - timedelta(seconds=1),
        created_by=None,
        actor="t",
    )
    assert Client().get(f"/s/{expired.token}/").status_code == 404
    assert Client().get("/s/rs_share_notatoken/").status_code == 404
