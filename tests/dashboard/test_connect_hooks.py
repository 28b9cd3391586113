"""The Connect page's Hooks section: install commands and client settings for
hooks/roomservice-guard, with the room's URL, room id and key filled in."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.conf import settings

from tenants import services
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store


def snippet(page: str, element_id: str) -> str:
    found = re.search(rf'<pre id="{element_id}">(.*?)</pre>', page, re.S)
    assert found, element_id
    return html.unescape(found.group(1))


def test_the_connect_page_shows_the_hooks_with_the_room_url_and_key(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("hooks"), actor="test")
    page = ann.client.post(f"/rooms/{room.room_id}/connect", follow=True).content.decode()
    secret = re.search(r"rs_live_[A-Za-z0-9_-]+", page).group(0)  # type: ignore[union-attr]

    install = snippet(page, "s-hook-git")
    assert f"ROOMSERVICE_URL=http://testserver ROOMSERVICE_KEY={secret} " in install
    assert f"ROOM={room.room_id} AGENT=<AGENT_NAME>" in install
    assert install.rstrip().endswith("sh hooks/roomservice-guard install")

    claude = json.loads(snippet(page, "s-hook-claude"))
    assert claude["env"] == {
        "ROOMSERVICE_URL": "http://testserver",
        "ROOMSERVICE_KEY": secret,
        "ROOM": room.room_id,
        "AGENT": "<AGENT_NAME>",
    }
    commands = {
        event: entries[0]["hooks"][0]["command"] for event, entries in claude["hooks"].items()
    }
    assert commands == {
        "PreToolUse": 'sh "$CLAUDE_PROJECT_DIR"/hooks/roomservice-guard claude-code',
        "SessionStart": 'sh "$CLAUDE_PROJECT_DIR"/hooks/roomservice-guard unread',
        "Stop": 'sh "$CLAUDE_PROJECT_DIR"/hooks/roomservice-guard claude-stop',
    }
    cursor = json.loads(snippet(page, "s-hook-cursor"))
    assert cursor["version"] == 1
    assert cursor["hooks"]["stop"][0]["command"].endswith("cursor-stop")
    codex = json.loads(snippet(page, "s-hook-codex"))
    assert codex["hooks"]["Stop"][0]["hooks"][0]["command"].endswith("codex-stop")
    assert 'data-copy="#s-hook-claude"' in page


def test_the_hooks_use_a_placeholder_until_a_key_is_made(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("hooks"), actor="test")
    page = ann.client.get(f"/rooms/{room.room_id}/connect").content.decode()
    assert json.loads(snippet(page, "s-hook-claude"))["env"]["ROOMSERVICE_KEY"] == "<YOUR_KEY>"
    assert "ROOMSERVICE_KEY=<YOUR_KEY> " in snippet(page, "s-hook-git")


def test_the_page_fetches_the_hook_from_the_server_it_names(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("hooks"), actor="test")
    page = ann.client.get(f"/rooms/{room.room_id}/connect").content.decode()
    fetch = snippet(page, "s-hook-git").splitlines()[0]
    assert fetch == (
        "mkdir -p hooks && curl -fsS -o hooks/roomservice-guard "
        "http://testserver/hooks/roomservice-guard"
    )

    served = ann.client.get("/hooks/roomservice-guard")

    assert served.status_code == 200 and served["Content-Type"].startswith("text/x-shellscript")
    assert served.content == (settings.BASE_DIR / "hooks" / "roomservice-guard").read_bytes()
    assert b"rs_live_" not in served.content  # no secret in it


def test_the_connect_page_shows_claude_codes_http_hooks_with_the_room_url_and_no_key(
    ann: Person,
) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("hooks"), actor="test")
    page = ann.client.post(f"/rooms/{room.room_id}/connect", follow=True).content.decode()
    secret = re.search(r"rs_live_[A-Za-z0-9_-]+", page).group(0)  # type: ignore[union-attr]
    shown = snippet(page, "s-hook-claude-http")
    url = f"http://testserver/api/v1/rooms/{room.room_id}/hooks/claude-code"

    assert secret not in shown and "rs_live_" not in shown  # the key comes from the environment
    hooks = json.loads(shown)["hooks"]
    assert set(hooks) == {"PreToolUse", "PostToolUse", "SessionStart", "Stop", "SessionEnd"}
    for event in ("PreToolUse", "PostToolUse", "Stop", "SessionEnd"):
        [entry] = hooks[event]
        [http] = entry["hooks"]
        assert http == {
            "type": "http",
            "url": url,
            "headers": {  # the agent's name written in (the setup fills it in), the key named
                "Authorization": "Bearer $ROOMSERVICE_KEY",
                "X-Roomservice-Agent": "<AGENT_NAME>",
            },
            "allowedEnvVars": ["ROOMSERVICE_KEY"],
            "timeout": 10,
        }, event
        assert entry.get("matcher") == (
            "Edit|Write|MultiEdit|NotebookEdit" if event.endswith("ToolUse") else None
        )
    # Claude Code runs only command hooks at SessionStart: curl posts the same JSON there.
    [start] = hooks["SessionStart"][0]["hooks"]
    assert start["type"] == "command" and start["timeout"] == 10
    assert f"--data-binary @- '{url}'" in start["command"]
    assert '"Authorization: Bearer $ROOMSERVICE_KEY"' in start["command"]
    assert "-H 'X-Roomservice-Agent: <AGENT_NAME>'" in start["command"]
    assert 'data-copy="#s-hook-claude-http"' in page
