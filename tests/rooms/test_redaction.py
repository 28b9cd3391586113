"""Secrets in what agents and people write (rooms.redaction): redacted before they are
stored and the writer told where, refused, or let through (but for our own keys), by the
room's rule; identifiers are never rewritten; a guest cannot switch the rule off."""

from __future__ import annotations

import secrets as token_source
from typing import Any

import pytest

from calls.runner import tool_run
from rooms import errors
from rooms.refs import RoomRef
from tenants import errors as tenant_errors
from tenants.capabilities import Caller
from tests import callers
from tests.rooms.test_secrets import AWS_KEY_ID, GITHUB_TOKEN

pytestmark = pytest.mark.anyio
OUR_KEY = "rs_live_" + token_source.token_urlsafe(32)


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def test_secrets_are_replaced_by_markers_before_they_are_stored_and_the_writer_told(
    team_a: Caller, room: RoomRef
) -> None:
    task = await call(
        team_a, room, "add_task", title=f"rotate {OUR_KEY}", description=f"old id {AWS_KEY_ID}"
    )
    assert task["title"] == "rotate [redacted:Roomservice API key]"
    assert task["description"] == "old id [redacted:AWS Access Key]"
    assert task["redacted"]["count"] == 2
    assert task["redacted"]["places"] == [
        {"where": "title", "kind": "Roomservice API key"},
        {"where": "description", "kind": "AWS Access Key"},
    ]
    assert "a Roomservice API key at title" in task["redacted"]["message"]
    plan = await call(team_a, room, "read_plan")
    assert OUR_KEY not in str(plan) and AWS_KEY_ID not in str(plan)

    entry = await call(
        team_a,
        room,
        "write_context",
        type="note",
        summary="deploy notes",
        consuming_agents=["bob"],
        payload={"text": f"token {GITHUB_TOKEN}", "references": ["https://example.com/x"]},
        author="alice",
    )
    assert entry["redacted"]["places"] == [{"where": "payload.text", "kind": "GitHub Token"}]
    var = await call(
        team_a, room, "set_shared_var", key="DB_PASSWORD", value="hunter2-correct", agentId="a"
    )
    assert var["redacted"]["places"][0]["where"] == "value"
    got = await call(team_a, room, "get_shared_var", key="DB_PASSWORD")
    assert got["value"] == "[redacted:Secret Keyword]"
    await call(team_a, room, "heartbeat", agentId="bob")
    sent = await call(
        team_a, room, "send_message", **{"from": "alice"}, to="bob", body=f"use {OUR_KEY}"
    )
    assert sent["redacted"]["count"] == 1
    inbox = await call(team_a, room, "inbox", agentId="bob")
    assert OUR_KEY not in str(inbox)
    events = await call(team_a, room, "read_events", limit=50)
    assert OUR_KEY not in str(events) and GITHUB_TOKEN not in str(events)

    # Clean writes answer as they always did, and names are never rewritten.
    clean = await call(team_a, room, "add_task", title="a clean title")
    assert "redacted" not in clean
    await call(team_a, room, "heartbeat", agentId=f"agent-{OUR_KEY[:12]}")


async def test_a_room_that_refuses_secrets_stores_nothing_and_says_where(
    team_a: Caller, room: RoomRef
) -> None:
    mode = await call(team_a, room, "set_room_mode", agentId="lead", secrets="refuse")
    assert mode["secrets"] == "refuse"
    with pytest.raises(errors.SecretRefusedError) as refused:
        await call(team_a, room, "add_task", title="x", description=f"key {AWS_KEY_ID}")
    assert "an AWS Access Key at description" in refused.value.message
    assert refused.value.extra == {"redacted": [{"where": "description", "kind": "AWS Access Key"}]}
    assert (await call(team_a, room, "read_plan"))["tasks"] == []


async def test_a_room_with_checks_off_still_never_keeps_our_own_keys(
    team_a: Caller, room: RoomRef
) -> None:
    await call(team_a, room, "set_room_mode", agentId="lead", secrets="off")
    task = await call(team_a, room, "add_task", title="ids", description=f"{AWS_KEY_ID} {OUR_KEY}")
    assert task["description"] == f"{AWS_KEY_ID} [redacted:Roomservice API key]"
    assert task["redacted"]["places"] == [{"where": "description", "kind": "Roomservice API key"}]


async def test_a_guest_cannot_switch_the_checks_off(team_a: Caller, room: RoomRef) -> None:
    """The attack: an invited agent turns the room's checks off to leak a key through it."""
    guest = callers.guest_of(team_a, room.room_id)
    with pytest.raises(tenant_errors.NotPermittedError):
        await call(guest, room, "set_room_mode", agentId="mallory", secrets="off")
    task = await call(guest, room, "add_task", title=f"leak {OUR_KEY}")
    assert OUR_KEY not in task["title"]


async def test_a_secret_that_cannot_be_rewritten_is_refused(team_a: Caller, room: RoomRef) -> None:
    """A key of ours as a dict key, or in a name (which is never rewritten): refused, and
    nothing is stored."""
    with pytest.raises(errors.SecretRefusedError):
        await call(team_a, room, "post_event", type="note", **{"from": "a"}, payload={OUR_KEY: 1})
    # Names are scanned together; the refusal still says which one held the key.
    with pytest.raises(errors.SecretRefusedError, match=r"key at key\b"):
        await call(team_a, room, "set_shared_var", key=OUR_KEY[:60], value="x", agentId="a")
    with pytest.raises(errors.SecretRefusedError, match=r"key at agentId\b"):
        await call(team_a, room, "set_shared_var", key="k", value="x", agentId=OUR_KEY[:60])
    assert await call(team_a, room, "list_shared_vars") in (
        [],
        {},
        {"vars": {}},
    ) or OUR_KEY not in str(await call(team_a, room, "list_shared_vars"))
    events = await call(team_a, room, "read_events", limit=10)
    assert OUR_KEY not in str(events)


async def test_our_own_keys_spelled_with_escapes_are_never_kept_either(
    team_a: Caller, room: RoomRef
) -> None:
    """The reviewer's leak (issue 31, P4): a key of ours URL-encoded or JSON-escaped, into a
    room whose checks are off; ordinary encoded text beside it is stored as written."""
    await call(team_a, room, "set_room_mode", agentId="lead", secrets="off")
    url_encoded = OUR_KEY.replace("_", "%5F")
    json_escaped = OUR_KEY.replace("_", "\\u005f")
    ordinary = 'GET /search?q=rs%5Flive%5F+prefix&sort=created%5Fat {"sep": "\\u005f"}'
    task = await call(
        team_a, room, "add_task", title="links", description=f"{url_encoded} {ordinary}"
    )
    assert task["description"] == f"[redacted:Roomservice API key] {ordinary}"
    note = await call(
        team_a,
        room,
        "post_event",
        type="note",
        **{"from": "a"},
        payload={"raw": f'{{"key": "{json_escaped}"}}'},
    )
    assert note["redacted"]["places"] == [{"where": "payload.raw", "kind": "Roomservice API key"}]
    stored = str(await call(team_a, room, "read_plan")) + str(
        await call(team_a, room, "read_events", limit=10)
    )
    assert url_encoded not in stored and json_escaped not in stored
    assert OUR_KEY[8:] not in stored.replace("\\u005f", "_").replace("%5F", "_")
