"""Names are names (rooms/names.py): a tenant's agent cannot pass itself off as a person by
spelling `person:` another way, and no name, tag, selector, binding or lease path carries a
control, zero-width or text-direction character onto a page or a terminal. Ordinary names
pass through every door unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from calls.runner import tool_run
from rooms import errors, names
from rooms.paths import path_normalize
from rooms.refs import RoomRef
from tenants import acting, services
from tenants.capabilities import Caller
from tenants.models import ApiKey, Invite
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person, person

ANN = "person:ann@example.com"
ORDINARY = ["backend", "frontend-2", "Zoë", "数据-agent"]
# Each reads as Ann's name on the room page.
SPOOFS = {
    "a leading space": " " + ANN,
    "a zero-width space first": "\u200b" + ANN,
    "a byte order mark first": "\ufeff" + ANN,
    "upper case": ANN.upper(),
    "a capital P": "P" + ANN[1:],
    "fullwidth letters": "\uff50\uff45\uff52\uff53\uff4f\uff4e:ann@example.com",
    "a fullwidth colon": "person\uff1aann@example.com",
    "a Cyrillic er": "\u0440" + ANN[1:],
}
# Each is refused wherever a name or path is given, named by its code point.
HIDDEN = {
    "ESC": "\x1b",
    "DEL": "\x7f",
    "NEL (C1)": "\x85",
    "zero-width space": "\u200b",
    "zero-width joiner": "\u200d",
    "right-to-left mark": "\u200f",
    "left-to-right embedding": "\u202a",
    "right-to-left override": "\u202e",
    "word joiner": "\u2060",
    "right-to-left isolate": "\u2067",
    "pop directional isolate": "\u2069",
    "byte order mark": "\ufeff",
    "Arabic letter mark": "\u061c",
    "Hangul filler": "\u3164",
}


def code(char: str) -> str:
    return f"U+{ord(char):04X}"


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def refusal(caller: Caller, room: RoomRef, tool: str, **args: Any) -> str:
    with pytest.raises(errors.DomainError) as refused:
        await call(caller, room, tool, **args)
    return refused.value.message


async def event_count(caller: Caller, room: RoomRef) -> int:
    return len(await call(caller, room, "read_events", limit=100))


# --- The rule ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*ORDINARY, ANN, "a b", "ops_bot.v2"])
def test_ordinary_names_pass_unchanged(name: str) -> None:
    assert names.name_check(name, "agentId") is name


@pytest.mark.parametrize("spoof", SPOOFS.values(), ids=SPOOFS.keys())
def test_every_spelling_of_person_reads_as_a_person_and_is_refused_as_a_name(spoof: str) -> None:
    assert names.is_person_name(spoof)
    with pytest.raises(errors.ToolArgumentsError):
        names.name_check(spoof, "agentId")
    assert not any(names.is_person_name(name) for name in [*ORDINARY, "personal", "person"])


@pytest.mark.parametrize("char", HIDDEN.values(), ids=HIDDEN.keys())
def test_a_hidden_character_is_refused_by_code_point_and_position(char: str) -> None:
    with pytest.raises(errors.ToolArgumentsError) as refused:
        names.name_check(f"back{char}end", "agentId")
    assert f"{code(char)} (" in refused.value.message
    assert "at position 5" in refused.value.message
    assert refused.value.extra == {"field": "agentId", "codePoint": code(char), "position": 5}


def test_a_name_not_in_nfkc_is_refused_with_its_one_spelling_never_rewritten() -> None:
    """The decision: a name is refused unless already NFKC, so one agent has one spelling;
    the error gives it. (Storing the normal form would silently merge two agents.)"""
    for typed, meant in [
        ("Zoe\u0308", "Zoë"),
        ("\uff42\uff41\uff43\uff4b\uff45\uff4e\uff44", "backend"),
        ("\ufb01x-bot", "fix-bot"),
    ]:
        with pytest.raises(errors.ToolArgumentsError) as refused:
            names.name_check(typed, "agentId")
        assert f'Write it as "{meant}"' in refused.value.message


# --- Through the agents' tools -------------------------------------------------------------


@pytest.mark.anyio
async def test_no_spelling_of_person_passes_an_agents_tools(team_a: Caller, room: RoomRef) -> None:
    """The attack: an agent signs its writes with Ann's name spelt so the byte comparison
    misses it (a space, an invisible character, capitals, fullwidth or Cyrillic letters).
    Each is refused and nothing is written; an agent's own name still works."""
    for spoof in SPOOFS.values():
        for tool, args in [
            ("add_task", {"title": "forged", "agentId": spoof}),
            ("room_broadcast", {"text": "forged", "agentId": spoof}),
            ("send_message", {"to": "*", "body": "forged", "from": spoof}),
            ("post_event", {"type": "note", "from": spoof}),
            ("heartbeat", {"agentId": spoof}),
        ]:
            message = await refusal(team_a, room, tool, **args)
            assert "person" in message or "U+" in message, (tool, spoof, message)
    assert await event_count(team_a, room) == 0
    await call(team_a, room, "room_broadcast", text="mine", agentId="backend")
    assert (await call(team_a, room, "read_events"))[0]["from"] == "backend"


