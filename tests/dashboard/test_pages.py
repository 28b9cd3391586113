"""The dashboard's pages do what a person expects of them."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client

from rooms.services import context as context_services
from rooms.services import events as events_services
from rooms.services import plan as plan_services
from rooms.services import presence as presence_services
from rooms.services import vars as vars_services
from rooms.services import verification as verification_services
from rooms.store import connections as connections_store
from rooms.store import engine as engine_store
from tenants import services
from tenants.access import room_access
from tenants.credentials import secret_digest
from tenants.models import ApiKey, AuditEvent, Membership, Room, Team
from tests import callers
from tests.conftest import new_room_id
from tests.dashboard.conftest import PASSWORD, Person, person

pytestmark = pytest.mark.store


def test_signing_up_creates_the_persons_own_team_and_signs_them_in(settings: Any) -> None:
    from config.settings.people import PASSWORD_HASHERS

    settings.PASSWORD_HASHERS = PASSWORD_HASHERS  # the service's own (tests/settings.py)
    client = Client()
    response = client.post("/signup", {"email": "New@Example.com", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/rooms"
    user = User.objects.get(email="new@example.com")
    assert user.password.startswith("argon2")
    membership = Membership.objects.get(user=user)
    assert membership.role == "owner"
    assert client.get("/rooms").status_code == 200


def test_sign_up_refuses_weak_passwords_and_taken_emails(ann: Person) -> None:
    weak = Client().post("/signup", {"email": "x@example.com", "password": "password123"})
    assert weak.status_code == 200 and "too common" in weak.content.decode()
    taken = Client().post("/signup", {"email": "ann@example.com", "password": PASSWORD})
    assert "exists" in taken.content.decode()


def test_forms_need_the_csrf_token(ann: Person) -> None:
    strict = Client(enforce_csrf_checks=True)
    assert (
        strict.post("/login", {"email": "ann@example.com", "password": PASSWORD}).status_code == 403
    )


def test_failed_sign_ins_are_throttled(ann: Person, settings: object) -> None:
    settings.LOGIN_FAILURES_ALLOWED = 3  # type: ignore[attr-defined]
    client = Client(REMOTE_ADDR="10.9.8.7")
    for _ in range(3):
        assert (
            "Wrong email or password"
            in client.post(
                "/login", {"email": "ann@example.com", "password": "no"}
            ).content.decode()
        )
    blocked = client.post("/login", {"email": "ann@example.com", "password": PASSWORD})
    assert blocked.status_code == 200 and "Too many failed attempts" in blocked.content.decode()
    assert "_auth_user_id" not in client.session


def test_apikey_mode_enters_with_a_team_key_and_revoking_it_ends_the_session(
    settings: object,
) -> None:
    settings.AUTH_MODE = "apikey"  # type: ignore[attr-defined]
    team = services.team_ensure("keyed")
    minted = services.api_key_create(team=team, name="door")
    client = Client()
    assert client.get("/signup").status_code == 404
    assert client.post("/login", {"key": "rs_live_wrong"}).status_code == 200
    assert client.post("/login", {"key": minted.secret})["Location"] == "/rooms"
    assert client.get("/rooms").status_code == 200
    services.api_key_revoke(key=minted.key)
    assert client.get("/rooms")["Location"].startswith("/login")


def test_creating_a_room_with_a_chosen_or_generated_id(ann: Person) -> None:
    chosen = ann.client.post("/rooms", {"room_id": "my-project", "name": "My project"})
    assert chosen["Location"] == "/rooms/my-project/"
    generated = ann.client.post("/rooms", {"room_id": "", "name": ""})
    room_id = generated["Location"].split("/")[2]
    assert re.fullmatch(r"r-[a-z0-9]{20}", room_id)
    bad = ann.client.post("/rooms", {"room_id": "Bad Id"})
    assert bad.status_code == 200 and "2-64 characters" in bad.content.decode()
    page = ann.client.get("/rooms").content.decode()
    assert "My project" in page and "0 / 0 tasks done" in page


def test_a_key_is_shown_once_and_revoked_after_confirmation(ann: Person) -> None:
    created = ann.client.post("/keys", {"name": "laptop agent"}).content.decode()
    secret = re.search(r"rs_live_[A-Za-z0-9_-]+", created).group(0)  # type: ignore[union-attr]
    listing = ann.client.get("/keys").content.decode()
    assert "laptop agent" in listing and secret not in listing
    key = ApiKey.objects.get(name="laptop agent")
    confirm = ann.client.get(f"/keys/{key.pk}/revoke")
    assert confirm.status_code == 200 and "cannot be undone" in confirm.content.decode()
    key.refresh_from_db()
    assert key.revoked_at is None  # a GET only asks
    ann.client.post(f"/keys/{key.pk}/revoke")
    key.refresh_from_db()
    assert key.revoked_at is not None


def _filled_room(owner: Person) -> Room:
    room = services.room_create(team=owner.team, room_id=new_room_id("filled"), actor="test")
    caller = callers.team_caller(owner.team.slug)

    async def fill() -> None:
        ref = await room_access(caller, room.room_id, write=True)
        api = await plan_services.task_add(
            ref, title="auth API", description="", depends_on=[], priority=None, agent_id="backend"
        )
        await plan_services.task_add(
            ref,
            title="login UI",
            description="",
            depends_on=[api["id"]],
            priority=None,
            agent_id="backend",
        )
        await plan_services.task_update(
            ref,
            task_id=api["id"],
            status="done",
            owner_given=True,
            owner="backend",
            note="shipped",
            description=None,
            agent_id="backend",
        )
        contract = await context_services.context_write(
            ref,
            type_="api_contract",
            summary="auth contract",
            consuming_agents=["frontend"],
            author="backend",
            payload={
                "service": "auth",
                "version": "1",
                "endpoints": [
                    {
                        "method": "POST",
                        "path": "/login",
                        "response": {},
                        "auth_required": False,
                        "description": "log in",
                    }
                ],
            },
        )
        await context_services.context_update(
            ref,
            entry_id=contract["id"],
            author="backend",
            summary=None,
            consuming_agents=None,
            expected_version=None,
            payload={
                "service": "auth",
                "version": "2",
                "endpoints": [
                    {
                        "method": "POST",
                        "path": "/login",
                        "response": {},
                        "auth_required": False,
                        "description": "log in",
                    },
                    {
                        "method": "POST",
                        "path": "/logout",
                        "response": {},
                        "auth_required": True,
                        "description": "log out",
                    },
                ],
            },
        )
        await context_services.context_write(
            ref,
            type_="arch_decision",
            summary="JWT",
            consuming_agents=[],
            author="backend",
            payload={
                "title": "Use JWT",
                "decision": "JWT in cookies",
                "rationale": "stateless",
                "alternatives": ["sessions"],
                "consequences": ["rotate keys"],
            },
        )
        event = await events_services.event_post(
            ref, type_="peer_request", from_="frontend", to="backend", payload={"q": "cors?"}
        )
        await events_services.event_post(
            ref,
            type_="peer_reply",
            from_="backend",
            to="frontend",
            payload={"a": "yes"},
            reply_to=event["id"],
        )
        await presence_services.presence_heartbeat(ref, agent_id="backend")
        await vars_services.var_set(ref, key="port", value="3000", agent_id="backend")

    engine_store.run_sync(fill)
    return room


def test_the_room_page_shows_each_agents_tier_and_the_hook_switches(ann: Person) -> None:
    """Issue 24: working, idle (a session ended) or gone, and the set_room_mode switches."""
    room = _filled_room(ann)
    caller = callers.team_caller(ann.team.slug)

    async def rest() -> None:
        ref = await room_access(caller, room.room_id, write=True)
        await presence_services.presence_heartbeat(ref, agent_id="frontend", idle=True)
        await verification_services.room_mode_set(
            ref, agent_id="lead", evidence_required=None, auto_leases=False
        )

    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    assert "backend</strong> working" in page
    assert "automatic leases <strong>on</strong>" in page
    engine_store.run_sync(rest)
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    assert "frontend</strong> idle" in page
    assert "automatic leases <strong>off</strong>" in page
    assert "edit refusals <strong>on</strong>" in page


def test_the_room_page_shows_board_agents_feed_context_vars(ann: Person) -> None:
    room = _filled_room(ann)
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    for expected in (
        "auth API",
        "login UI",
        "after: <a href=",  # the dependency by its title, linked
        "shipped",
        "backend</strong> working",
        "auth contract",
        "/logout",
        "port",
        "3000",
        "in reply to frontend",
        'hx-trigger="roomchange from:body"',
        'data-stream="/api/v1/rooms/',
    ):
        assert expected in page, expected
    live = ann.client.get(f"/rooms/{room.room_id}/live").content.decode()
    for panel in ("board", "agents", "feed", "context", "vars"):
        assert f'id="{panel}" hx-swap-oob="innerHTML"' in live
    assert "<html" not in live


def test_a_contract_page_lists_versions_and_what_changed(ann: Person) -> None:
    room = _filled_room(ann)
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    entry_id = re.search(r"/context/(c_[A-Za-z0-9]+)\">auth contract", page).group(1)  # type: ignore[union-attr]
    history = ann.client.get(f"/rooms/{room.room_id}/context/{entry_id}").content.decode()
    assert "Version 1.1" in history and "Version 1.0" in history
    assert (
        "endpoint added: POST /logout" in history
        and "version: &quot;1&quot; -&gt; &quot;2&quot;" in history
    )
    assert ann.client.get(f"/rooms/{room.room_id}/context/c_nope").status_code == 404


def test_the_report_is_markdown_with_plan_decisions_contracts_and_timeline(ann: Person) -> None:
    room = _filled_room(ann)
    download = ann.client.get(f"/rooms/{room.room_id}/report.md")
    assert download["Content-Type"].startswith("text/markdown")
    assert "attachment" in download["Content-Disposition"]
    text = download.content.decode()
    for expected in (
        f"# Room `{room.room_id}`",
        "1 of 2 tasks done",
        "| auth API | done | backend |",
        "### Use JWT",
        "**Decision.** JWT in cookies",
        "contract v1.1",
        "endpoint added: POST /logout",
        "## Timeline",
        "moved “auth API” pending → done — shipped",
    ):
        assert expected in text, expected
    printable = ann.client.get(f"/rooms/{room.room_id}/report").content.decode()
    assert "data-print" in printable and "Use JWT" in printable


def test_the_connect_page_fills_in_the_real_url_room_and_a_new_key(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("connect"), actor="test")
    placeholder = ann.client.get(f"/rooms/{room.room_id}/connect").content.decode()
    assert "http://testserver/mcp?tools=core" in placeholder and "&lt;YOUR_KEY&gt;" in placeholder
    minted = ann.client.post(f"/rooms/{room.room_id}/connect")
    assert minted.status_code == 302  # then the page that shows the secret, once
    filled = html.unescape(ann.client.get(minted["Location"]).content.decode())
    secret = re.search(r"rs_live_[A-Za-z0-9_-]+", filled).group(0)  # type: ignore[union-attr]
    assert "It reaches every room of team" in filled
    for snippet in (
        'claude mcp add --transport http roomservice "http://testserver/mcp?tools=core"',
        'url = "http://testserver/mcp?tools=core"',
        '"url": "http://testserver/mcp?tools=core"',
        "bearer_token_env_var",
        ".vscode/mcp.json",
        ".cursor/mcp.json",
        'curl -s "http://testserver/mcp?tools=core"',
        "get_my_summary",
        f"Bearer {secret}",
    ):
        assert snippet in filled, snippet

    # A reload shows the secret no more and mints nothing; the key is listed by prefix.
    keys_before = ApiKey.objects.filter(team=ann.team).count()
    reloaded = ann.client.get(f"/rooms/{room.room_id}/connect").content.decode()
    assert secret not in reloaded and "&lt;YOUR_KEY&gt;" in reloaded
    made = ApiKey.objects.get(digest=secret_digest(secret))
    assert f"<code>{made.prefix}…</code>" in reloaded
    assert ApiKey.objects.filter(team=ann.team).count() == keys_before


def test_invites_are_created_listed_and_revoked(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("invite"), actor="test")
    created = ann.client.post(
        f"/rooms/{room.room_id}/invites", {"label": "reviewer", "expires_in": "3600"}, follow=True
    )
    page = created.content.decode()
    secret = re.search(r"rs_inv_[A-Za-z0-9_-]+", page).group(0)  # type: ignore[union-attr]
    invite = room.invites.get()
    # The guest's ready setup: URL, room, a snippet per client, the expiry.
    for expected in (
        "The guest's setup",
        'claude mcp add --transport http roomservice "http://testserver/mcp?tools=core"',
        f"Bearer {secret}",
        ".cursor/mcp.json",
        "bearer_token_env_var",
        f"use roomId <code>{room.room_id}</code>",
        invite.expires_at.strftime("%Y-%m-%d %H:%M"),  # type: ignore[union-attr]
    ):
        assert expected in page, expected
    # A reload makes no second invite and shows the secret no more.
    again = ann.client.get(f"/rooms/{room.room_id}/invites").content.decode()
    assert secret not in again and room.invites.count() == 1
    assert invite.label == "reviewer" and invite.expires_at is not None
    ann.client.post(f"/rooms/{room.room_id}/invites/{invite.pk}/revoke")
    invite.refresh_from_db()
    assert (
        invite.revoked_at is not None
        and secret not in ann.client.get(f"/rooms/{room.room_id}/invites").content.decode()
    )


def test_a_share_link_shows_the_room_read_only_without_secrets_or_controls(ann: Person) -> None:
    room = _filled_room(ann)
    services.api_key_create(team=ann.team, name="hidden-key-name")
    created = ann.client.post(
        f"/rooms/{room.room_id}/share", {"label": "for the PM"}
    ).content.decode()
    link = re.search(r"http://testserver(/s/rs_share_[A-Za-z0-9_-]+/)", created).group(1)  # type: ignore[union-attr]
    public = Client().get(link)
    body = public.content.decode()
    assert public.status_code == 200 and "auth API" in body and "auth contract" in body
    for absent in (
        "rs_live_",
        "rs_inv_",
        "hidden-key-name",
        "<form",
        "/keys",
        "Connect",
        "csrfmiddlewaretoken",
    ):
        assert absent not in body, absent
    assert public["Referrer-Policy"] == "no-referrer"
    assert Client().get(link + "live").status_code == 200


def test_owners_invite_members_by_email_and_manage_roles(ann: Person, bob: Person) -> None:
    ann.client.post("/team", {"email": "bob@example.com", "role": "admin"})
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["bob@example.com"]
    link = re.search(r"http://testserver(/join/\S+)", mail.outbox[0].body).group(1)  # type: ignore[union-attr]
    assert "Join" in bob.client.get(link).content.decode()
    bob.client.post(link)
    membership = Membership.objects.get(team=ann.team, user=bob.user)
    assert membership.role == "admin"
    assert bob.client.get(link).status_code == 404  # used
    bob.client.post("/team/switch", {"team": ann.team.slug})
    assert "Rooms" in bob.client.get("/rooms").content.decode()
    assert bob.client.get("/audit").status_code == 404  # owners only
    ann.client.post(f"/team/members/{membership.pk}/role", {"role": "member"})
    membership.refresh_from_db()
    assert membership.role == "member"
    assert bob.client.get("/keys").status_code == 404  # members do not manage keys
    ann.client.post(f"/team/members/{membership.pk}/remove")
    assert not Membership.objects.filter(pk=membership.pk).exists()
    own = Membership.objects.get(team=ann.team, user=ann.user)
    last_owner = ann.client.post(f"/team/members/{own.pk}/remove")
    assert last_owner.status_code == 403 and "at least one owner" in last_owner.content.decode()
    assert Membership.objects.filter(pk=own.pk).exists()
    actions = set(AuditEvent.objects.filter(team=ann.team).values_list("action", flat=True))
    assert {
        "membership.invite",
        "membership.add",
        "membership.role",
        "membership.remove",
    } <= actions
    audit = ann.client.get("/audit").content.decode()
    assert "membership.role" in audit


def test_deleting_an_account_removes_the_person_and_their_last_owned_teams(ann: Person) -> None:
    room = _filled_room(ann)
    shared_team = Team.objects.create(slug="shared-team", name="shared")
    other = person("carol@example.com")
    Membership.objects.create(team=shared_team, user=other.user, role="owner")
    Membership.objects.create(team=shared_team, user=ann.user, role="owner")
    wrong = ann.client.post("/account", {"confirm": "yes"})
    assert "Type exactly" in wrong.content.decode()
    ann.client.post("/account", {"confirm": "delete my account"})
    assert not User.objects.filter(email="ann@example.com").exists()
    assert not Team.objects.filter(pk=ann.team.pk).exists()
    assert not Room.objects.filter(room_id=room.room_id).exists()
    assert Team.objects.filter(slug="shared-team").exists()  # carol still owns it

    async def leftovers() -> int:
        from rooms.keys import RoomKeys

        return int(await connections_store.client().exists(*RoomKeys(room.room_id).durable()))

    assert engine_store.run_sync(leftovers) == 0


def test_changing_the_password(ann: Person) -> None:
    wrong = ann.client.post("/account", {"current": "nope", "new": "another-long-passphrase"})
    assert "not your current password" in wrong.content.decode()
    ann.client.post("/account", {"current": PASSWORD, "new": "another-long-passphrase"})
    assert Client().login(username="ann@example.com", password="another-long-passphrase")


@pytest.mark.parametrize("path", ["/", "/login", "/signup"])
def test_public_pages_render_with_labels(path: str) -> None:
    body = Client().get(path).content.decode()
    assert (
        '<html lang="en">' in body and "/static/app.css" in body and "/static/htmx.min.js" in body
    )
    for field in re.findall(r'<input[^>]*id="(id_[a-z_]+)"', body):
        assert f'for="{field}"' in body


def test_static_files_are_served_without_a_cdn() -> None:
    import asyncio

    import httpx

    from config.asgi import application

    async def get(path: str) -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application), base_url="http://t"
        ) as c:
            response = await c.get(path)
        await engine_store.close_client()
        return response

    assert asyncio.run(get("/static/htmx.min.js")).status_code == 200
    assert "htmx" in asyncio.run(get("/static/htmx.min.js")).text[:200]
    assert asyncio.run(get("/static/app.css")).status_code == 200
    assert asyncio.run(get("/static/admin/css/base.css")).status_code == 200
    assert asyncio.run(get("/static/../config/settings.py")).status_code == 404


def test_teams_keep_an_owner_through_role_changes(ann: Person, bob: Person) -> None:
    membership = services.membership_add(team=ann.team, user=bob.user, role="admin", actor="t")
    own = Membership.objects.get(team=ann.team, user=ann.user)
    demoted = ann.client.post(f"/team/members/{own.pk}/role", {"role": "member"})
    assert demoted.status_code == 403 and "keeps at least one owner" in demoted.content.decode()
    assert Membership.objects.get(pk=own.pk).role == "owner"
    ann.client.post(f"/team/members/{membership.pk}/role", {"role": "owner"})
    assert ann.client.post(f"/team/members/{own.pk}/role", {"role": "member"}).status_code == 302
    assert Membership.objects.get(pk=own.pk).role == "member"


def test_the_last_owner_leaving_hands_the_team_to_its_longest_standing_admin(
    ann: Person, bob: Person
) -> None:
    carol = person("carol@example.com")
    services.membership_add(team=ann.team, user=bob.user, role="admin", actor="t")
    services.membership_add(team=ann.team, user=carol.user, role="admin", actor="t")
    ann.client.post("/account", {"confirm": "delete my account"})
    assert not User.objects.filter(email="ann@example.com").exists()
    team = Team.objects.get(pk=ann.team.pk)  # not deleted under its members
    assert Membership.objects.get(team=team, user=bob.user).role == "owner"
    assert Membership.objects.get(team=team, user=carol.user).role == "admin"


def test_the_last_owner_of_a_team_with_only_members_is_refused_not_obeyed(
    ann: Person, bob: Person
) -> None:
    services.membership_add(team=ann.team, user=bob.user, role="member", actor="t")
    refused = ann.client.post("/account", {"confirm": "delete my account"})
    assert refused.status_code == 200 and "last owner" in refused.content.decode()
    assert User.objects.filter(email="ann@example.com").exists()
    assert Team.objects.filter(pk=ann.team.pk).exists()


def test_pages_that_show_a_secret_are_never_cached_and_every_page_has_a_csp(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("nc"), actor="t")
    for path in (
        "/keys",
        f"/rooms/{room.room_id}/invites",
        f"/rooms/{room.room_id}/connect",
        f"/rooms/{room.room_id}/share",
        f"/rooms/{room.room_id}/webhooks",
    ):
        response = ann.client.get(path)
        assert "no-store" in response["Cache-Control"], path
    page = ann.client.get(f"/rooms/{room.room_id}/")
    assert "script-src 'self'" in page["Content-Security-Policy"]
    assert "'unsafe-inline'" not in page["Content-Security-Policy"]
    assert "unsafe-eval" not in page["Content-Security-Policy"]
