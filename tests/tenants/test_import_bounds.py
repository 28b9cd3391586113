"""POST /api/v1/rooms/import as a tenant would attack it (issue 22), each attack beside the
legitimate use that still works: a body too large, a forged or garbled signature, the
development key, a live key smuggled in, a room over the quotas, an existence oracle, and
imports at once."""

from __future__ import annotations

import io
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection
from rest_framework.test import APIClient

from rooms import snapshots
from tenants import archives, imports, services
from tenants.models import Room

pytestmark = pytest.mark.store

IMPORT = "/api/v1/rooms/import"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def _team(slug: str) -> dict[str, Any]:
    team = services.team_create(slug=slug)
    minted = services.api_key_create(team=team, name="k")
    return {"HTTP_AUTHORIZATION": f"Bearer {minted.secret}"}


def _tool(c: APIClient, auth: dict[str, Any], room_id: str, name: str, **args: Any) -> Any:
    r = c.post(f"/api/v1/rooms/{room_id}/tools/{name}", args, format="json", **auth)
    assert r.status_code == 200, r.content
    return r.json()


def _import(c: APIClient, auth: dict[str, Any], body: bytes, room_id: str) -> Any:
    return c.post(f"{IMPORT}?roomId={room_id}", body, content_type="application/json", **auth)


def _exported(c: APIClient, auth: dict[str, Any], room_id: str, *titles: str) -> bytes:
    c.post("/api/v1/rooms", {"roomId": room_id}, format="json", **auth)
    for title in titles:
        _tool(c, auth, room_id, "add_task", title=title)
    r = c.get(f"/api/v1/rooms/{room_id}/export", **auth)
    assert r.status_code == 200, r.content
    return bytes(r.content)


def _resigned(body: bytes, key: bytes, change: Any = None) -> bytes:
    """The document, changed by `change(document)`, signed with `key`: what someone holding
    that key could make."""
    document = json.loads(body)
    if change is not None:
        change(document)
    return snapshots.document_encode(document, key)


