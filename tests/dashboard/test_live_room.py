"""The live room stays true: every event reads as words, counters and presence come with each
refresh, the log pages back and filters, search answers, and a contract's history names
the fields that changed."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from calls.runner import tool_run
from rooms.eventwords import WORDS, event_words
from rooms.store import engine as engine_store
from tenants import services
from tenants.models import Room
from tests import callers
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store

CONTRACT = {
    "service": "orders",
    "version": "1",
    "endpoints": [
        {
            "method": "GET",
            "path": "/orders",
            "response": {"id": "string", "currency": "USD"},
            "auth_required": True,
            "description": "list",
        }
    ],
}


def _call(agent: Any, tool: str, room: Room, **args: Any) -> Any:
    return engine_store.run_sync(tool_run, agent, tool, {"roomId": room.room_id, **args})


def _busy_room(owner: Person) -> tuple[Room, Any, dict[str, Any]]:
    """A room whose log holds most of the event types the tools emit."""
    room = services.room_create(team=owner.team, room_id=new_room_id("liveroom"), actor="t")
    a = callers.team_caller(owner.team.slug)
    for agent in ("backend", "frontend", "qa"):
        _call(a, "heartbeat", room, agentId=agent)
    task = _call(a, "add_task", room, title="Orders API", description="")
    other = _call(a, "add_task", room, title="Spare", description="")
    _call(a, "claim_task", room, taskId=task["id"], agentId="backend", paths=["src/orders/**"])
    _call(a, "update_task", room, taskId=task["id"], status="in_progress", note="on it")
    _call(a, "set_task_priority", room, taskId=other["id"], priority=3)
    entry = _call(
        a,
        "write_context",
        room,
        type="api_contract",
        summary="Orders contract",
        consuming_agents=["frontend"],
        author="backend",
        payload=CONTRACT,
    )
    _call(a, "read_context", room, id=entry["id"], agentId="frontend")
    changed = {
        **CONTRACT,
        "endpoints": [
            {
                "method": "GET",
                "path": "/orders",
                "response": {"id": "string", "currency": "EUR"},
                "auth_required": True,
                "description": "list",
            }
        ],
    }
    _call(a, "update_context", room, id=entry["id"], author="backend", payload=changed)
    _call(a, "set_shared_var", room, key="port", value="3000", agentId="backend")
    _call(a, "send_message", room, to="frontend", body="contract is up", **{"from": "backend"})
    _call(a, "room_broadcast", room, agentId="qa", text="tests at noon")
    _call(a, "lease_claim", room, agentId="qa", path="docs/*.md", mode="shared")
    _call(a, "lease_release", room, agentId="qa", path="docs/*.md")
    _call(
        a,
        "submit_task",
        room,
        taskId=task["id"],
        agentId="backend",
        evidence=[{"kind": "test", "text": "ok"}],
    )
    _call(a, "verify_task", room, taskId=task["id"], agentId="qa", verdict="reject", note="more")
    _call(
        a,
        "request_review",
        room,
        targetType="task",
        targetId=task["id"],
        requestedBy="backend",
        reviewer="qa",
    )
    _call(a, "handoff_task", room, taskId=task["id"], to="frontend", **{"from": "backend"})
    _call(a, "delete_task", room, taskId=other["id"], agentId="backend")
    _call(
        a,
        "post_event",
        room,
        type="deploy_started",
        to="all",
        payload={"env": "staging"},
        **{"from": "ops"},
    )
    _call(a, "leave_room", room, agentId="qa")
    return room, a, {"task": task, "entry": entry}


def test_every_event_of_a_busy_room_reads_as_words(ann: Person) -> None:
    room, agent, _ = _busy_room(ann)
    events = _call(agent, "read_events", room, limit=100, order="asc")
    types = {e["type"] for e in events}
    assert len(types) >= 18, types
    for event in events:
        words = event_words(event, {})
        assert words.text and "{" not in words.text and "[" not in words.text, event
        if event["type"] in WORDS:
            assert not words.text.startswith("posted "), event
    added = next(e for e in events if e["type"] == "task_added")
    assert event_words(added, {}).text == "added task “Orders API”"
    moved = next(e for e in events if e["type"] == "task_updated")
    assert "“Orders API”" in event_words(moved, {}).text
    custom = next(e for e in events if e["type"] == "deploy_started")
    assert event_words(custom, {}).text == "posted deploy started — env: staging"
    page = html.unescape(ann.client.get(f"/rooms/{room.room_id}/").content.decode())
    assert '{"' not in page.split("<main", 1)[1]


def test_the_feed_names_the_changed_contract_field(ann: Person) -> None:
    room, _, objects = _busy_room(ann)
    page = html.unescape(
        ann.client.get(f"/rooms/{room.room_id}/context/{objects['entry']['id']}").content.decode()
    )
    assert 'GET /orders: response.currency: "USD" -> "EUR"' in page


def test_each_refresh_brings_the_counter_and_what_each_agent_does(ann: Person) -> None:
    room, agent, _ = _busy_room(ann)
    live = ann.client.get(f"/rooms/{room.room_id}/live").content.decode()
    count = _call(agent, "get_room_info", room)["eventCount"]
    assert re.search(
        rf'<span id="event-count" class="count" hx-swap-oob="outerHTML">{count}<', live
    )
    agents = html.unescape(live.split('id="agents"', 1)[1].split('id="files"', 1)[0])
    backend = agents.split("<strong>backend</strong>", 1)[1].split('<li class="agent">', 1)[0]
    assert "working on" in backend and "Orders API" in backend
    assert "last: deleted “Spare”" in backend
    assert "src/<wbr>orders/<wbr>**" in backend  # a path breaks only after a slash
    _call(agent, "add_task", room, title="One more", description="")
    again = ann.client.get(f"/rooms/{room.room_id}/live").content.decode()
    assert f'hx-swap-oob="outerHTML">{count + 1}<' in again
    assert 'datetime="' in again  # times carry their absolute value, rendered relative by JS


def test_the_log_pages_back_and_filters_by_agent_and_type(ann: Person, bob: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("paging"), actor="t")
    agent = callers.team_caller(ann.team.slug)
    for i in range(120):
        _call(
            agent,
            "post_event",
            room,
            type="tick" if i % 2 else "tock",
            to="all",
            payload={"n": i},
            **{"from": "a" if i % 3 else "b"},
        )
    seen: list[int] = []
    path = f"/rooms/{room.room_id}/events"
    while path:
        page = ann.client.get(path).content.decode()
        seen += [int(n) for n in re.findall(r"n: (\d+)</p>", page)]
        older = re.search(r'href="(\?[^"]*before=[^"]+)" rel="next"', page)
        path = f"/rooms/{room.room_id}/events{html.unescape(older.group(1))}" if older else ""
    assert seen == list(range(119, -1, -1))  # every event once, newest first

    filtered = ann.client.get(f"/rooms/{room.room_id}/events?agent=b&type=tock").content.decode()
    shown = [int(n) for n in re.findall(r"n: (\d+)</p>", filtered)]
    assert shown == [i for i in range(119, -1, -1) if i % 2 == 0 and i % 3 == 0]
    assert ann.client.get(f"/rooms/{room.room_id}/events?before=odd-id").status_code == 200
    assert bob.client.get(f"/rooms/{room.room_id}/events").status_code == 404


def test_search_finds_tasks_and_context(ann: Person) -> None:
    room, _, objects = _busy_room(ann)
    page = html.unescape(ann.client.get(f"/rooms/{room.room_id}/events?q=orders").content.decode())
    assert "result" in page and f"/tasks/{objects['task']['id']}" in page
    assert f"/context/{objects['entry']['id']}" in page


def test_odd_cursors_and_the_task_history_from_its_first_event(ann: Person) -> None:
    room, _, objects = _busy_room(ann)
    for before in ("0-0", "1-0", "99999999999999-0", "x" * 70):
        assert ann.client.get(f"/rooms/{room.room_id}/events?before={before}").status_code == 200
    page = html.unescape(
        ann.client.get(f"/rooms/{room.room_id}/tasks/{objects['task']['id']}").content.decode()
    )
    history = page.split('id="h-history"', 1)[1]
    assert "added task “Orders API”" in history
    assert "leased src/<wbr>orders/<wbr>** (exclusive)" in history


def test_a_contract_change_inside_a_list_is_named_to_the_field() -> None:
    from rooms.diff import FIELD_LINES_MOST, field_changes

    old = {"items": [{"name": "a"}], "total": 1}
    new = {"items": [{"name": "b"}, {"name": "c"}], "total": 1.0}
    assert field_changes(old, new) == [
        'items[0].name: "a" -> "b"',
        'items[1] added: {"name": "c"}',
        "total: 1 -> 1.0",
    ]
    many = field_changes({str(i): 1 for i in range(100)}, {str(i): 2 for i in range(100)})
    assert len(many) == FIELD_LINES_MOST + 1 and many[-1] == "and 60 more changed fields"


def test_a_log_of_exactly_two_pages_offers_no_third(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("twopages"), actor="t")
    agent = callers.team_caller(ann.team.slug)
    for i in range(100):
        _call(agent, "post_event", room, type="tick", to="all", payload={"n": i}, **{"from": "a"})
    first = ann.client.get(f"/rooms/{room.room_id}/events").content.decode()
    older = re.search(r'href="\?([^"]*before=[^"]+)" rel="next"', first)
    assert older is not None
    second = ann.client.get(f"/rooms/{room.room_id}/events?{html.unescape(older.group(1))}")
    text = second.content.decode()
    assert len(re.findall(r"n: (\d+)</p>", text)) == 50
    assert 'rel="next"' not in text and "The start of the log." in text
