"""Tool profiles on the pages (issue 25, point 1): a key or an invite is minted with a
default profile and shows it; what the pages print connects with ?tools=core (or the
invite's own default); a key minted without one stays every tool."""

from __future__ import annotations

import html
import re

import pytest

from rooms import profiles, registry
from tenants import services
from tenants.models import ApiKey
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store


def test_a_key_is_minted_with_a_tool_profile_and_the_list_shows_each_keys(ann: Person) -> None:
    form = ann.client.get("/keys").content.decode()
    assert 'name="tools_profile"' in form
    core = len(profiles.TOOLS["core"])
    assert f"core — {core} tools: the everyday workflow" in html.unescape(form)
    created = ann.client.post("/keys", {"name": "agent", "tools_profile": "core"})
    page = html.unescape(created.content.decode())
    assert ApiKey.objects.get(name="agent").tools_profile == "core"
    assert 'MCP endpoint for it: <code id="new-url">http://testserver/mcp?tools=core</code>' in page
    ann.client.post("/keys", {"name": "roomd agent", "tools_profile": "roomd"})
    ann.client.post("/keys", {"name": "plain"})
    assert ApiKey.objects.get(name="plain").tools_profile is None  # as every older key
    listing = ann.client.get("/keys").content.decode()
    rows = {
        name: profile
        for name, profile in re.findall(
            r"<td>([^<]+)</td><td><code>[^<]+</code></td>\s*<td>[^<]+</td><td>(\w+)</td>", listing
        )
    }
    assert rows == {"agent": "core", "roomd agent": "roomd", "plain": "full"}
    refused = ann.client.post("/keys", {"name": "x", "tools_profile": "most"})
    assert refused.status_code == 200 and not ApiKey.objects.filter(name="x").exists()


def test_an_invite_carries_its_profile_into_the_guests_setup(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("pinv"), actor="test")
    made = ann.client.post(
        f"/rooms/{room.room_id}/invites", {"label": "guest", "tools_profile": "roomd"}, follow=True
    )
    page = html.unescape(made.content.decode())
    assert room.invites.get().tools_profile == "roomd"
    assert 'roomservice "http://testserver/mcp?tools=roomd"' in page
    assert "tools: roomd by default" in page
    assert "<td>roomd</td>" in page
    plain = ann.client.post(f"/rooms/{room.room_id}/invites", {"label": "plain"}, follow=True)
    assert 'roomservice "http://testserver/mcp?tools=core"' in html.unescape(plain.content.decode())
    assert room.invites.get(label="plain").tools_profile is None


def test_the_connect_page_prints_core_urls_and_says_what_the_profiles_are(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("pcon"), actor="test")
    services.api_key_create(team=ann.team, name="old key")
    page = html.unescape(ann.client.get(f"/rooms/{room.room_id}/connect").content.decode())
    assert "MCP endpoint: <code>http://testserver/mcp?tools=core</code>" in page
    core = len(profiles.TOOLS["core"])
    assert f"the {core} tools of the everyday workflow" in page
    assert "?tools=roomd" in page and "?tools=full" in page
    roomd = len(profiles.TOOLS["roomd"])
    assert f"core: {core}, roomd: {roomd}, full: {len(registry.TOOLS)}" in page
    # The first prompt names only tools that core has.
    prompt = page.split('<pre id="s-prompt">', 1)[1].split("</pre>", 1)[0]
    named = {n for n in registry.TOOLS_ORDER if re.search(rf"\b{n}\b", prompt)}
    assert named and named <= set(profiles.TOOLS["core"]), named - set(profiles.TOOLS["core"])
    # The key minted from this page keeps every tool: the URL carries core.
    ann.client.post(f"/rooms/{room.room_id}/connect")
    assert ApiKey.objects.get(name=f"agents of {room.room_id}").tools_profile is None