@pytest.mark.anyio
@pytest.mark.parametrize("char", HIDDEN.values(), ids=HIDDEN.keys())
async def test_hidden_characters_are_refused_in_every_name_tag_selector_and_path(
    char: str, team_a: Caller, room: RoomRef
) -> None:
    bad = f"fro{char}nt"
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("heartbeat", {"agentId": bad}),
        ("heartbeat", {"agentId": "backend", "tags": ["db", bad]}),
        ("send_message", {"from": "backend", "to": bad, "body": "hi"}),
        ("send_message", {"from": "backend", "to": f"tag:{bad}", "body": "hi"}),
        ("send_message", {"from": "backend", "to": f"file:src/{bad}.py", "body": "hi"}),
        ("lease_claim", {"agentId": "backend", "path": f"src/{bad}.py"}),
        ("claim_task", {"agentId": "backend", "taskId": "t-1", "paths": [f"src/{bad}.py"]}),
        ("request_review", {"targetType": "task", "targetId": "t", "requestedBy": "backend",
                            "reviewer": bad}),
        ("update_task", {"taskId": "t-1", "status": "pending", "owner": bad}),
        ("set_room_mode", {"agentId": "backend", "turns": "moderator", "moderator": bad}),
        ("write_context", {"type": "note", "summary": "s", "payload": {"text": "t"},
                           "author": "backend", "consuming_agents": [bad]}),
    ]  # fmt: skip
    for tool, args in attempts:
        message = await refusal(team_a, room, tool, **args)
        assert code(char) in message, (tool, message)
    assert await event_count(team_a, room) == 0


@pytest.mark.anyio
async def test_ordinary_names_work_unchanged_through_the_tools(
    team_a: Caller, room: RoomRef
) -> None:
    for agent in ORDINARY:
        await call(team_a, room, "heartbeat", agentId=agent, tags=["db", "Zoë"])
    present = await call(team_a, room, "get_presence")
    assert sorted(a["agentId"] for a in present) == sorted(ORDINARY)
    sent = await call(team_a, room, "send_message", to="数据-agent", body="hi", **{"from": "Zoë"})
    assert sent["recipients"] == ["数据-agent"]
    tagged = await call(team_a, room, "send_message", to="tag:Zoë", body="hi", **{"from": "Zoë"})
    assert sorted(tagged["recipients"]) == sorted(set(ORDINARY) - {"Zoë"})
    await call(team_a, room, "lease_claim", agentId="Zoë", path="docs/Zoë.md")
    leases = await call(team_a, room, "lease_list")
    assert [(x["holder"], x["path"]) for x in leases["leases"]] == [("Zoë", "docs/Zoë.md")]


