"""Issue 26, point 4: the room page shows its activity and its plan as pictures (SVG the
server draws, with text beside them), each task in progress says for how long,
dependencies are named by title, and search hits read as words."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest

from dashboard import plan_graph
from rooms import clock
from tests import callers
from tests.clock import clock_at
from tests.dashboard.conftest import Person
from tests.dashboard.test_live_room import _busy_room, _call
from tests.dashboard.test_pages import _filled_room

pytestmark = pytest.mark.store

RAW_EVENT_ID = re.compile(r"\b\d{13}-\d+\b")


def test_the_room_page_charts_events_per_day_and_per_hour(ann: Person) -> None:
    room = _filled_room(ann)
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    assert page.count('<svg class="bars"') == 2
    assert "Events per day, last 14 days (UTC)" in page
    assert "Events per hour, last 24 hours (UTC)" in page
    today = clock.now().strftime("%Y-%m-%d")
    figures = re.search(rf"<td>{today}</td><td>(\d+)</td>", page)
    assert figures is not None and int(figures.group(1)) >= 8  # every event of the fill
    assert re.search(r"<desc id=\"chart-days-d\">\d+ events from ", page)


def test_the_plan_is_a_graph_of_linked_tasks_with_a_text_list(ann: Person) -> None:
    room = _filled_room(ann)
    page = html.unescape(ann.client.get(f"/rooms/{room.room_id}/").content.decode())
    graph = page.split('<svg class="plan-graph"', 1)[1].split("</svg>", 1)[0]
    assert "<title>auth API (done)</title>" in graph
    assert "<title>login UI (pending)</title>" in graph
    assert graph.count('<path class="edge"') == 1  # login UI waits for auth API (done)
    assert len(re.findall(r'<a class="node node-\w+" href="/rooms/[^"]+/tasks/t_', graph)) == 2
    assert "The dependencies as a list" in page and "Step 2:" in page
    live = ann.client.get(f"/rooms/{room.room_id}/live").content.decode()
    assert 'id="graph" hx-swap-oob="innerHTML"' in live


def test_a_plan_past_the_graphs_bounds_says_so_instead_of_drawing(
    ann: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = _filled_room(ann)
    monkeypatch.setattr(plan_graph, "GRAPH_TASKS_MAX", 1)
    page = html.unescape(ann.client.get(f"/rooms/{room.room_id}/").content.decode())
    assert '<svg class="plan-graph"' not in page
    assert "more than the graph draws (1 tasks" in page


def test_a_task_in_progress_says_for_how_long(ann: Person) -> None:
    room = _filled_room(ann)
    agent = callers.team_caller(ann.team.slug)
    task = _call(agent, "add_task", room, title="payments")
    _call(agent, "claim_task", room, taskId=task["id"], agentId="backend")
    with clock_at(clock.now() + timedelta(hours=3, minutes=12, seconds=20)):
        board = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
        detail = ann.client.get(f"/rooms/{room.room_id}/tasks/{task['id']}").content.decode()
    for page in (board, detail):
        assert re.search(r'in progress for <span class="age" title="[^"]+">3 h 12 min</span>', page)


def test_dependencies_and_history_read_by_title(ann: Person) -> None:
    room = _filled_room(ann)
    board = html.unescape(ann.client.get(f"/rooms/{room.room_id}/").content.decode())
    api_id = re.search(r"/tasks/(t_\w+)\">auth API</a>", board).group(1)  # type: ignore[union-attr]
    login_id = re.search(r"/tasks/(t_\w+)\">login UI</a>", board).group(1)  # type: ignore[union-attr]
    detail = html.unescape(
        ann.client.get(f"/rooms/{room.room_id}/tasks/{login_id}").content.decode()
    )
    assert f'after: <a href="/rooms/{room.room_id}/tasks/{api_id}">auth API</a>' in detail
    history = html.unescape(
        ann.client.get(f"/rooms/{room.room_id}/tasks/{api_id}").content.decode()
    ).split('id="h-history"', 1)[1]
    assert "<strong>backend</strong> updated “auth API”: pending → done" in history
    assert '<span class="tag">task updated</span>' in history  # the type in words too
    assert ">task_updated<" not in history


def test_search_hits_read_as_words_not_ids(ann: Person) -> None:
    room, _, objects = _busy_room(ann)
    page = html.unescape(ann.client.get(f"/rooms/{room.room_id}/events?q=orders").content.decode())
    hits = page.split('id="h-hits"', 1)[1].split("</section>", 1)[0]
    assert f'/tasks/{objects["task"]["id"]}">“Orders API”</a>' in hits
    assert f'/context/{objects["entry"]["id"]}">“Orders contract”</a>' in hits
    assert '<span class="tag">event</span>\n    <strong>' in hits  # who, then what they did
    assert not RAW_EVENT_ID.search(hits.replace("before=", "").split("href=")[0])
    shown = re.sub(r'href="[^"]*"|datetime="[^"]*"', "", hits)
    assert not RAW_EVENT_ID.search(shown), shown
