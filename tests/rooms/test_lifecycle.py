"""A room's lifecycle (docs/protocol.md "Lifecycle and durable rooms"): paused and completed rooms
answer reads and refuse writes with a message naming the status, on every process at once;
the room's record and the audit log follow."""

from __future__ import annotations

from typing import Any

import pytest

from calls.runner import tool_run
from rooms import errors
from rooms.refs import RoomRef
from tenants import errors as tenant_errors
from tenants.capabilities import Caller
from tenants.db import db_run
from tenants.models import AuditEvent, Room
from tests import callers

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


def recorded(room_id: str) -> tuple[str, list[dict[str, Any]]]:
    row = Room.objects.get(room_id=room_id)
    audits = AuditEvent.objects.filter(action="room.status", object_id=room_id).order_by("id")
    return row.status, [a.detail for a in audits]


@pytest.mark.parametrize("status", ["paused", "completed"])
async def test_a_closed_room_answers_reads_and_refuses_writes_naming_its_status(
    status: str, team_a: Caller, room: RoomRef
) -> None:
    task = await call(team_a, room, "add_task", title="before")  # also caches the room
    changed = await call(team_a, room, "set_room_status", status=status, agentId="lead")
    assert changed == {"roomId": room.room_id, "status": status, "previousStatus": "active"}

    for tool, args in (
        ("add_task", {"title": "after"}),
        ("post_event", {"type": "note", "from": "a", "payload": {}}),
        ("heartbeat", {"agentId": "a"}),
        ("claim_task", {"taskId": task["id"], "agentId": "a"}),
    ):
        with pytest.raises(errors.RoomClosedError) as refused:
            await call(team_a, room, tool, **args)
        assert f"is {status}: it answers reads" in refused.value.message, tool
        assert refused.value.extra == {"roomId": room.room_id, "status": status}

    plan = await call(team_a, room, "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["before"]
    events = await call(team_a, room, "read_events", limit=5)
    assert events[0]["type"] == "room_status_changed"
    assert events[0]["payload"] == {"status": status, "previousStatus": "active"}
    assert await db_run(recorded, room.room_id) == (
        status,
        [{"status": status, "previous": "active"}],
    )

    reopened = await call(team_a, room, "set_room_status", status="active", agentId="lead")
    assert reopened["previousStatus"] == status
    await call(team_a, room, "add_task", title="after")
    assert (await db_run(recorded, room.room_id))[0] == "active"


async def test_setting_the_same_status_again_changes_nothing(team_a: Caller, room: RoomRef) -> None:
    await call(team_a, room, "set_room_status", status="paused")
    again = await call(team_a, room, "set_room_status", status="paused")
    assert again["previousStatus"] == "paused"
    events = await call(team_a, room, "read_events", limit=5)
    assert [e["type"] for e in events] == ["room_status_changed"]
    assert len((await db_run(recorded, room.room_id))[1]) == 1


async def test_a_guest_cannot_pause_or_reopen_a_room(team_a: Caller, room: RoomRef) -> None:
    """The attack: an invited agent closes the team's room to everyone (or reopens a room
    its owners completed). Refused; the room stays as the team set it."""
    guest = callers.guest_of(team_a, room.room_id)
    with pytest.raises(tenant_errors.NotPermittedError, match="may not manage rooms"):
        await call(guest, room, "set_room_status", status="paused", agentId="mallory")
    await call(guest, room, "add_task", title="the guest still writes")
    await call(team_a, room, "set_room_status", status="completed")
    with pytest.raises(tenant_errors.NotPermittedError):
        await call(guest, room, "set_room_status", status="active")
    with pytest.raises(errors.RoomClosedError):
        await call(guest, room, "add_task", title="refused")
