"""Issue 31's smaller page fixes: the landing page on a fresh local run says where the demo
team is, a task's status pill, /favicon.ico, the audit's people, a used sign-in link, the
events page's filters as choices, lease paths that break at a slash, and the activity
charts in each live refresh."""

from __future__ import annotations

import asyncio
import html
import re
from typing import Any

import httpx
import pytest
from django.test import Client

from calls.runner import tool_run
from config.asgi import application
from dashboard.views.rooms import filter_options
from rooms.eventwords import WORDS as EVENT_TYPES
from rooms.store import engine as engine_store
from tenants import firstrun, services
from tenants.models import Membership, Room
from tests import callers
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person, person
from tests.dashboard.test_onboarding import LOCAL, first_run, sign_up

pytestmark = pytest.mark.store

NOTICE = "This is a fresh local run."


def _call(room: Room, tool: str, **args: Any) -> Any:
    caller = callers.team_caller(room.team.slug)
    return engine_store.run_sync(tool_run, caller, tool, {"roomId": room.room_id, **args})


def test_on_a_fresh_local_run_landing_and_sign_up_say_where_the_demo_team_is() -> None:
    first = first_run()
    here = Client(**LOCAL)
    for path in ("/", "/signup"):
        page = html.unescape(here.get(path).content.decode())
        assert NOTICE in page, path
        assert "an empty team of its own" in page and "manage.py signin_link" in page
        assert first.claim_path not in page  # the token stays the console's
    # What the page says is what happens: an account made here gets a team of its own...
    made = sign_up(here, "own@example.com")
    assert made["Location"] == "/rooms"
    assert Membership.objects.get(user__username="own@example.com").team != first.team
    # ...and the banner's link still claims the demo team, after which nobody is told of it.
    claimer = Client(**LOCAL)
    claimed = sign_up(claimer, "me@example.com", first.claim_path, claim_demo="on")
    assert claimed["Location"] == f"/rooms/{first.room_id}/"
    assert NOTICE not in Client(**LOCAL).get("/").content.decode()
    assert NOTICE not in Client(**LOCAL).get("/signup").content.decode()


def test_the_demo_notice_is_for_this_machine_only(settings: Any) -> None:
    first_run()
    assert NOTICE not in Client().get("/").content.decode()  # testserver: not a loopback name
    stranger = Client(REMOTE_ADDR="203.0.113.9", HTTP_HOST="127.0.0.1:8000")
    assert NOTICE not in stranger.get("/signup").content.decode()
    settings.SIGNUP = "invite"  # nobody is to sign up: no demo team to speak of
    assert NOTICE not in Client(**LOCAL).get("/").content.decode()


def test_a_tasks_status_pill_is_its_status_in_words_outlined_whole(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("pill"), actor="t")
    task = _call(room, "add_task", title="Orders API")
    _call(room, "claim_task", taskId=task["id"], agentId="backend")
    page = ann.client.get(f"/rooms/{room.room_id}/tasks/{task['id']}").content.decode()
    assert '<span class="tag status-in_progress">in progress</span>' in page
    # A card's coloured left edge is for cards: on a round pill it drew a "(".
    css_text = asyncio.run(_asgi_get("/static/app.css")).text
    assert not re.search(r"(^|[\s}])\.status-in_progress\s*\{[^}]*border-left", css_text)
    assert re.search(r"\.tag\.status-in_progress\s*\{\s*border-color", css_text)


async def _asgi_get(path: str, *, follow: bool = False) -> httpx.Response:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application), base_url="http://t"
    ) as client:
        response = await client.get(path, follow_redirects=follow)
    await engine_store.close_client()
    return response


def test_favicon_ico_is_the_sites_icon() -> None:
    moved = Client().get("/favicon.ico")
    assert moved.status_code == 301 and moved["Location"] == "/static/favicon.svg"
    served = asyncio.run(_asgi_get("/favicon.ico", follow=True))
    assert served.status_code == 200
    assert served.headers["content-type"].startswith("image/svg+xml") and "<svg" in served.text


def test_the_audit_names_the_person_behind_each_act(ann: Person) -> None:
    ann.client.post("/keys", {"name": "agents"})
    bob = person("bob@example.com")
    services.membership_add(
        team=ann.team, user=bob.user, role=Membership.Role.ADMIN, actor=f"user:{ann.user.pk}"
    )
    page = ann.client.get("/audit").content.decode()
    rows = re.findall(r"<tr><td>[^<]*</td><td>(.*?)</td>", page)
    assert f'<span title="user:{ann.user.pk}">ann@example.com</span>' in rows
    assert all(f"<code>user:{ann.user.pk}</code>" != row for row in rows)
    # An account deleted since keeps its id: the row still says who, as well as it can.
    gone = person("gone@example.com")
    services.membership_add(
        team=ann.team, user=gone.user, role=Membership.Role.MEMBER, actor=f"user:{gone.user.pk}"
    )
    gone_id = gone.user.pk
    gone.user.delete()
    page = ann.client.get("/audit").content.decode()
    assert f"<code>user:{gone_id}</code>" in page and "gone@example.com" not in page


