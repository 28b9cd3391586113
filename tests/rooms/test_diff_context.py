"""diff_context: what changed in a context entry, down to the value."""

from __future__ import annotations

from typing import Any

import pytest

from calls.runner import tool_run
from rooms import errors
from rooms.diff import payload_paths_diff
from rooms.refs import RoomRef
from tenants.capabilities import Caller

pytestmark = pytest.mark.anyio

CONTRACT: dict[str, Any] = {
    "service": "billing",
    "version": "1.0",
    "endpoints": [
        {
            "method": "GET",
            "path": "/invoices",
            "response": {"items": "list"},
            "auth_required": True,
            "description": "all",
        },
        {
            "method": "GET",
            "path": "/invoices/{id}",
            "response": {"total": "int", "currency": "EUR"},
            "auth_required": True,
            "description": "one",
        },
    ],
}


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


def test_paths_go_down_to_the_values() -> None:
    old = {"a": {"b": [1, {"c": 2}]}, "gone": 1}
    new = {"a": {"b": [1, {"c": 3}, 4]}, "new": {"x": 1}}

    assert payload_paths_diff(old, new) == {
        "added": ["a.b[2]", "new"],
        "removed": ["gone"],
        "changed": ["a.b[1].c"],
    }


async def test_diff_context_names_the_nested_fields_that_changed(
    team_a: Caller, room: RoomRef
) -> None:
    entry = await call(
        team_a,
        room,
        "write_context",
        type="api_contract",
        summary="billing API",
        consuming_agents=["frontend"],
        payload=CONTRACT,
        author="backend",
    )
    changed = {**CONTRACT, "endpoints": [dict(e) for e in CONTRACT["endpoints"]]}
    changed["endpoints"][1] = {
        **changed["endpoints"][1],
        "response": {"total": "int", "currency": "USD", "tax": "int"},
    }
    await call(team_a, room, "update_context", id=entry["id"], author="backend", payload=changed)
    await call(team_a, room, "update_context", id=entry["id"], author="backend", summary="v3")

    latest = await call(team_a, room, "diff_context", id=entry["id"])
    assert (latest["diff"]["fromVersion"], latest["diff"]["toVersion"]) == ("1.1", "1.2")
    assert latest["diff"]["summaryChanged"] is True and latest["diff"]["toSummary"] == "v3"
    assert latest["diff"]["payload"] == {"added": [], "removed": [], "changed": []}

    against_first = await call(team_a, room, "diff_context", id=entry["id"], againstVersion="1.0")
    assert against_first["previous"]["version"] == "1.0"
    assert against_first["diff"]["payload"] == {
        "added": ["endpoints[1].response.tax"],
        "removed": [],
        "changed": ["endpoints[1].response.currency"],
    }

    with pytest.raises(errors.ToolArgumentsError) as caught:
        await call(team_a, room, "diff_context", id=entry["id"], againstVersion="1.7")
    assert "kept: 1.0, 1.1, 1.2" in caught.value.message


async def test_an_entry_with_one_version_is_an_error_as_roomd_answers(
    team_a: Caller, room: RoomRef
) -> None:
    """docs/protocol.md: an entry with no earlier version is an error (roomd: "No prior versions to
    diff against"); after an update, the same call answers the diff."""
    entry = await call(
        team_a,
        room,
        "write_context",
        type="note",
        summary="s",
        consuming_agents=[],
        payload={"text": "hi"},
        author="a",
    )

    with pytest.raises(errors.ToolArgumentsError, match="No prior versions to diff against"):
        await call(team_a, room, "diff_context", id=entry["id"])

    await call(
        team_a, room, "update_context", id=entry["id"], payload={"text": "hello"}, author="a"
    )
    diff = await call(team_a, room, "diff_context", id=entry["id"])
    assert diff["diff"]["payload"]["changed"] == ["text"]