def test_a_path_with_a_bidi_override_or_del_is_refused_naming_the_code_point() -> None:
    for char in ("\u202e", "\x7f", "\u200b", "\x1b"):
        with pytest.raises(errors.ToolArgumentsError) as refused:
            path_normalize(f"src/{char}gnp.exe")
        assert f"{code(char)} (" in refused.value.message and "position 5" in refused.value.message
    assert path_normalize("./src/Zoë/数据.py") == "src/Zoë/数据.py"


# --- Key and invite bindings: the dashboard and the REST API ---------------------------------


def _ann() -> Person:
    return person(f"ann-{new_room_id('n')}@example.com")


def test_a_key_or_invite_cannot_be_bound_to_a_spoofed_person_or_hidden_characters() -> None:
    """The attack: a team admin's key (or a guest's invite) bound to a name that reads as a
    person's, or one that carries a bidi override, so everything it writes looks like a
    person's or reads backwards. Refused on the Keys and Invites pages and by the REST API,
    with nothing minted; an ordinary binding is stored exactly as typed."""
    ann = _ann()
    room = services.room_create(team=ann.team, room_id=new_room_id("names"), actor="test")
    full = APIClient()
    full.credentials(
        HTTP_AUTHORIZATION="Bearer " + services.api_key_create(team=ann.team, name="full").secret
    )
    keys, invites = ApiKey.objects.filter(team=ann.team), Invite.objects.filter(room=room)
    before = (keys.count(), invites.count())
    bad = [*SPOOFS.values(), "ev\u202elive", "back\x1b[2Jend", "\u2066x\u2069"]
    for name in bad:
        shown = name.strip()  # what Django and DRF forms keep
        page = ann.client.post("/keys", {"name": "k", "agent_name": name}).content.decode()
        assert "person" in page or "U+" in page, name
        page = ann.client.post(
            f"/rooms/{room.room_id}/invites", {"label": "g", "agent_name": name}
        ).content.decode()
        assert "person" in page or "U+" in page, name
        for url, body in [
            ("/api/v1/keys", {"name": "k", "agentName": name}),
            (f"/api/v1/rooms/{room.room_id}/invites", {"label": "g", "agentName": name}),
        ]:
            answer = full.post(url, body, format="json")
            assert answer.status_code in (400, 403), (url, name, answer.content)
            message = answer.json()["message"]
            assert "person" in message or "U+" in message, (name, message)
        with pytest.raises(errors.DomainError):
            services.api_key_create(team=ann.team, name="k", agent_name=shown)
    assert (keys.count(), invites.count()) == before
    for name in ORDINARY:
        made = full.post("/api/v1/keys", {"name": "k", "agentName": name}, format="json")
        assert made.status_code == 201 and made.json()["agentName"] == name
        ann.client.post(f"/rooms/{room.room_id}/invites", {"label": "g", "agent_name": name})
    assert sorted(invites.values_list("agent_name", flat=True)) == sorted(ORDINARY)


def test_the_refusal_names_the_code_point_on_every_binding_door() -> None:
    ann = _ann()
    full = APIClient()
    full.credentials(
        HTTP_AUTHORIZATION="Bearer " + services.api_key_create(team=ann.team, name="full").secret
    )
    answer = full.post("/api/v1/keys", {"name": "k", "agentName": "ev\u202elive"}, format="json")
    assert answer.status_code == 400
    assert "U+202E (RIGHT-TO-LEFT OVERRIDE" in answer.json()["message"]
    assert "position 3" in answer.json()["message"]
    page = ann.client.post("/keys", {"name": "k", "agent_name": "ev\u202elive"}).content.decode()
    assert "The agent name holds U+202E (RIGHT-TO-LEFT OVERRIDE" in page


def test_a_key_bound_to_a_name_that_reads_as_a_person_is_still_no_person() -> None:
    """A key bound before bindings were checked (to "PERSON:ann@…", or even "person:ann@…")
    acts in the dashboard as that agent, never with a person's standing."""
    for legacy in (ANN.upper(), ANN):
        bound = Caller(
            team_id=1, team_slug="t", kind="key_session", credential="key:1", agent=legacy
        )
        assert acting.acting_as(bound, None).person is False
