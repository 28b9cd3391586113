"""Typed context (docs/protocol.md "Typed context"): write_context, read_context, list_context,
update_context; payload validation per type, versions and their history, and the events
consumers get."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from typing import Any

import pytest
import redis

from rooms import errors
from rooms.refs import RoomRef
from rooms.selectors import context as context_selectors
from rooms.selectors import events as events_selectors
from rooms.services import context as context_services
from rooms.services import events as events_services
from tests.rooms.conftest import invoke as registry_invoke

pytestmark = pytest.mark.anyio

VALID: dict[str, dict[str, Any]] = {
    "api_contract": {
        "service": "auth",
        "version": "v1",
        "base_url": "https://api.example.test",
        "endpoints": [
            {
                "method": "POST",
                "path": "/login",
                "request": {"email": "string"},
                "response": {"token": "string"},
                "auth_required": False,
                "description": "Log in",
            }
        ],
    },
    "arch_decision": {
        "title": "Use Postgres",
        "decision": "Postgres 16",
        "rationale": "JSONB and we know it",
        "alternatives": ["MySQL"],
        "consequences": ["one more service"],
    },
    "task": {
        "task_id": "t_abc",
        "acceptance_criteria": ["returns 200"],
        "technical_notes": "use the existing middleware",
    },
    "change_request": {
        "requested_by": "frontend",
        "target_agent": "backend",
        "description": "add a refresh endpoint",
        "urgency": "high",
        "blocking_task_id": "t_xyz",
    },
    "note": {"text": "staging is at port 3000", "references": ["README.md"]},
}


def payload(type_: str, **changes: Any) -> dict[str, Any]:
    p = copy.deepcopy(VALID[type_])
    p.update(changes)
    return p


async def write(
    room: RoomRef,
    type_: str = "note",
    *,
    body: dict[str, Any] | None = None,
    consumers: list[str] | None = None,
    author: str = "backend",
    summary: str = "summary",
) -> dict[str, Any]:
    return await context_services.context_write(
        room,
        type_=type_,
        summary=summary,
        consuming_agents=consumers if consumers is not None else [],
        payload=body if body is not None else payload(type_),
        author=author,
    )


async def update(room: RoomRef, entry_id: str, **kw: Any) -> dict[str, Any]:
    return await context_services.context_update(
        room,
        entry_id=entry_id,
        author=kw.pop("author", "backend"),
        summary=kw.pop("summary", None),
        consuming_agents=kw.pop("consuming_agents", None),
        payload=kw.pop("payload", None),
        expected_version=kw.pop("expected_version", None),
    )


async def all_events(room: RoomRef) -> list[dict[str, Any]]:
    return await events_selectors.event_list(room, since=None, limit=100, order="asc")


def invoke(room: RoomRef, name: str, **arguments: Any) -> Any:
    async def access(room_id: str, write: bool) -> RoomRef:
        return room

    return registry_invoke(name, {"roomId": room.room_id, **arguments}, access)


# --- write / read -----------------------------------------------------------------------


@pytest.mark.parametrize("type_", sorted(VALID))
async def test_each_type_with_a_valid_payload_is_written_at_version_one_zero(
    room: RoomRef, type_: str
) -> None:
    entry = await write(room, type_, consumers=["frontend"], summary=f"a {type_}")

    assert re.fullmatch(r"[A-Za-z0-9_-]{12,}", entry["id"])
    assert entry["version"] == "1.0"
    assert entry["type"] == type_
    assert entry["author"] == "backend"
    assert entry["summary"] == f"a {type_}"
    assert entry["consuming_agents"] == ["frontend"]
    assert entry["payload"] == VALID[type_]
    assert await context_selectors.context_get(room, entry_id=entry["id"]) == entry


async def test_extra_payload_keys_are_kept(room: RoomRef) -> None:
    body = payload("note", extra={"nested": [1, 2]}, priority=3)

    entry = await write(room, "note", body=body)

    assert (await context_selectors.context_get(room, entry_id=entry["id"]))["payload"] == body


INVALID: list[tuple[str, dict[str, Any], str]] = [
    (
        "api_contract",
        payload(
            "api_contract",
            endpoints=[{**VALID["api_contract"]["endpoints"][0], "method": "FETCH"}],
        ),
        "payload.endpoints[0].method",
    ),
    (
        "api_contract",
        payload(
            "api_contract",
            endpoints=[
                VALID["api_contract"]["endpoints"][0],
                {**VALID["api_contract"]["endpoints"][0], "auth_required": "yes"},
            ],
        ),
        "payload.endpoints[1].auth_required",
    ),
    ("api_contract", payload("api_contract", endpoints=[]), "payload.endpoints"),
    ("api_contract", payload("api_contract", version=""), "payload.version"),
    (
        "api_contract",
        {k: v for k, v in VALID["api_contract"].items() if k != "service"},
        "payload.service",
    ),
    (
        "api_contract",
        payload(
            "api_contract",
            endpoints=[{**VALID["api_contract"]["endpoints"][0], "response": "ok"}],
        ),
        "payload.endpoints[0].response",
    ),
    ("arch_decision", payload("arch_decision", rationale=""), "payload.rationale"),
    ("arch_decision", payload("arch_decision", alternatives="MySQL"), "payload.alternatives"),
    ("arch_decision", payload("arch_decision", consequences=["ok", 7]), "payload.consequences[1]"),
    ("task", payload("task", task_id=""), "payload.task_id"),
    (
        "task",
        {k: v for k, v in VALID["task"].items() if k != "technical_notes"},
        "payload.technical_notes",
    ),
    ("change_request", payload("change_request", urgency="urgent"), "payload.urgency"),
    ("change_request", payload("change_request", target_agent=""), "payload.target_agent"),
    ("note", payload("note", text=""), "payload.text"),
    ("note", payload("note", references="README.md"), "payload.references"),
]


@pytest.mark.parametrize(("type_", "body", "field"), INVALID, ids=[f for _, _, f in INVALID])
async def test_invalid_payload_is_refused_naming_the_bad_field(
    room: RoomRef, type_: str, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(errors.ToolArgumentsError) as caught:
        await write(room, type_, body=body)

    assert caught.value.message.startswith(f"Invalid {type_} payload: ")
    assert f"{field}: " in caught.value.message
    assert field.removeprefix("payload.") in caught.value.extra["fields"]
    assert await context_selectors.context_list(room, type_=None, author=None) == []
    assert await all_events(room) == []


async def test_every_bad_field_is_named_in_one_error(room: RoomRef) -> None:
    body = {"requested_by": "", "target_agent": "backend", "description": "x", "urgency": "soon"}

    with pytest.raises(errors.ToolArgumentsError) as caught:
        await write(room, "change_request", body=body)

    assert "payload.requested_by: " in caught.value.message
    assert "payload.urgency: " in caught.value.message
    assert sorted(caught.value.extra["fields"]) == ["requested_by", "urgency"]


async def test_invalid_payload_through_the_registry_is_a_tool_arguments_error(
    room: RoomRef,
) -> None:
    body = payload("api_contract", endpoints=[{"method": "GET", "path": "/x"}])

    with pytest.raises(errors.ToolArgumentsError) as caught:
        await invoke(
            room,
            "write_context",
            type="api_contract",
            summary="s",
            consuming_agents=[],
            payload=body,
            author="backend",
        )

    assert "payload.endpoints[0].response: " in caught.value.message
    assert "payload.endpoints[0].auth_required: " in caught.value.message
    assert "payload.endpoints[0].description: " in caught.value.message


async def test_update_context_revalidates_the_payload_against_the_stored_type(
    room: RoomRef,
) -> None:
    entry = await write(room, "note")

    with pytest.raises(errors.ToolArgumentsError) as caught:
        await update(room, entry["id"], payload={"decision": "not a note"})

    assert caught.value.message.startswith("Invalid note payload: ")
    assert "payload.text: " in caught.value.message
    current = await context_selectors.context_get(room, entry_id=entry["id"])
    assert current["version"] == "1.0"
    assert current["payload"] == VALID["note"]


# --- versions ---------------------------------------------------------------------------


async def test_update_context_bumps_the_version_and_keeps_previous_versions(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    entry = await write(room, "note", body=payload("note", text="v0"), summary="first")

    second = await update(room, entry["id"], payload=payload("note", text="v1"), author="qa")
    third = await update(room, entry["id"], summary="third")

    assert second["version"] == "1.1"
    assert second["author"] == "qa"
    assert second["payload"]["text"] == "v1"
    assert third["version"] == "1.2"
    assert third["summary"] == "third"
    assert third["payload"]["text"] == "v1"
    assert await context_selectors.context_get(room, entry_id=entry["id"]) == third

    history = sync_redis.hgetall(room.keys.context_versions)
    assert sorted(history) == [f"{entry['id']}@1.0", f"{entry['id']}@1.1"]
    v10 = json.loads(history[f"{entry['id']}@1.0"])
    v11 = json.loads(history[f"{entry['id']}@1.1"])
    assert v10 == entry
    assert (v11["version"], v11["summary"], v11["author"], v11["payload"]["text"]) == (
        "1.1",
        "first",
        "qa",
        "v1",
    )


async def test_version_goes_past_one_nine_to_one_ten(room: RoomRef) -> None:
    entry = await write(room)
    versions = [(await update(room, entry["id"], summary=str(i)))["version"] for i in range(11)]

    assert versions == [f"1.{i}" for i in range(1, 12)]


async def test_stale_expected_version_is_refused_naming_the_current_version(
    room: RoomRef,
) -> None:
    entry = await write(room, summary="original")
    await update(room, entry["id"], summary="someone else", expected_version="1.0")

    with pytest.raises(errors.ContextVersionConflictError) as caught:
        await update(room, entry["id"], summary="mine", expected_version="1.0")

    assert caught.value.message == errors.CONTEXT_VERSION_CONFLICT.format(
        entry_id=entry["id"], current="1.1", expected="1.0"
    )
    assert caught.value.extra == {"currentVersion": "1.1"}
    current = await context_selectors.context_get(room, entry_id=entry["id"])
    assert (current["version"], current["summary"]) == ("1.1", "someone else")
    assert [e["type"] for e in await all_events(room)] == ["context_available", "context_updated"]


async def test_matching_expected_version_is_accepted(room: RoomRef) -> None:
    entry = await write(room)

    updated = await update(room, entry["id"], summary="x", expected_version="1.0")

    assert updated["version"] == "1.1"


async def test_update_of_unknown_entry_names_the_closest_entries(room: RoomRef) -> None:
    entry = await write(room, summary="the staging port")

    with pytest.raises(errors.ContextNotFoundError) as caught:
        await update(room, entry["id"] + "x", summary="s")
    with pytest.raises(errors.ContextNotFoundError) as caught_with_payload:
        await update(room, entry["id"] + "x", payload=VALID["note"])

    for exc in (caught.value, caught_with_payload.value):
        assert exc.extra["closest"] == [entry["id"]]
        assert f'"{entry["id"]}" (note: the staging port)' in exc.message


async def test_read_of_unknown_entry_in_an_empty_room_says_there_are_none(room: RoomRef) -> None:
    with pytest.raises(errors.ContextNotFoundError) as caught:
        await context_selectors.context_get(room, entry_id="c_nothing")

    assert caught.value.message == errors.CONTEXT_NOT_FOUND.format(
        entry_id="c_nothing", hint=errors.CONTEXT_HINT_EMPTY
    )


async def test_twenty_concurrent_updates_each_get_their_own_version(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    entry = await write(room, summary="s-initial")

    results = await asyncio.gather(
        *(
            update(room, entry["id"], summary=f"s{i}", payload=payload("note", text=f"p{i}"))
            for i in range(20)
        )
    )

    assert sorted(r["version"] for r in results) == sorted(f"1.{i}" for i in range(1, 21))
    final = await context_selectors.context_get(room, entry_id=entry["id"])
    assert final["version"] == "1.20"
    history = {k: json.loads(v) for k, v in sync_redis.hgetall(room.keys.context_versions).items()}
    assert sorted(history) == sorted(f"{entry['id']}@1.{i}" for i in range(20))
    seen = [history[f"{entry['id']}@1.{i}"]["summary"] for i in range(1, 20)] + [final["summary"]]
    assert sorted(seen) == sorted(f"s{i}" for i in range(20))
    # Each stored version carries the payload written with its own summary.
    for version in [*history.values(), final]:
        if version["summary"] != "s-initial":
            assert version["payload"]["text"] == "p" + version["summary"][1:]
    updated = [e for e in await all_events(room) if e["type"] == "context_updated"]
    assert sorted(e["payload"]["version"] for e in updated) == sorted(
        f"1.{i}" for i in range(1, 21)
    )


async def test_text_with_quotes_slashes_and_emoji_survives_an_update(room: RoomRef) -> None:
    text = 'say "hi" / \\ \u00e9t\u00e9 \U0001f680 "consuming_agents":{}'
    entry = await write(room, summary=text, consumers=[text[:20]], author="a/b")

    updated = await update(room, entry["id"], summary=text + "!", author='c"d')

    assert updated["summary"] == text + "!"
    assert updated["consuming_agents"] == [text[:20]]
    assert updated["author"] == 'c"d'
    assert await context_selectors.context_get(room, entry_id=entry["id"]) == updated


# --- events for consumers ---------------------------------------------------------------


async def test_single_consumer_gets_context_available_addressed_to_it(room: RoomRef) -> None:
    entry = await write(room, "api_contract", consumers=["frontend"], summary="auth API")

    [event] = await all_events(room)

    assert event["type"] == "context_available"
    assert event["from"] == "backend"
    assert event["to"] == "frontend"
    assert event["payload"] == {
        "id": entry["id"],
        "type": "api_contract",
        "version": "1.0",
        "summary": "auth API",
        "author": "backend",
        "consuming_agents": ["frontend"],
    }


async def test_several_consumers_get_context_available_addressed_to_all(room: RoomRef) -> None:
    await write(room, consumers=["frontend", "qa", "frontend"])

    [event] = await all_events(room)

    assert event["to"] == "all"
    assert event["payload"]["consuming_agents"] == ["frontend", "qa"]


async def test_context_updated_goes_to_the_consumer_with_the_previous_version(
    room: RoomRef,
) -> None:
    entry = await write(room, consumers=["frontend"])

    await update(room, entry["id"], summary="v2", author="backend")
    await update(room, entry["id"], consuming_agents=["frontend", "qa"], author="lead")

    events = await all_events(room)
    assert [e["type"] for e in events] == [
        "context_available",
        "context_updated",
        "context_updated",
    ]
    first, second = events[1], events[2]
    assert (first["to"], first["from"]) == ("frontend", "backend")
    assert first["payload"]["id"] == entry["id"]
    assert first["payload"]["version"] == "1.1"
    assert first["payload"]["previousVersion"] == "1.0"
    assert first["payload"]["summary"] == "v2"
    assert (second["to"], second["from"]) == ("all", "lead")
    assert second["payload"]["version"] == "1.2"
    assert second["payload"]["consuming_agents"] == ["frontend", "qa"]


async def test_consumer_receives_the_context_event_through_addressed_unread(
    room: RoomRef,
) -> None:
    await write(room, consumers=["frontend"])
    await write(room, consumers=["mobile"])

    got = await events_services.event_take_unread(
        room, agent_id="frontend", limit=50, addressed_only=True
    )

    assert [e["to"] for e in got["events"]] == ["frontend"]


# --- list_context -----------------------------------------------------------------------


async def test_list_context_is_newest_first(room: RoomRef) -> None:
    ids = [(await write(room, summary=str(i)))["id"] for i in range(5)]

    listed = await context_selectors.context_list(room, type_=None, author=None)

    assert [e["id"] for e in listed] == list(reversed(ids))


async def test_updating_an_entry_does_not_move_it_in_the_list(room: RoomRef) -> None:
    old = await write(room, summary="old")
    new = await write(room, summary="new")
    await update(room, old["id"], summary="old, revised")

    listed = await context_selectors.context_list(room, type_=None, author=None)

    assert [(e["id"], e["version"]) for e in listed] == [(new["id"], "1.0"), (old["id"], "1.1")]


async def test_list_context_filters_by_type_and_author(room: RoomRef) -> None:
    n1 = await write(room, "note", author="backend")
    d1 = await write(room, "arch_decision", author="backend")
    n2 = await write(room, "note", author="frontend")

    by_type = await context_selectors.context_list(room, type_="note", author=None)
    by_author = await context_selectors.context_list(room, type_=None, author="backend")
    both = await invoke(room, "list_context", type="note", author="frontend")
    none = await context_selectors.context_list(room, type_="change_request", author=None)

    assert [e["id"] for e in by_type] == [n2["id"], n1["id"]]
    assert [e["id"] for e in by_author] == [d1["id"], n1["id"]]
    assert [e["id"] for e in both] == [n2["id"]]
    assert none == []


async def test_listed_entries_carry_their_payloads(room: RoomRef) -> None:
    entry = await write(room, "api_contract")

    [listed] = await context_selectors.context_list(room, type_=None, author=None)

    assert listed == entry


# --- empty arrays -----------------------------------------------------------------------


async def test_empty_arrays_survive_write_update_and_history_as_lists(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    body = payload("arch_decision", alternatives=[], consequences=[], extra={"tags": []})
    entry = await write(room, "arch_decision", body=body, consumers=[])

    assert entry["consuming_agents"] == []
    read = await context_selectors.context_get(room, entry_id=entry["id"])
    assert read["consuming_agents"] == []
    assert read["payload"] == body

    updated = await update(room, entry["id"], summary="only the summary")
    assert updated["consuming_agents"] == []
    assert updated["payload"] == body
    again = await update(room, entry["id"], payload=body, consuming_agents=[])
    assert again["consuming_agents"] == []
    assert again["payload"]["alternatives"] == []
    assert again["payload"]["extra"] == {"tags": []}

    # What Redis holds, not only what the reader puts right.
    stored = json.loads(sync_redis.hget(room.keys.context, entry["id"]))  # type: ignore[arg-type]
    assert stored["consuming_agents"] == []
    for raw in sync_redis.hgetall(room.keys.context_versions).values():
        version = json.loads(raw)
        assert version["consuming_agents"] == []
        assert version["payload"]["consequences"] == []
    for event in await all_events(room):
        assert event["payload"]["consuming_agents"] == []
        assert event["to"] == "all"
    listed = await context_selectors.context_list(room, type_=None, author=None)
    assert listed[0]["consuming_agents"] == []
    assert listed[0]["payload"]["alternatives"] == []


# --- publishing again: write_context's supersedes (issue 31) ------------------------------


async def test_write_context_with_supersedes_publishes_the_next_version_of_the_entry(
    room: RoomRef,
) -> None:
    """A core agent publishing its contract again gets version 1.1 of the same entry (no
    second entry), its consumers told with context_updated; a new entry is still 1.0."""
    first = await invoke(
        room,
        "write_context",
        type="api_contract",
        summary="auth v1",
        consuming_agents=["frontend"],
        payload=payload("api_contract"),
        author="backend",
    )
    assert first["version"] == "1.0"
    again = await invoke(
        room,
        "write_context",
        type="api_contract",
        summary="auth v2",
        consuming_agents=["frontend"],
        payload=payload("api_contract", version="v2"),
        author="backend",
        supersedes=first["id"],
    )
    assert (again["id"], again["version"]) == (first["id"], "1.1")
    assert again["payload"]["version"] == "v2"
    assert [
        e["id"] for e in await context_selectors.context_list(room, type_=None, author=None)
    ] == [first["id"]]
    history = await context_selectors.context_history_newest_first(room, entry_id=first["id"])
    assert [v["summary"] for v in history["history"]] == ["auth v1"]
    updated = [e for e in await all_events(room) if e["type"] == "context_updated"]
    assert len(updated) == 1
    assert (updated[0]["to"], updated[0]["payload"]["version"]) == ("frontend", "1.1")
    assert updated[0]["payload"]["previousVersion"] == "1.0"


async def test_supersedes_of_another_type_or_unknown_id_is_refused_and_nothing_changes(
    room: RoomRef,
) -> None:
    note = await write(room, "note")
    with pytest.raises(errors.ToolArgumentsError) as refused:
        await invoke(
            room,
            "write_context",
            type="arch_decision",
            summary="x",
            payload=payload("arch_decision"),
            author="backend",
            supersedes=note["id"],
        )
    assert refused.value.message == errors.CONTEXT_SUPERSEDES_TYPE.format(
        entry_id=note["id"], stored="note", type="arch_decision"
    )
    with pytest.raises(errors.ContextNotFoundError):
        await invoke(
            room,
            "write_context",
            type="note",
            summary="x",
            payload=payload("note"),
            author="backend",
            supersedes="c_nosuchentry00",
        )
    assert (await context_selectors.context_get(room, entry_id=note["id"]))["version"] == "1.0"
    assert len(await context_selectors.context_list(room, type_=None, author=None)) == 1


async def test_concurrent_supersedes_each_get_their_own_version(room: RoomRef) -> None:
    entry = await write(room, summary="s0")
    results = await asyncio.gather(
        *(
            invoke(
                room,
                "write_context",
                type="note",
                summary=f"s{i}",
                payload=payload("note", text=f"p{i}"),
                author="backend",
                supersedes=entry["id"],
            )
            for i in range(1, 11)
        )
    )
    assert sorted(r["version"] for r in results) == sorted(f"1.{i}" for i in range(1, 11))
    assert {r["id"] for r in results} == {entry["id"]}