def test_a_used_sign_in_link_is_a_page_saying_how_to_get_another() -> None:
    first = firstrun.first_run_prepare()
    assert Client().get(first.sign_in_path).status_code == 302
    used = Client().get(first.sign_in_path)
    assert used.status_code == 400 and used["Content-Type"].startswith("text/html")
    page = html.unescape(used.content.decode())
    assert "/static/app.css" in page and "<h1>This sign-in link no longer works</h1>" in page
    assert "used already or has expired" in page
    assert ".venv/bin/python manage.py signin_link" in page and 'href="/login"' in page
    assert used["Cache-Control"].startswith("max-age=0")  # never cached
    forged = Client().get("/signin/zzzz/not-a-token")
    assert forged.status_code == 400 and "signin_link" in forged.content.decode()


def _options(page: str, select_id: str) -> list[tuple[str, bool]]:
    found = re.search(rf'<select id="{select_id}" name="[a-z]+">(.*?)</select>', page, re.S)
    assert found, select_id
    return [
        (html.unescape(value), bool(selected))
        for value, selected in re.findall(r'<option value="([^"]*)"( selected)?>', found.group(1))
    ]


def test_the_events_filters_choose_among_the_rooms_agents_and_event_types(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("filters"), actor="t")
    for agent in ("frontend", "backend"):
        _call(room, "heartbeat", agentId=agent)
    _call(room, "add_task", title="By backend", agentId="backend")
    _call(room, "add_task", title="By frontend", agentId="frontend")
    page = ann.client.get(f"/rooms/{room.room_id}/events").content.decode()
    # Nothing chosen: the first option, "any", stands.
    assert _options(page, "f-agent") == [("", False), ("backend", False), ("frontend", False)]
    types = _options(page, "f-type")
    assert types == [("", False)] + [(t, False) for t in sorted(EVENT_TYPES)]
    assert '<option value="task_added">task added</option>' in page
    # A choice filters, and is shown chosen.
    chosen = ann.client.get(f"/rooms/{room.room_id}/events?agent=backend&type=task_added")
    text = html.unescape(chosen.content.decode())
    assert ("backend", True) in _options(text, "f-agent")
    assert ("task_added", True) in _options(text, "f-type")
    assert "By backend" in text and "By frontend" not in text
    # Any value a URL carries still works, offered as chosen (and escaped).
    odd = '<b>"ghost"'
    linked = ann.client.get(f"/rooms/{room.room_id}/events", {"agent": odd, "type": "custom"})
    body = linked.content.decode()
    assert linked.status_code == 200 and "<b>" not in body.split("<main", 1)[1]
    assert _options(body, "f-agent")[1] == (odd, True)
    assert _options(body, "f-type")[1] == ("custom", True)
    assert "No events match these filters" in body


def test_a_filters_choices_are_bounded(monkeypatch: Any) -> None:
    from dashboard.views import rooms

    monkeypatch.setattr(rooms, "FILTER_OPTIONS_MAX", 3)
    known = [f"agent-{n:03}" for n in range(500)]
    assert filter_options(known, None) == known[:3]
    assert filter_options(known, "agent-001") == known[:3]
    assert filter_options(known, "agent-400") == ["agent-400", *known[:3]]


def test_a_lease_path_breaks_only_after_its_slashes_and_stays_escaped(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("paths"), actor="t")
    _call(room, "heartbeat", agentId="backend")
    _call(room, "lease_claim", agentId="backend", path="services/payments/<i>x</i>.py")
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    shown = '<code class="path">services/<wbr>payments/<wbr>&lt;i&gt;x&lt;/<wbr>i&gt;.py</code>'
    assert page.count(shown) == 2  # the agent's line and the leases table
    assert "<i>x</i>" not in page


def test_each_live_refresh_carries_the_activity_charts(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("chartlive"), actor="t")
    _call(room, "add_task", title="one")
    live = ann.client.get(f"/rooms/{room.room_id}/live").content.decode()
    charts = live.split('<div id="activity-charts" hx-swap-oob="innerHTML">', 1)
    assert len(charts) == 2 and charts[1].count('<svg class="bars"') == 2
    before = _figures(charts[1])
    for n in range(3):
        _call(room, "add_task", title=f"more {n}")
    after = _figures(ann.client.get(f"/rooms/{room.room_id}/live").content.decode())
    assert sum(after) == sum(before) + 3
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    assert '<div class="charts" id="activity-charts">' in page  # what the refresh replaces


def _figures(fragment: str) -> list[int]:
    """The per-hour chart's counted events, from its table."""
    hours = fragment.split('id="chart-hours-t"', 1)[1]
    return [int(n) for n in re.findall(r"<td>(\d+)</td></tr>", hours)]
