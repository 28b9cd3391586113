"""The archive's doors besides the tool: the API (archive, restore, export, import), the
management commands, and who may use them (another team, a guest, a read-only key)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from tenants import services
from tenants.models import Room, RoomArchive, Team

pytestmark = pytest.mark.store


def _team(slug: str, **key: Any) -> tuple[Team, dict[str, str]]:
    team = services.team_create(slug=slug)
    minted = services.api_key_create(team=team, name="k", **key)
    return team, {"HTTP_AUTHORIZATION": f"Bearer {minted.secret}"}


def tool(c: APIClient, auth: dict[str, str], room_id: str, name: str, **args: Any) -> Any:
    r = c.post(f"/api/v1/rooms/{room_id}/tools/{name}", args, format="json", **auth)
    assert r.status_code == 200, r.content
    return r.json()


def test_the_api_archives_exports_imports_and_restores_a_room() -> None:
    c = APIClient()
    _, auth = _team("arch-a")
    _, auth_b = _team("arch-b")
    room = c.post("/api/v1/rooms", {"roomId": "arch-api-room"}, format="json", **auth).json()
    rid = room["roomId"]
    tool(c, auth, rid, "add_task", title="kept")

    r = c.post(f"/api/v1/rooms/{rid}/archive", **auth)
    assert r.status_code == 200, r.content
    assert r.json() == {"roomId": rid, "status": "archived", "previousStatus": "active"}
    assert [t["title"] for t in tool(c, auth, rid, "read_plan")["tasks"]] == ["kept"]
    refused = c.post(f"/api/v1/rooms/{rid}/tools/add_task", {"title": "x"}, format="json", **auth)
    assert refused.status_code == 409 and "/restore" in refused.json()["message"]

    exported = c.get(f"/api/v1/rooms/{rid}/export", **auth)
    assert exported.status_code == 200
    assert "attachment" in exported["Content-Disposition"]
    assert exported.json()["roomId"] == rid  # JSON, though import takes its bytes as they are
    document = exported.content

    # Another team reaches none of it: not the archive, the export nor the restore.
    for method, path in (
        ("post", f"/api/v1/rooms/{rid}/archive"),
        ("post", f"/api/v1/rooms/{rid}/restore"),
        ("get", f"/api/v1/rooms/{rid}/export"),
    ):
        r = getattr(c, method)(path, **auth_b)
        assert r.status_code == 404, (path, r.content)
    # ...but may import a document it was given, as a room of its own.
    r = c.post(
        "/api/v1/rooms/import?roomId=arch-api-copy",
        document,
        content_type="application/json",
        **auth_b,
    )
    assert r.status_code == 201, r.content
    assert [t["title"] for t in tool(c, auth_b, "arch-api-copy", "read_plan")["tasks"]] == ["kept"]
    assert Room.objects.get(room_id="arch-api-copy").team.slug == "arch-b"
    again = c.post(
        "/api/v1/rooms/import?roomId=arch-api-copy",
        document,
        content_type="application/json",
        **auth_b,
    )
    # A taken id (here the team's own) gets the one room denial, as another team's would.
    assert again.status_code == 404 and again.json()["code"] == "room_not_found"
    garbled = c.post(
        "/api/v1/rooms/import?roomId=arch-api-bad",
        b"{not json",
        content_type="application/json",
        **auth_b,
    )
    assert garbled.status_code == 400 and "no signature" in garbled.json()["message"]
    deep = c.post(
        "/api/v1/rooms/import?roomId=arch-api-deep",
        b"[" * 100_000,
        content_type="application/json",
        **auth_b,
    )
    assert deep.status_code == 400 and "no signature" in deep.json()["message"]

    for _ in range(2):  # idempotent: the second restore changes nothing
        r = c.post(f"/api/v1/rooms/{rid}/restore", **auth)
        assert r.status_code == 200, r.content
    assert r.json()["previousStatus"] == "active"
    tool(c, auth, rid, "add_task", title="after")
    assert RoomArchive.objects.get(room__room_id=rid).restored_at is not None


def test_a_read_only_key_and_a_guest_may_not_archive_or_restore() -> None:
    c = APIClient()
    team, auth = _team("arch-c")
    reader = services.api_key_create(team=team, name="ro", read_only=True)
    ro = {"HTTP_AUTHORIZATION": f"Bearer {reader.secret}"}
    rid = c.post("/api/v1/rooms", {"roomId": "arch-ro"}, format="json", **auth).json()["roomId"]
    invite = c.post(f"/api/v1/rooms/{rid}/invites", {}, format="json", **auth).json()["secret"]
    guest = {"HTTP_AUTHORIZATION": f"Bearer {invite}"}
    for who in (ro, guest):
        for path in (f"/api/v1/rooms/{rid}/archive", f"/api/v1/rooms/{rid}/restore"):
            r = c.post(path, **who)
            assert r.status_code == 403, (path, r.content)
        assert c.get(f"/api/v1/rooms/{rid}/export", **guest).status_code == 403
    document = c.get(f"/api/v1/rooms/{rid}/export", **auth).content
    for who in (ro, guest):
        r = c.post(
            "/api/v1/rooms/import?roomId=arch-ro-copy",
            document,
            content_type="application/json",
            **who,
        )
        assert r.status_code == 403, r.content
    assert not Room.objects.filter(room_id="arch-ro-copy").exists()
    assert Room.objects.get(room_id=rid).status == "active"


def test_the_management_commands_archive_export_import_and_restore(tmp_path: Path) -> None:
    c = APIClient()
    _, auth = _team("arch-d")
    services.team_create(slug="arch-e")
    rid = c.post("/api/v1/rooms", {"roomId": "arch-cli"}, format="json", **auth).json()["roomId"]
    tool(c, auth, rid, "add_task", title="by the cli")

    out = io.StringIO()
    call_command("room_archive", rid, stdout=out)
    assert "active -> archived" in out.getvalue()
    target = tmp_path / "room.json"
    call_command("room_export", rid, output=str(target))
    call_command("room_import", "arch-e", str(target), room_id="arch-cli-copy", stdout=out)
    assert Room.objects.get(room_id="arch-cli-copy").team.slug == "arch-e"
    call_command("room_restore", rid, stdout=out)
    assert "archived -> active" in out.getvalue()
    assert [t["title"] for t in tool(c, auth, rid, "read_plan")["tasks"]] == ["by the cli"]


@pytest.fixture(autouse=True)
def _settings(settings: Any) -> None:
    settings.ROOM_CLAIM_ON_FIRST_TOUCH = False
