"""What a guest reads (issue 31, point 7): an invite reaches one room as one agent, and reads
only its own agent's messages: those it sent or is a recipient of (direct, "*", a tag, a
file lease). Tried as the attacker would, through the REST tool door with a real invite
secret: another agent's inbox and sent_messages, and the events that carry message bodies
(get_unread_events, read_events, wait_for_events, get_my_summary, search); the legitimate
reads beside them still work. The rule is rooms.selectors.messages.message_visible."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from config.asgi import application
from tenants import services
from tenants.db import db_run
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]

SECRET = "the launch codes are 0000"


async def _call(secret: str, room_id: str, tool: str, **args: Any) -> httpx.Response:
    headers = {"content-type": "application/json", "authorization": f"Bearer {secret}"}
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.post(
            f"/api/v1/rooms/{room_id}/tools/{tool}", headers=headers, content=json.dumps(args)
        )


async def _ok(secret: str, room_id: str, tool: str, **args: Any) -> Any:
    answer = await _call(secret, room_id, tool, **args)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _setup() -> tuple[str, str, str, str]:
    team = services.team_ensure("guest-reads")
    room = services.room_create(team=team, room_id=new_room_id("guest"), actor="test")
    key = services.api_key_create(team=team, name="team").secret
    bound = services.invite_create(room=room, label="g", agent_name="guest").secret
    unbound = services.invite_create(room=room, label="anyone").secret
    return room.room_id, key, bound, unbound


@pytest.fixture
async def room() -> tuple[str, str, str, str]:
    return await db_run(_setup)


def _bodies(answer: Any) -> str:
    return json.dumps(answer)


async def test_a_guest_reads_its_own_messages_and_never_another_agents(
    room: tuple[str, str, str, str],
) -> None:
    room_id, key, guest, _ = room
    for agent in ("alice", "bob"):
        await _ok(key, room_id, "heartbeat", agentId=agent)
    await _ok(guest, room_id, "heartbeat", agentId="guest")
    private = await _ok(
        key, room_id, "send_message", **{"from": "bob", "to": "alice", "body": SECRET}
    )
    to_guest = await _ok(
        key, room_id, "send_message", **{"from": "bob", "to": "guest", "body": "hi guest"}
    )
    to_all = await _ok(
        key, room_id, "send_message", **{"from": "alice", "to": "*", "body": "standup"}
    )
    await _ok(
        guest, room_id, "send_message", **{"from": "guest", "to": "bob", "body": "from guest"}
    )

    # The attack: another agent's inbox and sent messages.
    for tool, args in (("inbox", {"agentId": "alice"}), ("sent_messages", {"agentId": "bob"})):
        refused = await _call(guest, room_id, tool, **args)
        assert refused.status_code == 403, refused.text
        assert SECRET not in refused.text
    # The attack: the events that carry message bodies, and search.
    for tool, args in (
        ("get_unread_events", {"agentId": "guest", "limit": 100}),
        ("read_events", {"limit": 100}),
        ("search", {"q": "launch codes"}),
    ):
        assert SECRET not in _bodies(await _ok(guest, room_id, tool, **args)), tool
    summary = await _ok(guest, room_id, "get_my_summary", agentId="guest")
    assert SECRET not in _bodies(summary)
    waited = await _ok(guest, room_id, "wait_for_events", agentId="guest", timeoutMs=0)
    assert SECRET not in _bodies(waited)

    # The legitimate path: its own inbox (to it, to "*"), what it sent, the events of both.
    inbox = await _ok(guest, room_id, "inbox", agentId="guest", unreadOnly=False)
    assert {m["messageId"] for m in inbox["messages"]} == {
        to_guest["messageId"],
        to_all["messageId"],
    }
    sent = await _ok(guest, room_id, "sent_messages", agentId="guest")
    assert [m["body"] for m in sent["messages"]] == ["from guest"]
    events = await _ok(guest, room_id, "read_events", limit=100)
    seen = {e["payload"]["messageId"] for e in events if e["type"] == "message"}
    assert private["messageId"] not in seen
    assert {to_guest["messageId"], to_all["messageId"]} <= seen
    # The team still reads every message.
    team_view = await _ok(key, room_id, "read_events", limit=100)
    assert SECRET in _bodies(team_view)
    assert SECRET in _bodies(await _ok(key, room_id, "inbox", agentId="alice"))


async def test_an_invite_bound_to_no_agent_reads_no_ones_messages(
    room: tuple[str, str, str, str],
) -> None:
    room_id, key, _, anyone = room
    for agent in ("alice", "bob"):
        await _ok(key, room_id, "heartbeat", agentId=agent)
    await _ok(key, room_id, "send_message", **{"from": "bob", "to": "alice", "body": SECRET})
    # It may name any agent, so naming alice must not open alice's inbox.
    refused = await _call(anyone, room_id, "inbox", agentId="alice")
    assert refused.status_code == 403 and SECRET not in refused.text
    assert "bound to your agent name" in refused.text
    events = await _ok(anyone, room_id, "read_events", limit=100)
    assert SECRET not in _bodies(events)
    # Its writes still work: it may send, and the plan is its to read.
    await _ok(anyone, room_id, "send_message", **{"from": "visitor", "to": "bob", "body": "hello"})
    assert (await _ok(anyone, room_id, "read_plan"))["tasks"] == []


async def test_a_guests_refused_read_does_not_make_the_agent_it_names_present(
    room: tuple[str, str, str, str],
) -> None:
    """A read marks its acting agent present beside the read; a guest naming an agent that is
    not its own must not: refused, it changed nothing (and an agent no one runs must not look
    alive). Its own agent's reads still mark it present."""
    room_id, key, guest, anyone = room
    refused = await _call(anyone, room_id, "inbox", agentId="ghost")
    assert refused.status_code == 403
    refused = await _call(guest, room_id, "inbox", agentId="ghost")
    assert refused.status_code == 403
    await _ok(guest, room_id, "inbox", agentId="guest")
    names = {agent["agentId"] for agent in await _ok(key, room_id, "get_presence")}
    assert "ghost" not in names and "guest" in names
