import pytest
from rest_framework.test import APIClient

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.store]


def test_api_smoke(settings) -> None:
    settings.API_KEYS = "boot:static-secret-123"
    c = APIClient()
    r = c.post(
        "/api/v1/teams",
        {"slug": "acme"},
        format="json",
        HTTP_AUTHORIZATION="Bearer static-secret-123",
    )
    assert r.status_code == 201, r.content
    secret = r.json()["key"]["secret"]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    assert c.get("/api/v1/me", **auth).json()["team"] == "acme"
    r = c.post("/api/v1/rooms", {}, format="json", **auth)
    assert r.status_code == 201, r.content
    room = r.json()["roomId"]
    r = c.post(
        f"/api/v1/rooms/{room}/invites",
        {"label": "guest", "expiresInSeconds": 3600},
        format="json",
        **auth,
    )
    assert r.status_code == 201, r.content
    inv = r.json()["secret"]
    r = c.get(f"/room/{room}", HTTP_AUTHORIZATION=f"Bearer {inv}")
    assert r.status_code == 200, r.content
    assert r.json()["tasks"] == {
        "total": 0,
        "pending": 0,
        "in_progress": 0,
        "done": 0,
        "blocked": 0,
    }
    assert c.get("/api/v1/keys", HTTP_AUTHORIZATION=f"Bearer {inv}").status_code == 403
    assert c.get("/api/v1/keys").status_code == 401
    r = c.get("/api/v1/schema/")
    assert r.status_code == 200