class Counting(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.read_bytes = 0

    def read(self, size: int | None = -1, /) -> bytes:
        chunk = super().read(size)
        self.read_bytes += len(chunk)
        return chunk


def test_an_oversized_body_is_refused_with_413_as_soon_as_the_limit_is_passed(
    settings: Any,
) -> None:
    c = APIClient()
    auth = _team("bounds-size")
    body = _exported(c, auth, "bounds-size-room", "kept")
    settings.ROOM_IMPORT_BYTES_MAX = len(body) + 10
    assert _import(c, auth, body, "bounds-size-copy").status_code == 201  # within: imported

    settings.ROOM_IMPORT_BYTES_MAX = 1024 * 1024
    huge = body[:-2] + b" " * (8 * 1024 * 1024) + body[-2:]
    r = _import(c, auth, huge, "bounds-size-huge")
    assert r.status_code == 413 and r.json()["code"] == "payload_too_large", r.content
    assert not Room.objects.filter(room_id="bounds-size-huge").exists()
    # Never read whole: reading stops at the chunk that passes the limit.
    stream = Counting(huge)
    with pytest.raises(imports.ImportTooLargeError):
        imports.body_spooled(stream)
    assert stream.read_bytes <= settings.ROOM_IMPORT_BYTES_MAX + imports.CHUNK_BYTES


def test_a_bad_signature_is_refused_before_anything_is_parsed() -> None:
    c = APIClient()
    auth = _team("bounds-sig")
    body = _exported(c, auth, "bounds-sig-room", "kept")
    # Deeply nested, invalid JSON: parsing it would be a parse error (or worse); the
    # signature is checked first, over the bytes, and that is the answer.
    trailer = body[body.rindex(b',"signature"') :]
    bomb = b'{"format":"roomservice.room","version":2,"parts":{' + b"[" * 2_000_000
    forged = bomb + re.sub(rb"[0-9a-f]{64}", b"0" * 64, trailer)
    r = _import(c, auth, forged, "bounds-sig-bomb")
    assert r.status_code == 400 and "signature does not match" in r.json()["message"], r.content
    r = _import(c, auth, b"{" * 1_000_000, "bounds-sig-none")
    assert r.status_code == 400 and "no signature" in r.json()["message"], r.content
    assert _import(c, auth, body, "bounds-sig-copy").status_code == 201


def test_a_document_signed_with_the_development_secret_key_is_refused(settings: Any) -> None:
    c = APIClient()
    auth = _team("bounds-dev")
    body = _exported(c, auth, "bounds-dev-room", "kept")
    published = str(django_settings.SECRET_KEY).encode()
    assert imports.export_key() != published
    for key in (published, b"dev-only-insecure-secret-key-change-me-in-production"):
        r = _import(c, auth, _resigned(body, key), "bounds-dev-forged")
        assert r.status_code == 400 and "signature does not match" in r.json()["message"]
    # A version 1 document (signed over its content) made with the development key: the API
    # cannot check it without parsing it whole, so it says so and imports nothing.
    legacy = _legacy(body, published)
    r = _import(c, auth, legacy, "bounds-dev-legacy")
    assert r.status_code == 400 and "earlier version" in r.json()["message"], r.content
    assert (
        not Room.objects.filter(room_id__startswith="bounds-dev-")
        .exclude(room_id="bounds-dev-room")
        .exists()
    )
    assert _import(c, auth, body, "bounds-dev-copy").status_code == 201


def test_the_deployment_key_is_made_once_and_kept_with_the_data(tmp_path: Path) -> None:
    first = imports.deployment_key(tmp_path)
    imports._key_cache.clear()  # a restart, or another worker
    assert imports.deployment_key(tmp_path) == first
    assert (tmp_path / imports.KEY_FILE).read_bytes().strip() == first
    assert len(first) >= 32 and first != str(django_settings.SECRET_KEY).encode()
    assert imports.deployment_key(tmp_path / "other") != first


def test_a_live_key_in_a_validly_signed_document_is_imported_redacted() -> None:
    c = APIClient()
    auth = _team("bounds-redact")
    live = services.api_key_create(team=services.team_create(slug="bounds-victim"), name="v")
    body = _exported(c, auth, "bounds-redact-room", "kept")

    def smuggle(document: dict[str, Any]) -> None:
        tasks = document["parts"]["tasks"]["items"]
        task = json.loads(tasks[1])
        task["description"] = f"use {live.secret} and aws {AWS_KEY}"
        tasks[1] = json.dumps(task)
        document["parts"]["vars"] = {"type": "hash", "items": ["DB_PASSWORD", "hunter2-x9!Q"]}

    forged = _resigned(body, imports.export_key(), smuggle)
    r = _import(c, auth, forged, "bounds-redact-copy")
    assert r.status_code == 201, r.content
    plan = _tool(c, auth, "bounds-redact-copy", "read_plan")
    text = json.dumps(plan) + json.dumps(_tool(c, auth, "bounds-redact-copy", "list_shared_vars"))
    assert live.secret not in text and AWS_KEY not in text and "hunter2-x9!Q" not in text
    assert "[redacted:" in plan["tasks"][0]["description"]
    found = _tool(c, auth, "bounds-redact-copy", "search", q="kept")
    assert [h["kind"] for h in found["hits"]] == ["task"]  # the index was made again


def test_an_import_is_held_to_the_quotas(settings: Any) -> None:
    c = APIClient()
    auth = _team("bounds-quota")
    body = _exported(c, auth, "bounds-quota-room", "one", "two", "three")
    settings.ROOM_TASKS_MAX = 2
    r = _import(c, auth, body, "bounds-quota-copy")
    assert r.json()["code"] == "quota_exceeded", r.content
    assert r.json()["extra"]["quota"] == "ROOM_TASKS_MAX"
    assert not Room.objects.filter(room_id="bounds-quota-copy").exists()
    settings.ROOM_TASKS_MAX = 3
    assert _import(c, auth, body, "bounds-quota-copy").status_code == 201


def test_a_taken_id_answers_alike_whoever_holds_it() -> None:
    c = APIClient()
    auth_a = _team("bounds-oracle-a")
    auth_b = _team("bounds-oracle-b")
    _exported(c, auth_a, "bounds-oracle-theirs")
    body = _exported(c, auth_b, "bounds-oracle-mine", "kept")
    theirs = _import(c, auth_b, body, "bounds-oracle-theirs")
    mine = _import(c, auth_b, body, "bounds-oracle-mine")
    assert theirs.status_code == mine.status_code == 404
    assert theirs.json() == mine.json()
    assert theirs.json()["code"] == "room_not_found"  # as for any room one may not touch
    assert c.get("/api/v1/rooms/bounds-oracle-theirs/export", **auth_b).json() == theirs.json()
    r = _import(c, auth_b, body, "bounds-oracle-free")
    assert r.status_code == 201 and Room.objects.get(room_id="bounds-oracle-free").team.slug == (
        "bounds-oracle-b"
    )


def test_imports_at_once_over_the_limits_are_refused_with_retry_after(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = APIClient()
    auth = _team("bounds-busy")
    other = _team("bounds-busy-other")
    body = _exported(c, auth, "bounds-busy-room", "kept")
    other_body = _exported(c, other, "bounds-busy-other-room", "kept")
    settings.ROOM_IMPORTS_PER_PROCESS = 2
    inside, release = threading.Event(), threading.Event()
    real = archives.room_import

    def slow(**kwargs: Any) -> Room:
        if kwargs["room_id"] == "bounds-busy-first":
            inside.set()
            assert release.wait(30)
        return real(**kwargs)

    monkeypatch.setattr(archives, "room_import", slow)
    answers: list[int] = []

    def first_import() -> None:
        try:
            answers.append(_import(APIClient(), auth, body, "bounds-busy-first").status_code)
        finally:
            connection.close()

    first = threading.Thread(target=first_import)
    first.start()
    try:
        assert inside.wait(30)
        again = _import(c, auth, body, "bounds-busy-second")
        assert again.status_code == 429 and again.json()["code"] == "import_busy"
        assert again["Retry-After"]
        # Another team is not held up by this team's import...
        assert _import(c, other, other_body, "bounds-busy-other-copy").status_code == 201
        # ...but the process takes ROOM_IMPORTS_PER_PROCESS at a time.
        settings.ROOM_IMPORTS_PER_PROCESS = 1
        full = _import(c, other, other_body, "bounds-busy-other-full")
        assert full.status_code == 503 and full["Retry-After"]
    finally:
        release.set()
        first.join(30)
    assert answers == [201]
    settings.ROOM_IMPORTS_PER_PROCESS = 1
    assert _import(c, auth, body, "bounds-busy-second").status_code == 201  # free again


@pytest.fixture(autouse=True)
def _settings(settings: Any) -> None:
    settings.ROOM_CLAIM_ON_FIRST_TOUCH = False


def _legacy(body: bytes, key: bytes) -> bytes:
    """The document as version 1 exported it: signed over its content re-serialised."""
    import hashlib
    import hmac

    document = {k: v for k, v in json.loads(body).items() if k != "signature"}
    document["version"] = 1
    content = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    mac = hmac.new(key, content.encode(), hashlib.sha256).hexdigest()
    return json.dumps({**document, "signature": f"hmac-sha256:{mac}"}).encode()


def test_the_operator_still_imports_a_version_1_file_but_not_one_of_the_development_key(
    settings: Any, tmp_path: Path
) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    c = APIClient()
    auth = _team("bounds-legacy")
    body = _exported(c, auth, "bounds-legacy-room", "kept")
    settings.ROOM_EXPORT_SIGNING_KEY = "k" * 40  # what signed it before this change
    old = tmp_path / "old.json"
    old.write_bytes(_legacy(body, b"k" * 40))
    call_command("room_import", "bounds-legacy", str(old), room_id="bounds-legacy-old")
    assert Room.objects.filter(room_id="bounds-legacy-old").exists()
    forged = tmp_path / "forged.json"
    forged.write_bytes(_legacy(body, str(django_settings.SECRET_KEY).encode()))
    with pytest.raises(CommandError, match="signature does not match"):
        call_command("room_import", "bounds-legacy", str(forged), room_id="bounds-legacy-dev")
    assert not Room.objects.filter(room_id="bounds-legacy-dev").exists()
