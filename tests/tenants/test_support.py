"""What support staff and operators use: the audit log, the admin, the commands, and an
OpenAPI schema that matches the API."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from tenants import services
from tenants.auth import Bearer, KeySession, credential_lookup
from tenants.credentials import secret_digest
from tenants.models import ApiKey, AuditEvent, Invite, Room, Team

pytestmark = pytest.mark.store


def test_audit_rows_for_keys_invites_claims_and_memberships() -> None:
    team = services.team_ensure("audited")
    minted = services.api_key_create(team=team, name="k", actor="user:1")
    services.api_key_revoke(key=minted.key, actor="user:1")
    owner = services.room_claim(team_id=team.pk, room_id="audited-room", actor=f"static:{team.pk}")
    assert owner == team.pk
    invite = services.invite_create(
        room=Room.objects.get(room_id="audited-room"), label="guest", actor="user:1"
    )
    services.invite_revoke(invite=invite.invite, actor="user:1")
    user = User.objects.create_user("ann", "ann@example.com", "pw-123456789")
    membership = services.membership_add(team=team, user=user, role="member", actor="user:1")
    services.membership_change_role(membership=membership, role="admin", actor="user:1")
    services.membership_remove(membership=membership, actor="user:1")

    actions = list(
        AuditEvent.objects.filter(team=team).order_by("id").values_list("action", "actor")
    )
    assert actions == [
        ("key.create", "user:1"),
        ("key.revoke", "user:1"),
        ("room.claim", f"static:{team.pk}"),
        ("invite.create", "user:1"),
        ("invite.revoke", "user:1"),
        ("membership.add", "user:1"),
        ("membership.role", "user:1"),
        ("membership.remove", "user:1"),
    ]
    # Secrets never reach the log: only display prefixes.
    for row in AuditEvent.objects.filter(team=team):
        assert minted.secret not in str(row.detail) and invite.secret not in str(row.detail)


def test_the_audit_log_is_append_only() -> None:
    row = services.audit_record(team=None, actor="system", action="x", object_type="t", object_id=1)
    with pytest.raises(TypeError):
        row.save()
    with pytest.raises(TypeError):
        row.delete()
    with pytest.raises(TypeError):
        AuditEvent.objects.all().update(action="y")
    with pytest.raises(TypeError):
        AuditEvent.objects.all().delete()


def test_keys_and_invites_are_stored_only_as_digests() -> None:
    team = services.team_ensure("digests")
    minted = services.api_key_create(team=team, name="k")
    assert minted.secret.startswith("rs_live_")
    stored = ApiKey.objects.get(pk=minted.key.pk)
    assert stored.digest == secret_digest(minted.secret)
    assert minted.secret not in {str(getattr(stored, f.attname)) for f in ApiKey._meta.fields}
    room = services.room_create(team=team, room_id=None, actor="test")
    assert room.room_id.startswith("r-") and len(room.room_id) == 22
    invite = services.invite_create(room=room)
    assert invite.secret.startswith("rs_inv_")
    assert Invite.objects.get(pk=invite.invite.pk).digest == secret_digest(invite.secret)
    guest = credential_lookup(Bearer(invite.secret))
    assert guest is not None and guest.room == room.room_id


@pytest.fixture
def staff() -> Client:
    User.objects.create_superuser("support", "support@example.com", "pw-123456789")
    client = Client()
    assert client.login(username="support", password="pw-123456789")
    return client


def test_the_admin_shows_every_model_and_never_a_digest(staff: Client) -> None:
    team = services.team_ensure("admin-team")
    minted = services.api_key_create(team=team, name="visible name")
    room = services.room_create(team=team, room_id="admin-room", actor="test")
    invite = services.invite_create(room=room, label="guest label")
    user = User.objects.create_user("bob", "bob@example.com", "pw-123456789")
    services.membership_add(team=team, user=user, role="owner", actor="test")
    for model in ("team", "membership", "apikey", "invite", "room", "auditevent"):
        page = staff.get(f"/admin/tenants/{model}/")
        assert page.status_code == 200, model
        body = page.content.decode()
        assert minted.key.digest not in body and invite.invite.digest not in body
    assert "visible name" in staff.get("/admin/tenants/apikey/?q=visible").content.decode()
    detail = staff.get(f"/admin/tenants/apikey/{minted.key.pk}/change/").content.decode()
    assert (
        minted.key.prefix in detail
        and minted.key.digest not in detail
        and 'name="digest"' not in detail
    )
    assert "guest label" in staff.get("/admin/tenants/invite/").content.decode()
    audit_row = AuditEvent.objects.filter(team=team).first()
    assert audit_row is not None
    change = staff.get(f"/admin/tenants/auditevent/{audit_row.pk}/change/")
    assert change.status_code == 200 and 'name="_save"' not in change.content.decode()
    assert staff.post(f"/admin/tenants/auditevent/{audit_row.pk}/delete/").status_code == 403
    assert staff.get("/admin/tenants/auditevent/add/").status_code == 403


def test_management_commands_create_mint_invite_and_revoke() -> None:
    out = StringIO()
    call_command("create_team", "cli-team", "--room-cap", "4", stdout=out)
    assert Team.objects.get(slug="cli-team").room_cap == 4
    out = StringIO()
    call_command("mint_key", "cli-team", "--name", "ci", "--agent", "ci-bot", stdout=out)
    secret = out.getvalue().strip()
    key = ApiKey.objects.get(digest=secret_digest(secret))
    assert key.agent_name == "ci-bot" and key.team.slug == "cli-team"
    services.room_create(team=key.team, room_id="cli-room", actor="test")
    out = StringIO()
    call_command("mint_invite", "cli-room", "--label", "pair", "--expires-in", "3600", stdout=out)
    invite = Invite.objects.get(digest=secret_digest(out.getvalue().strip()))
    assert invite.label == "pair"
    assert (
        timezone.now() + timedelta(minutes=59)
        < invite.expires_at
        < timezone.now() + timedelta(minutes=61)
    )  # type: ignore[operator]
    out = StringIO()
    call_command("revoke_key", key.prefix, stdout=out)
    key.refresh_from_db()
    assert key.revoked_at is not None and "revoked" in out.getvalue()
    assert credential_lookup(KeySession(key.digest)) is None


def test_the_openapi_schema_lists_every_api_route_and_matches_responses(settings: object) -> None:
    settings.API_KEYS = "root:root-secret-0123456789"  # type: ignore[attr-defined]
    client = APIClient()
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    documented = set(schema["paths"])
    routes = set()
    for pattern in get_resolver().url_patterns:
        prefix = str(pattern.pattern)
        for sub in getattr(pattern, "url_patterns", [pattern]):
            route = "/" + (prefix if sub is pattern else prefix + str(sub.pattern))
            if route.startswith(("/api/v1/", "/room/")) and "schema" not in route:
                routes.add(route.replace("<str:", "{").replace("<int:", "{").replace(">", "}"))
    # The tool door is one route with a {tool} parameter, documented once per tool.
    from rooms import registry

    expanded = set()
    for route in routes:
        if route.endswith("/tools/{tool}"):
            scope = "room" if "{room_id}" in route else "caller"
            names = [t.name for t in registry.TOOLS if t.scope == scope]
            expanded |= {route.replace("{tool}", name) for name in names}
        else:
            expanded.add(route)
    assert expanded == documented

    def fields(ref_or_schema: dict) -> tuple[set[str], set[str]]:  # type: ignore[type-arg]
        item = ref_or_schema.get("items", ref_or_schema)
        name = item["$ref"].split("/")[-1]
        component = schema["components"]["schemas"][name]
        return set(component["properties"]), set(component.get("required", []))

    root = {"HTTP_AUTHORIZATION": "Bearer root-secret-0123456789"}
    made = client.post("/api/v1/teams", {"slug": "schema-team"}, format="json", **root)
    key = {"HTTP_AUTHORIZATION": f"Bearer {made.json()['key']['secret']}"}
    room = client.post("/api/v1/rooms", {"roomId": "schema-room"}, format="json", **key)
    checks = [
        ("/api/v1/teams", "post", "201", made.json()),
        ("/api/v1/me", "get", "200", client.get("/api/v1/me", **key).json()),
        ("/api/v1/keys", "get", "200", client.get("/api/v1/keys", **key).json()[0]),
        ("/api/v1/rooms", "post", "201", room.json()),
        (
            "/api/v1/rooms/{room_id}/invites",
            "post",
            "201",
            client.post("/api/v1/rooms/schema-room/invites", {}, format="json", **key).json(),
        ),
        ("/room/{room_id}", "get", "200", client.get("/room/schema-room", **key).json()),
    ]
    for path, method, code, body in checks:
        content = schema["paths"][path][method]["responses"][code]["content"]["application/json"][
            "schema"
        ]
        properties, required = fields(content)
        assert set(body) == properties, path
        assert required <= set(body), path


def test_the_openapi_schema_is_valid_and_documents_every_tool(tmp_path: object) -> None:
    from pathlib import Path

    import yaml

    from rooms import registry

    target = Path(str(tmp_path)) / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    operations = {op["operationId"] for path in schema["paths"].values() for op in path.values()}
    assert {f"tool_{t.name}" for t in registry.TOOLS} <= operations
    assert "room_events_stream" in operations
    body = schema["paths"]["/api/v1/rooms/{room_id}/tools/update_task"]["post"]["requestBody"]
    properties = body["content"]["application/json"]["schema"]["properties"]
    assert {"taskId", "status", "owner", "note"} <= set(properties) and "roomId" not in properties
