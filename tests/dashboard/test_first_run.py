"""The first `make run` leads somewhere (issue 14, point 1): the banner names the dashboard,
the demo room and a one-time sign-in link into the team that owns the demo key; following
it, a newcomer lands on the demo room and sees what their agents do there."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from calls.runner import tool_run
from config.serve import _banner
from rooms.store import engine as engine_store
from tenants import firstrun, services
from tenants.auth import Bearer, caller_resolve_sync
from tenants.models import Membership, Room

pytestmark = pytest.mark.store


def test_the_banner_leads_to_the_demo_room_of_the_demo_keys_team(settings: Any) -> None:
    minted = services.demo_key_ensure()
    assert minted is not None
    first = firstrun.first_run_prepare()
    again = firstrun.first_run_prepare()
    assert again.room_id == first.room_id == firstrun.DEMO_ROOM  # made once
    assert Room.objects.get(room_id=first.room_id).team == minted.key.team
    assert Membership.objects.get(user__username=firstrun.OPERATOR_EMAIL).team == minted.key.team

    banner = _banner("127.0.0.1", 8000, minted.secret, first.room_id, first.sign_in_path)
    assert "http://127.0.0.1:8000/rooms/demo/" in banner
    assert f"http://127.0.0.1:8000{first.sign_in_path}" in banner
    assert 'roomId "demo"' in banner and minted.secret in banner
    assert 'roomservice "http://127.0.0.1:8000/mcp?tools=core"' in banner
    assert '"url": "http://127.0.0.1:8000/mcp?tools=core"' in banner

    # The newcomer's agent makes its first call with the printed key...
    agent = caller_resolve_sync_key(minted.secret)
    engine_store.run_sync(
        tool_run, agent, "heartbeat", {"roomId": first.room_id, "agentId": "claude"}
    )
    engine_store.run_sync(
        tool_run, agent, "add_task", {"roomId": first.room_id, "title": "the first task"}
    )
    # ...and following the link, the newcomer sees it on the room page.
    browser = Client()
    landed = browser.get(first.sign_in_path)
    assert landed.status_code == 302 and landed["Location"] == f"/rooms/{first.room_id}/"
    page = browser.get(landed["Location"]).content.decode()
    assert "the first task" in page and "claude" in page

    # The link works once.
    assert Client().get(first.sign_in_path).status_code == 400
    assert Client().get(again.sign_in_path).status_code == 400  # older links die with it


def test_a_forged_link_signs_nobody_in(settings: Any) -> None:
    first = firstrun.first_run_prepare()
    uid = first.sign_in_path.split("/")[2]
    assert Client().get(f"/signin/{uid}/not-a-token").status_code == 400
    assert Client().get("/signin/zzzz/also-not").status_code == 400
    settings.PRODUCTION = True  # links work there too (manage.py signin_link), forged ones not
    assert Client().get(f"/signin/{uid}/not-a-token").status_code == 400
    used = Client().get(first.sign_in_path)
    assert used.status_code == 302
    again = Client().get(first.sign_in_path)
    assert again.status_code == 400 and "manage.py signin_link" in again.content.decode()


def caller_resolve_sync_key(secret: str) -> Any:
    """The caller a request bearing `secret` is (the same resolution the doors make)."""
    caller = caller_resolve_sync(Bearer(secret))
    assert caller is not None
    return caller
