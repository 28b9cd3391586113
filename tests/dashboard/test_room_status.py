"""The room page shows the room's status and lets an owner pause, complete or reopen it:
the same set_room_status as an agent's, for the room's own team only."""

from __future__ import annotations

import pytest

from calls.runner import tool_run
from rooms import errors
from rooms.store import engine as engine_store
from tenants import services
from tenants.models import AuditEvent, Room
from tests import callers
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store


def test_an_owner_pauses_and_reopens_the_room_from_its_page(ann: Person, bob: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("status"), actor="test")
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    assert 'value="paused">Pause the room' in page

    assert bob.client.post(f"/rooms/{room.room_id}/status", {"status": "paused"}).status_code == 404
    assert Room.objects.get(pk=room.pk).status == "active"  # another team changed nothing
    paused = ann.client.post(f"/rooms/{room.room_id}/status", {"status": "paused"})

    assert paused.status_code == 302
    assert Room.objects.get(pk=room.pk).status == "paused"
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    assert "status-paused" in page and 'value="active" class="primary">Reopen the room' in page
    agent = callers.team_caller(ann.team.slug)
    with pytest.raises(errors.RoomClosedError):
        engine_store.run_sync(tool_run, agent, "add_task", {"roomId": room.room_id, "title": "x"})
    audit = AuditEvent.objects.get(action="room.status", object_id=room.room_id)
    assert audit.detail == {"status": "paused", "previous": "active"}

    assert ann.client.post(f"/rooms/{room.room_id}/status", {"status": "gone"}).status_code == 400
    ann.client.post(f"/rooms/{room.room_id}/status", {"status": "active"})
    engine_store.run_sync(tool_run, agent, "add_task", {"roomId": room.room_id, "title": "x"})


def test_an_owner_archives_exports_and_restores_the_room_from_its_page(
    ann: Person, bob: Person
) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("archive"), actor="test")
    agent = callers.team_caller(ann.team.slug)
    engine_store.run_sync(tool_run, agent, "add_task", {"roomId": room.room_id, "title": "kept"})
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    assert 'value="archived">Archive the room' in page

    assert (
        bob.client.post(f"/rooms/{room.room_id}/status", {"status": "archived"}).status_code == 404
    )
    assert bob.client.get(f"/rooms/{room.room_id}/export").status_code == 404
    archived = ann.client.post(f"/rooms/{room.room_id}/status", {"status": "archived"})
    assert archived.status_code == 302
    assert Room.objects.get(pk=room.pk).status == "archived"

    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    assert "This room is archived since" in page and "Restore the room" in page
    assert "kept" in page  # the page shows the archive
    exported = ann.client.get(f"/rooms/{room.room_id}/export")
    assert exported.status_code == 200 and exported.json()["format"] == "roomservice.room"

    ann.client.post(f"/rooms/{room.room_id}/status", {"status": "active"})
    assert Room.objects.get(pk=room.pk).status == "active"
    engine_store.run_sync(tool_run, agent, "add_task", {"roomId": room.room_id, "title": "after"})
