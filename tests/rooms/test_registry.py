"""The tool table (rooms/registry.py): the pinned list of tool names, their input schemas,
argument validation with size limits, and the same answer for a room that is missing,
another team's, or refused by the door."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis

from rooms import errors, registry, schemas
from rooms.keys import RoomKeys
from rooms.refs import RoomRef
from rooms.selectors import events as events_selectors
from rooms.services import plan as plan_services
from tenants.access import room_access
from tenants.capabilities import Caller
from tests import callers
from tests.rooms.conftest import invoke

pytestmark = pytest.mark.anyio

TOOL_NAMES = [
    "read_plan",
    "add_task",
    "update_task",
    "claim_task",
    "release_task",
    "get_task",
    "get_unblocked_tasks",
    "get_my_tasks",
    "get_my_summary",
    "write_context",
    "read_context",
    "list_context",
    "update_context",
    "post_event",
    "read_events",
    "get_unread_events",
    "wait_for_events",
    "mark_event_read",
    "get_event_reads",
    "reply_to_event",
    "heartbeat",
    "get_presence",
    "acquire_lock",
    "release_lock",
    "list_locks",
    "set_shared_var",
    "get_shared_var",
    "list_shared_vars",
    "leave_room",
    "get_room_info",
    "delete_task",
    "set_task_priority",
    "add_dependency",
    "delete_context",
    "get_context_history",
    "delete_event",
    "request_review",
    "approve",
    "reject",
    "list_reviews",
    "diff_context",
    "get_room_analytics",
    "search",
    "create_room_from_template",
    "lease_claim",
    "lease_renew",
    "lease_release",
    "lease_check",
    "lease_list",
    "note_read",
    "drift_check",
    "submit_task",
    "verify_task",
    "handoff_task",
    "accept_handoff",
    "decline_handoff",
    "set_room_mode",
    "set_room_status",
    "send_message",
    "inbox",
    "ack_message",
    "sent_messages",
    "room_claim",
    "room_release",
    "room_broadcast",
    "room_state",
    "room_read",
]
CALLER_TOOLS = ["list_rooms", "list_templates"]

NOTE = {"text": "hello"}

# Valid arguments (besides roomId) for every tool: validation passes, so what a call meets
# next is the door's access check.
VALID_ARGS: dict[str, dict[str, Any]] = {
    "read_plan": {},
    "add_task": {"title": "t", "description": "d"},
    "update_task": {"taskId": "t_abcdefghijkl", "status": "done"},
    "claim_task": {"taskId": "t_abcdefghijkl", "agentId": "alice"},
    "release_task": {"taskId": "t_abcdefghijkl", "agentId": "alice"},
    "get_task": {"taskId": "t_abcdefghijkl"},
    "get_unblocked_tasks": {},
    "get_my_tasks": {"agentId": "alice"},
    "get_my_summary": {"agentId": "alice"},
    "write_context": {
        "type": "note",
        "summary": "s",
        "consuming_agents": ["bob"],
        "payload": NOTE,
        "author": "alice",
    },
    "read_context": {"id": "c_abcdefghijkl"},
    "list_context": {},
    "update_context": {"id": "c_abcdefghijkl", "author": "alice", "summary": "s2"},
    "post_event": {"type": "ping", "from": "alice", "to": "all", "payload": {}},
    "read_events": {},
    "get_unread_events": {"agentId": "alice"},
    "wait_for_events": {"agentId": "alice", "timeoutMs": 0},
    "mark_event_read": {"eventId": "1-0", "agentId": "alice"},
    "get_event_reads": {"eventId": "1-0"},
    "reply_to_event": {"replyToId": "1-0", "type": "pong", "from": "bob", "payload": {}},
    "heartbeat": {"agentId": "alice"},
    "get_presence": {},
    "acquire_lock": {"resource": "db", "agentId": "alice"},
    "release_lock": {"resource": "db", "agentId": "alice"},
    "list_locks": {},
    "set_shared_var": {"key": "port", "value": "3000", "agentId": "alice"},
    "get_shared_var": {"key": "port"},
    "list_shared_vars": {},
    "leave_room": {"agentId": "alice"},
    "get_room_info": {},
    "delete_task": {"taskId": "t_abcdefghijkl"},
    "set_task_priority": {"taskId": "t_abcdefghijkl", "priority": 1},
    "add_dependency": {"taskId": "t_abcdefghijkl", "dependsOn": "t_bcdefghijklm"},
    "delete_context": {"id": "c_abcdefghijkl"},
    "get_context_history": {"id": "c_abcdefghijkl"},
    "delete_event": {"eventId": "1-0"},
    "request_review": {
        "targetType": "task",
        "targetId": "t_abcdefghijkl",
        "requestedBy": "alice",
        "reviewer": "bob",
    },
    "approve": {"reviewId": "r_abcdefghijkl", "agentId": "alice"},
    "reject": {"reviewId": "r_abcdefghijkl", "agentId": "alice"},
    "list_reviews": {},
    "diff_context": {"id": "c_abcdefghijkl"},
    "get_room_analytics": {"days": 3},
    "search": {"q": "deploy*"},
    "create_room_from_template": {"templateId": "blank"},
    "lease_claim": {"agentId": "alice", "path": "src/**"},
    "lease_renew": {"agentId": "alice", "leaseId": "l_abcdefghijkl"},
    "lease_release": {"agentId": "alice", "leaseId": "l_abcdefghijkl"},
    "lease_check": {"path": "src/app.py"},
    "lease_list": {},
    "note_read": {"agentId": "alice", "path": "src/app.py", "sha256": "a" * 64},
    "drift_check": {"agentId": "alice", "path": "src/app.py", "sha256": "b" * 64},
    "submit_task": {
        "agentId": "alice",
        "taskId": "t_abcdefghijkl",
        "evidence": [{"kind": "test", "text": "12 passed"}],
    },
    "verify_task": {"agentId": "alice", "taskId": "t_abcdefghijkl", "verdict": "accept"},
    "handoff_task": {"taskId": "t_abcdefghijkl", "from": "alice", "to": "bob"},
    "accept_handoff": {"agentId": "alice", "handoffId": "h_abcdefghijkl"},
    "decline_handoff": {"agentId": "alice", "handoffId": "h_abcdefghijkl"},
    "set_room_mode": {"agentId": "alice", "evidenceRequired": True},
    "set_room_status": {"status": "active", "agentId": "alice"},
    "send_message": {"from": "alice", "to": "*", "body": "hello"},
    "inbox": {"agentId": "alice"},
    "ack_message": {"agentId": "alice", "messageId": "m_abcdefghijkl"},
    "sent_messages": {"agentId": "alice"},
    "room_claim": {"agentId": "alice", "path": "src/app.py"},
    "room_release": {"agentId": "alice", "path": "docs/never-claimed.md"},
    "room_broadcast": {"agentId": "alice", "text": "hello"},
    "room_state": {},
    "room_read": {"agentId": "alice"},
}


def door(room: RoomRef) -> Callable[[str, bool], Awaitable[RoomRef]]:
    async def access(room_id: str, write: bool) -> RoomRef:
        assert room_id == room.room_id
        return room

    return access


async def refused_parse(name: str, arguments: dict[str, Any]) -> errors.ToolArgumentsError:
    async def never(room_id: str, write: bool) -> RoomRef:
        raise AssertionError("the access check ran before the arguments were validated")

    with pytest.raises(errors.ToolArgumentsError) as caught:
        await invoke(name, arguments, never)
    return caught.value


# --- the table --------------------------------------------------------------------------


def test_the_tool_names_are_the_protocols_list_rooms_wait_for_events_and_claims() -> None:
    assert [t.name for t in registry.TOOLS] == [*CALLER_TOOLS, *TOOL_NAMES]
    assert [t.name for t in registry.TOOLS if isinstance(t, registry.RoomTool)] == TOOL_NAMES
    assert sorted(registry.TOOLS_BY_NAME) == sorted([*CALLER_TOOLS, *TOOL_NAMES])
    assert set(VALID_ARGS) == set(TOOL_NAMES)


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_input_schema_forbids_extra_properties_and_requires_room_id(name: str) -> None:
    schema = registry.tool_get(name).input_schema()

    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    # A room made from a template may be left unnamed: a new one is made.
    assert ("roomId" in schema["required"]) is (name != "create_room_from_template")
    assert schema["properties"]["roomId"]["pattern"] == schemas.ROOM_ID_PATTERN
    json.dumps(schema)


def test_schemas_use_the_wire_names_of_arguments() -> None:
    post = registry.tool_get("post_event").input_schema()
    reply = registry.tool_get("reply_to_event").input_schema()

    assert "from" in post["properties"] and "from_" not in post["properties"]
    assert "from" in reply["properties"] and "type" in reply["required"]
    assert "depends_on" in registry.tool_get("add_task").input_schema()["properties"]
    assert "consuming_agents" in registry.tool_get("write_context").input_schema()["properties"]


def test_every_tool_has_a_description_for_the_agent() -> None:
    for tool in registry.TOOLS:
        assert len(tool.description) > 15, tool.name


def test_read_only_flags_match_what_the_tool_does() -> None:
    readers = {t.name for t in registry.TOOLS if t.read_only}

    assert readers == {
        "list_rooms",
        "list_templates",
        "read_plan",
        "get_task",
        "get_unblocked_tasks",
        "get_my_tasks",
        "get_my_summary",
        "read_context",
        "list_context",
        "read_events",
        "get_unread_events",
        "wait_for_events",
        "get_event_reads",
        "get_presence",
        "list_locks",
        "get_shared_var",
        "list_shared_vars",
        "get_room_info",
        "get_context_history",
        "list_reviews",
        "diff_context",
        "get_room_analytics",
        "search",
        "lease_check",
        "lease_list",
        "drift_check",
        "inbox",
        "sent_messages",
        "room_state",
        "room_read",
    }


async def test_unknown_tool_is_refused_listing_the_tools() -> None:
    with pytest.raises(errors.UnknownToolError) as caught:
        registry.tool_get("read_plans")

    assert "'read_plans'" in caught.value.message
    for name in TOOL_NAMES:
        assert name in caught.value.message


# --- unknown and missing arguments ------------------------------------------------------


async def test_unknown_argument_is_refused_naming_the_allowed_ones() -> None:
    exc = await refused_parse("heartbeat", {"roomId": "room-1", "agentID": "alice"})

    allowed = "(allowed: roomId, idempotencyKey, agentId, tags, idle)"
    assert f"unknown argument 'agentID': did you mean 'agentId'? {allowed}" in exc.message
    assert "agentId: required" in exc.message
    assert sorted(exc.extra["fields"]) == ["agentID", "agentId"]


async def test_unknown_argument_of_a_tool_with_an_aliased_field_lists_the_wire_name() -> None:
    exc = await refused_parse(
        "post_event", {"roomId": "room-1", "type": "x", "from_": "alice", "to": "all"}
    )

    assert (
        "unknown argument 'from_': did you mean 'from'? "
        "(allowed: roomId, idempotencyKey, type, from, to, payload)" in exc.message
    )


@pytest.mark.parametrize("name", TOOL_NAMES)
async def test_every_tool_refuses_an_unknown_argument(name: str) -> None:
    exc = await refused_parse(name, {"roomId": "room-1", **VALID_ARGS[name], "bogus": 1})

    assert "unknown argument 'bogus' (allowed: roomId" in exc.message


async def test_arguments_that_are_not_an_object_are_refused() -> None:
    exc = await refused_parse("read_plan", ["room-1"])  # type: ignore[arg-type]

    assert exc.message == registry.NOT_AN_OBJECT.format(kind="list")


async def test_invalid_status_is_refused() -> None:
    exc = await refused_parse(
        "update_task", {"roomId": "room-1", "taskId": "t_1", "status": "finished"}
    )

    assert "status: " in exc.message
    assert exc.extra["fields"] == ["status"]


# --- forgiving names (issue 25, point 2) -------------------------------------------------

# (tool, the arguments without the one meant, the name given instead, the name meant):
# the issue's five near misses first, each tool's own spelling of "depends on" after.
NEAR_MISSES: list[tuple[str, str, str, str]] = [
    ("heartbeat", "agentId", "agent_id", "agentId"),
    ("heartbeat", "agentId", "agentID", "agentId"),
    ("get_task", "roomId", "room_id", "roomId"),
    ("update_task", "taskId", "task", "taskId"),
    ("add_dependency", "dependsOn", "depends_on", "dependsOn"),
    ("add_task", "depends_on", "dependsOn", "depends_on"),
    ("claim_task", "agentId", "AgentId", "agentId"),
    ("get_task", "taskId", "id", "taskId"),
    ("mark_event_read", "eventId", "id", "eventId"),
    ("post_event", "from", "agent", "from"),
    ("post_event", "from", "agent_id", "from"),
    ("write_context", "author", "from", "author"),
    ("claim_task", "agentId", "from", "agentId"),
    ("request_review", "requestedBy", "requested_by", "requestedBy"),
    ("send_message", "body", "message", "body"),
    ("room_broadcast", "text", "message", "text"),
    ("search", "q", "query", "q"),
    ("heartbeat", "agentId", "agnetId", "agentId"),
]


def near_miss_arguments(name: str, left_out: str, given: str) -> dict[str, Any]:
    arguments: dict[str, Any] = {"roomId": "room-1", **VALID_ARGS[name]}
    value = arguments.pop(left_out, ["t_abcdefghijkl"] if left_out == "depends_on" else "x1")
    return {**arguments, given: value}


@pytest.mark.parametrize(("name", "left_out", "given", "meant"), NEAR_MISSES)
async def test_a_near_miss_is_refused_naming_the_argument_it_meant(
    name: str, left_out: str, given: str, meant: str
) -> None:
    exc = await refused_parse(name, near_miss_arguments(name, left_out, given))

    assert f"unknown argument {given!r}: did you mean {meant!r}? (allowed: " in exc.message
    assert exc.extra["didYouMean"] == {given: meant}


async def test_a_name_the_call_gave_already_is_not_what_a_near_miss_meant() -> None:
    exc = await refused_parse("heartbeat", {"roomId": "room-1", "agentId": "a", "agent_id": "b"})

    assert "unknown argument 'agent_id' (allowed: " in exc.message
    assert "didYouMean" not in exc.extra


async def test_a_10_kb_argument_name_is_refused_quickly_and_shown_cut_short() -> None:
    name = "agentId" + "x" * 10_240
    started = time.perf_counter()
    exc = await refused_parse("post_event", {**VALID_ARGS["post_event"], "roomId": "r-1", name: 1})

    assert time.perf_counter() - started < 0.5
    assert "(10247 characters) (allowed: roomId" in exc.message
    assert len(exc.message) < 300
    assert exc.extra["fields"] == [name[: registry.NAME_SHOWN]]


async def test_thousands_of_unknown_names_make_a_bounded_message() -> None:
    many = {f"agent_{i:05}_{'y' * 50}": 1 for i in range(5_000)}
    started = time.perf_counter()
    exc = await refused_parse("post_event", {**VALID_ARGS["post_event"], "roomId": "r-1", **many})

    assert time.perf_counter() - started < 2
    assert exc.message.endswith(f"; and {5_000 - registry.PROBLEMS_SHOWN} more.")
    assert len(exc.message) < 3_000
    assert len(exc.extra["fields"]) == registry.PROBLEMS_SHOWN


# Every tool whose acting agent is not called agentId, with the argument agentId stands for.
ACTOR_ALIASED = {
    "write_context": "author",
    "update_context": "author",
    "post_event": "from",
    "reply_to_event": "from",
    "request_review": "requestedBy",
    "handoff_task": "from",
    "send_message": "from",
}


def test_the_tools_agent_id_stands_in_for_are_those_whose_actor_has_another_name() -> None:
    aliased = {t.name: schemas.actor_alternates(t.input_model) for t in registry.TOOLS}

    assert {name: wires for name, wires in aliased.items() if wires} == {
        name: (wire,) for name, wire in ACTOR_ALIASED.items()
    }


@pytest.mark.parametrize(("name", "actor"), ACTOR_ALIASED.items())
def test_agent_id_is_shown_as_the_same_as_the_actor_and_neither_is_required(
    name: str, actor: str
) -> None:
    schema = registry.tool_get(name).input_schema()

    assert schema["properties"]["agentId"]["description"] == f"The same as {actor}: give either."
    assert "Required: this or agentId." in schema["properties"][actor]["description"]
    assert actor not in schema["required"] and "agentId" not in schema["required"]
    assert "anyOf" not in schema and "oneOf" not in schema


def actor_aliased_arguments(name: str, **actor: str) -> dict[str, Any]:
    arguments = {"roomId": "room-1", **VALID_ARGS[name]}
    arguments.pop(ACTOR_ALIASED[name])
    return {**arguments, **actor}


@pytest.mark.parametrize(("name", "actor"), ACTOR_ALIASED.items())
async def test_agent_id_is_accepted_as_the_actor_and_parsed_into_its_field(
    name: str, actor: str
) -> None:
    tool = registry.tool_get(name)
    alone = registry.arguments_parse(tool, actor_aliased_arguments(name, agentId="carol"))
    both = registry.arguments_parse(
        tool, actor_aliased_arguments(name, agentId="carol", **{actor: "carol"})
    )
    roomds = registry.arguments_parse(tool, actor_aliased_arguments(name, **{actor: "carol"}))

    assert tool.acting(alone) == tool.acting(both) == "carol"
    assert alone == both == roomds
    assert alone.model_dump(by_alias=True)[actor] == "carol"


@pytest.mark.parametrize(("name", "actor"), ACTOR_ALIASED.items())
async def test_agent_id_and_the_actor_naming_different_agents_are_refused(
    name: str, actor: str
) -> None:
    exc = await refused_parse(
        name, actor_aliased_arguments(name, agentId="carol", **{actor: "dan"})
    )

    assert exc.message == (
        "Invalid arguments: "
        + schemas.ACTOR_CONFLICT.format(given="'carol'", field=actor, canonical="'dan'")
        + "."
    )
    assert exc.extra["fields"] == ["agentId", actor]


@pytest.mark.parametrize(("name", "actor"), ACTOR_ALIASED.items())
async def test_neither_agent_id_nor_the_actor_is_refused_saying_either_will_do(
    name: str, actor: str
) -> None:
    exc = await refused_parse(name, actor_aliased_arguments(name))

    assert registry.ACTOR_MISSING.format(name=actor) in exc.message
    assert exc.extra["fields"] == [actor]


async def test_agent_id_runs_a_tool_whose_actor_is_from(room: RoomRef) -> None:
    posted = await invoke(
        "post_event",
        {"roomId": room.room_id, "type": "ping", "agentId": "carol"},
        door(room),
    )
    sent = await invoke(
        "send_message",
        {"roomId": room.room_id, "agentId": "carol", "to": "*", "body": "hi"},
        door(room),
    )

    assert posted["from"] == "carol"
    assert sent["count"] == 0  # nobody else is here: a warning, not an error


# --- size limits ------------------------------------------------------------------------

BIG_PAYLOAD = {"text": "x" * 64_000}  # 64,013 characters of JSON

SIZE_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("add_task", {"title": "x" * 501, "description": ""}, "title", "500"),
    ("add_task", {"title": "t", "description": "x" * 16_001}, "description", "16000"),
    (
        "add_task",
        {"title": "t", "description": "", "depends_on": [f"t_{i}" for i in range(101)]},
        "depends_on",
        "100",
    ),
    ("update_task", {"taskId": "t_1", "status": "done", "note": "x" * 16_001}, "note", "16000"),
    (
        "update_task",
        {"taskId": "t_1", "status": "done", "description": "x" * 16_001},
        "description",
        "16000",
    ),
    (
        "write_context",
        {**VALID_ARGS["write_context"], "summary": "x" * 4_001},
        "summary",
        "4000",
    ),
    (
        "write_context",
        {**VALID_ARGS["write_context"], "payload": BIG_PAYLOAD},
        "payload",
        "64000",
    ),
    (
        "write_context",
        {**VALID_ARGS["write_context"], "consuming_agents": [f"a{i}" for i in range(51)]},
        "consuming_agents",
        "50",
    ),
    (
        "update_context",
        {**VALID_ARGS["update_context"], "payload": BIG_PAYLOAD},
        "payload",
        "64000",
    ),
    (
        "update_context",
        {**VALID_ARGS["update_context"], "consuming_agents": [f"a{i}" for i in range(51)]},
        "consuming_agents",
        "50",
    ),
    ("post_event", {**VALID_ARGS["post_event"], "payload": BIG_PAYLOAD}, "payload", "64000"),
    (
        "post_event",
        {**VALID_ARGS["post_event"], "payload": ["x" * 63_990, "y" * 10]},
        "payload",
        "64000",
    ),
    (
        "reply_to_event",
        {**VALID_ARGS["reply_to_event"], "payload": BIG_PAYLOAD},
        "payload",
        "64000",
    ),
    ("set_shared_var", {**VALID_ARGS["set_shared_var"], "value": "x" * 4_097}, "value", "4096"),
    ("heartbeat", {"agentId": "a" * 129}, "agentId", "128"),
    ("acquire_lock", {"resource": "r" * 129, "agentId": "alice"}, "resource", "128"),
    (
        "acquire_lock",
        {"resource": "db", "agentId": "alice", "ttlSeconds": 301},
        "ttlSeconds",
        "300",
    ),
    ("read_events", {"limit": 101}, "limit", "100"),
    ("get_unread_events", {"agentId": "alice", "limit": 101}, "limit", "100"),
]


@pytest.mark.parametrize(
    ("name", "arguments", "field", "limit"),
    SIZE_CASES,
    ids=[f"{n}.{f}" for n, _, f, _ in SIZE_CASES],
)
async def test_over_a_size_limit_is_refused_naming_the_field_and_the_limit(
    name: str, arguments: dict[str, Any], field: str, limit: str
) -> None:
    exc = await refused_parse(name, {"roomId": "room-1", **arguments})

    assert exc.extra["fields"] == [field]
    assert f"{field}: " in exc.message
    assert limit in exc.message.replace(",", "")


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("add_task", {"title": "x" * 500, "description": "x" * 16_000}),
        (
            "add_task",
            {"title": "t", "description": "", "depends_on": [f"t_{i}" for i in range(100)]},
        ),
        ("set_shared_var", {**VALID_ARGS["set_shared_var"], "value": "x" * 4_096}),
        (
            "write_context",
            {**VALID_ARGS["write_context"], "consuming_agents": [f"a{i}" for i in range(50)]},
        ),
        ("post_event", {**VALID_ARGS["post_event"], "payload": {"text": "x" * 63_987}}),
    ],
    ids=["title-and-description", "depends_on", "value", "consuming_agents", "payload"],
)
async def test_exactly_at_a_size_limit_is_accepted(
    room: RoomRef, name: str, arguments: dict[str, Any]
) -> None:
    result = await invoke(name, {"roomId": room.room_id, **arguments}, door(room))

    assert result


# --- roomId -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "room_id", ["a", "Room-1", "-room", "_room", "room.1", "room 1", "r" * 65, "room__1", "a__"]
)
@pytest.mark.parametrize("name", ["read_plan", "add_task", "heartbeat"])
async def test_a_bad_room_id_is_refused_by_the_access_check_saying_why(
    name: str, room_id: str, team_a: Caller
) -> None:
    async def real(rid: str, write: bool) -> RoomRef:
        return await room_access(team_a, rid, write=write)

    with pytest.raises(errors.ToolArgumentsError) as caught:
        await invoke(name, {**VALID_ARGS[name], "roomId": room_id}, real)

    assert caught.value.message == errors.ROOM_ID_INVALID.format(room_id=room_id)
    assert "'__'" in caught.value.message


async def test_an_empty_room_id_is_refused_by_the_schema() -> None:
    exc = await refused_parse("read_plan", {"roomId": ""})

    assert exc.extra["fields"] == ["roomId"]


async def test_missing_room_id_is_refused() -> None:
    exc = await refused_parse("read_plan", {})

    assert exc.message == "Invalid arguments: roomId: required."


@pytest.mark.parametrize("room_id", ["ab", "a" * 64, "0-room_x", "r_1-2"])
async def test_a_good_room_id_reaches_the_access_check(room_id: str) -> None:
    seen: list[tuple[str, bool]] = []

    async def access(rid: str, write: bool) -> RoomRef:
        seen.append((rid, write))
        raise errors.RoomAccessError(errors.ROOM_ACCESS_DENIED)

    with pytest.raises(errors.RoomAccessError):
        await invoke("add_task", {"roomId": room_id, "title": "t"}, access)

    assert seen == [(room_id, True)]


# --- one answer for missing, foreign and refused rooms --------------------------------------


@pytest.mark.parametrize("name", TOOL_NAMES)
async def test_every_tool_gives_the_same_answer_for_a_refused_a_foreign_and_a_missing_room(
    name: str, room: RoomRef, team_a: Caller, sync_redis: redis.Redis
) -> None:
    # `room` is team-a's; give it some state so a leak would show.
    await plan_services.task_add(
        room, title="secret", description="", depends_on=[], priority=None, agent_id="a"
    )
    events_before = await events_selectors.event_list(room, since=None, limit=100, order="asc")
    arguments = {"roomId": room.room_id, **VALID_ARGS[name]}

    async def refusing(room_id: str, write: bool) -> RoomRef:
        raise errors.RoomAccessError(errors.ROOM_ACCESS_DENIED)

    team_b = await callers.team("team-b")

    async def as_team_b(room_id: str, write: bool) -> RoomRef:
        return await room_access(team_b, room_id, write=write)

    async def invite_to_missing_room(room_id: str, write: bool) -> RoomRef:
        # An invite never claims, so a room nobody owns stays missing.
        return await room_access(callers.guest_of(team_a, room_id), room_id, write=write)

    missing_arguments = {**arguments, "roomId": "missing-" + room.room_id}
    caught: list[errors.DomainError] = []
    for access, args in (
        (refusing, arguments),
        (as_team_b, arguments),
        (invite_to_missing_room, missing_arguments),
    ):
        with pytest.raises(errors.RoomAccessError) as exc:
            await invoke(name, args, access)
        caught.append(exc.value)

    assert [e.message for e in caught] == [errors.ROOM_ACCESS_DENIED] * 3
    assert {(type(e), e.code, e.status, json.dumps(e.extra)) for e in caught} == {
        (errors.RoomAccessError, "room_not_found", 404, "{}")
    }
    # Nothing was written to the room the other team tried.
    assert (
        await events_selectors.event_list(room, since=None, limit=100, order="asc") == events_before
    )
    # The foreign room still belongs to team-a, and the missing room was not claimed.
    assert sync_redis.get(room.keys.owner) == str(team_a.team_id)
    assert sync_redis.exists(*RoomKeys(missing_arguments["roomId"]).durable()) == 0


async def test_foreign_room_access_stays_refused_for_reads_and_writes(
    room: RoomRef, team_a: Caller
) -> None:
    team_b = await callers.team("team-b")
    for write in (False, True):
        with pytest.raises(errors.RoomAccessError) as caught:
            await room_access(team_b, room.room_id, write=write)
        assert caught.value.message == errors.ROOM_ACCESS_DENIED

    owner = await room_access(team_a, room.room_id, write=True)
    assert owner.room_id == room.room_id


async def test_read_only_caller_may_not_call_a_writing_tool(room: RoomRef, team_a: Caller) -> None:
    reader = callers.reader_of(team_a)

    async def access(room_id: str, write: bool) -> RoomRef:
        return await room_access(reader, room_id, write=write)

    plan = await invoke("read_plan", {"roomId": room.room_id}, access)
    with pytest.raises(errors.ReadOnlyCallerError):
        await invoke("add_task", {"roomId": room.room_id, "title": "t"}, access)

    assert plan["tasks"] == []
