"""DELETE /api/v1/rooms/<id>: a room deleted for good by whom may manage rooms, and by no
other team (the conformance kit takes its rooms away with it)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tenants import services
from tenants.models import AuditEvent, Room, Team
from tests.conftest import redis_for_assertions

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.store]


def _team(slug: str, **key: Any) -> tuple[Team, dict[str, str]]:
    team = services.team_create(slug=slug)
    minted = services.api_key_create(team=team, name="k", **key)
    return team, {"HTTP_AUTHORIZATION": f"Bearer {minted.secret}"}


def tool(c: APIClient, auth: dict[str, str], room_id: str, name: str, **args: Any) -> Any:
    r = c.post(f"/api/v1/rooms/{room_id}/tools/{name}", args, format="json", **auth)
    assert r.status_code == 200, r.content
    return r.json()


def _room_keys(room_id: str) -> list[bytes]:
    r = redis_for_assertions(decode_responses=False)
    try:
        return [k for k in r.scan_iter(match=f"*{room_id}*", count=1000)]
    finally:
        r.close()


def test_another_team_cannot_delete_a_room_and_its_owner_can() -> None:
    c = APIClient()
    team, auth = _team("del-a")
    _, auth_b = _team("del-b")
    rid = c.post("/api/v1/rooms", {"roomId": "del-api-room"}, format="json", **auth).json()[
        "roomId"
    ]
    tool(c, auth, rid, "add_task", title="kept")

    # The attack, as a tenant would try it: another team's manager key.
    r = c.delete(f"/api/v1/rooms/{rid}", **auth_b)
    assert r.status_code == 404 and r.json()["code"] == "room_not_found"
    assert c.delete("/api/v1/rooms/never-was-here", **auth_b).json() == r.json()
    assert [t["title"] for t in tool(c, auth, rid, "read_plan")["tasks"]] == ["kept"]
    # A read-only key of the owning team may not either.
    ro_secret = services.api_key_create(team=team, name="ro", read_only=True).secret
    refused = c.delete(f"/api/v1/rooms/{rid}", HTTP_AUTHORIZATION=f"Bearer {ro_secret}")
    assert refused.status_code in (403, 409), refused.content
    assert Room.objects.filter(room_id=rid).exists()

    # The legitimate path: the owner's key deletes it, Redis keys and all, audited.
    assert _room_keys(rid)
    deleted = c.delete(f"/api/v1/rooms/{rid}", **auth)
    assert deleted.status_code == 200 and deleted.json() == {"roomId": rid, "deleted": True}
    assert not Room.objects.filter(room_id=rid).exists()
    assert AuditEvent.objects.filter(team=team, action="room.delete", object_id=rid).exists()
    assert _room_keys(rid) == []
    assert rid not in [row["roomId"] for row in c.get("/api/v1/rooms", **auth).json()]
    # Gone is gone: a second delete answers the one denial.
    assert c.delete(f"/api/v1/rooms/{rid}", **auth).status_code == 404
