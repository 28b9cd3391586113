"""The Connect page's "Connect with OAuth" (docs/oauth.md): the URL to paste, and each
client's one-line how. The URL is exactly the resource the door's metadata names, no
?tools=: a client that compares the two whole (Codex) would refuse to sign in."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.test import Client

from tenants import services
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store

URL = "http://testserver/oauth/mcp"


def connect_page(who: Person) -> str:
    room = services.room_create(team=who.team, room_id=new_room_id("oauth"), actor="test")
    answer = who.client.get(f"/rooms/{room.room_id}/connect")
    assert answer.status_code == 200
    return answer.content.decode()


def shown(page: str, element: str, ident: str) -> str:
    found = re.search(rf'<{element} id="{ident}">(.*?)</{element}>', page, re.S)
    assert found, ident
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


def test_the_connect_page_shows_the_oauth_url_and_each_clients_how(ann: Person) -> None:
    page = connect_page(ann)

    assert shown(page, "code", "oauth-url") == URL
    assert "Add custom connector" in shown(page, "dd", "oauth-claude")
    chatgpt = shown(page, "dd", "oauth-chatgpt")
    assert "developer mode" in chatgpt and "OAuth" in chatgpt
    copilot = shown(page, "dd", "oauth-copilot")
    assert "Model Context Protocol" in copilot and "OAuth 2.0" in copilot
    assert "OAUTH_DYNAMIC_REGISTRATION=true (now off)" in copilot
    assert json.loads(shown(page, "pre", "oauth-vscode")) == {
        "servers": {"roomservice": {"type": "http", "url": URL}}
    }
    assert shown(page, "code", "oauth-claude-code") == (
        f"claude mcp add --transport http roomservice {URL}"
    )
    assert shown(page, "code", "oauth-codex") == f"codex mcp add roomservice --url {URL}"
    section = page[page.index('<section class="card" id="oauth">') :]
    assert "/mcp</code> in a session" in section and "codex mcp login roomservice" in section
    assert page.index('id="oauth"') < page.index('<details id="snippets">')


def test_the_copilot_line_says_when_registration_is_on(ann: Person, settings: Any) -> None:
    settings.OAUTH_DYNAMIC_REGISTRATION = True
    assert "(now on)" in shown(connect_page(ann), "dd", "oauth-copilot")


def test_the_url_shown_is_the_resource_the_metadata_names(ann: Person) -> None:
    page = connect_page(ann)

    metadata = Client().get("/.well-known/oauth-protected-resource/oauth/mcp")

    assert metadata.status_code == 200
    assert shown(page, "code", "oauth-url") == metadata.json()["resource"]
