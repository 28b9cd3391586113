"""One clock: product code asks rooms.clock for "now", so a test can move time instead of
sleeping (STYLE.md "Time is a seam"). A scan of the source keeps it that way; the pages
and records below follow the clock when a test moves it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from rooms import clock
from tenants import selectors, services
from tenants.models import Room, RoomArchive
from tests.clock import clock_at
from tests.dashboard.conftest import person

pytestmark = pytest.mark.store

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("rooms", "tenants", "calls", "dashboard", "mcp_gateway", "config")
SKIPPED = {"migrations"}  # generated; tests and bench are outside PRODUCT
# Calls that ask the wall clock for "now", by the dotted name they are made with.
NOW_CALLS = {
    "timezone.now",
    "django.utils.timezone.now",
    "datetime.now",
    "datetime.utcnow",
    "datetime.datetime.now",
    "datetime.datetime.utcnow",
    "time.time",
}
# Imports that would hide one of those behind a bare name (`now()`, `time()`).
NOW_IMPORTS = {("django.utils.timezone", "now"), ("time", "time")}
# path -> why it may ask the wall clock itself.
ALLOWED = {
    "rooms/clock.py": "the seam itself: the real clock every other module asks",
}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _wall_clock_reads(path: Path) -> list[str]:
    """Each read of the wall clock in the file, as "line N: what" (docstrings and comments
    are not code, so the scan reads the syntax tree, not the text)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Call) and _dotted(node.func) in NOW_CALLS:
            found.append((node.lineno, f"{_dotted(node.func)}()"))
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [
                (node.lineno, f"from {node.module} import {alias.name}")
                for alias in node.names
                if (node.module, alias.name) in NOW_IMPORTS
            ]
    return [f"line {line}: {what}" for line, what in sorted(found)]


def _product_files() -> Iterator[Path]:
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if not SKIPPED.intersection(path.relative_to(ROOT).parts):
                yield path


def test_product_code_asks_the_clock_seam_for_now() -> None:
    found = [
        f"{path.relative_to(ROOT).as_posix()}: {read}"
        for path in _product_files()
        if path.relative_to(ROOT).as_posix() not in ALLOWED
        for read in _wall_clock_reads(path)
    ]
    assert not found, (
        "Ask rooms.clock (clock.now(), clock.now_ms()) instead of the wall clock, so tests "
        "can move time; a duration is time.monotonic(). Or add the file to ALLOWED with "
        "its reason:\n" + "\n".join(found)
    )


def test_every_allowed_file_still_exists_and_still_needs_it() -> None:
    for name in ALLOWED:
        assert _wall_clock_reads(ROOT / name), f"{name} no longer reads the wall clock"


@pytest.fixture
def moved_clock() -> Iterator[list[datetime]]:
    """The clock, set by hand: near real time (keys' and budgets' TTLs stay sensible)."""
    with clock_at(clock.now()) as now:
        yield now


@pytest.mark.django_db(transaction=True)
def test_the_rooms_page_says_how_long_ago_by_the_clock(moved_clock: list[datetime]) -> None:
    ann = person("ann.clock@example.com")
    services.room_create(team=ann.team, room_id="clock-page-room", name="", actor="ann")
    last = Room.objects.get(room_id="clock-page-room").last_active_at
    moved_clock[0] = last + timedelta(hours=3, seconds=5)
    page = ann.client.get("/rooms").content.decode()
    assert "Last activity 3\xa0hours ago" in page


@pytest.mark.django_db(transaction=True)
def test_an_archive_and_its_restore_are_stamped_by_the_clock(
    moved_clock: list[datetime],
) -> None:
    c = APIClient()
    team = services.team_create(slug="clock-archive")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {services.api_key_create(team=team, name='k').secret}"}
    rid = c.post("/api/v1/rooms", {"roomId": "clock-archive-room"}, format="json", **auth).json()[
        "roomId"
    ]
    archived_at = moved_clock[0] = moved_clock[0] + timedelta(days=2)
    assert c.post(f"/api/v1/rooms/{rid}/archive", **auth).status_code == 200
    assert RoomArchive.objects.get(room__room_id=rid).archived_at == archived_at

    restored_at = moved_clock[0] = archived_at + timedelta(hours=1)
    assert c.post(f"/api/v1/rooms/{rid}/restore", **auth).status_code == 200
    assert RoomArchive.objects.get(room__room_id=rid).restored_at == restored_at
    assert Room.objects.get(room_id=rid).last_active_at == restored_at


@pytest.mark.django_db(transaction=True)
def test_an_invite_expires_counted_from_the_clock(moved_clock: list[datetime]) -> None:
    c = APIClient()
    team = services.team_create(slug="clock-invite")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {services.api_key_create(team=team, name='k').secret}"}
    c.post("/api/v1/rooms", {"roomId": "clock-invite-room"}, format="json", **auth)
    moved_clock[0] = moved_clock[0] + timedelta(days=1)
    r = c.post(
        "/api/v1/rooms/clock-invite-room/invites",
        {"expiresInSeconds": 3600},
        format="json",
        **auth,
    )
    assert r.status_code == 201, r.content
    assert r.json()["expires_at"] == selectors.iso(moved_clock[0] + timedelta(hours=1))
