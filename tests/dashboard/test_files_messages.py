"""The room page's leases and messages: live leases (path, holder, task, expiry), each
message with its recipients' states, and who is behind on a contract — for the room's own
team only."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from calls.runner import tool_run
from rooms.store import engine as engine_store
from tenants import services
from tenants.access import room_access
from tenants.models import Room
from tests import callers
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store


def _busy_room(owner: Person) -> tuple[Room, dict[str, Any]]:
    room = services.room_create(team=owner.team, room_id=new_room_id("files"), actor="test")
    caller = callers.team_caller(owner.team.slug)
    made: dict[str, Any] = {}

    async def fill() -> None:
        ref = await room_access(caller, room.room_id, write=True)

        async def call(tool: str, **args: Any) -> Any:
            return await tool_run(caller, tool, {"roomId": ref.room_id, **args})

        task = await call("add_task", title="users endpoint")
        made["claimed"] = await call(
            "claim_task", taskId=task["id"], agentId="alice", paths=["src/api/**"]
        )
        made["shared"] = await call("lease_claim", agentId="carol", path="docs/*.md", mode="shared")
        for agent in ("alice", "bob", "carol"):
            await call("heartbeat", agentId=agent)
        made["message"] = await call(
            "send_message",
            **{"from": "bob", "to": "*", "subject": "schema", "body": "users table changed"},
            ackRequired=True,
        )
        await call("inbox", agentId="alice")
        await call("ack_message", agentId="alice", messageId=made["message"]["messageId"])
        entry = await call(
            "write_context",
            type="note",
            summary="naming rules",
            consuming_agents=[],
            payload={"text": "snake_case"},
            author="bob",
        )
        await call("read_context", id=entry["id"], agentId="carol")
        await call("update_context", id=entry["id"], author="bob", summary="naming rules v2")
        await call("read_context", id=entry["id"], agentId="alice")

    engine_store.run_sync(fill)
    return room, made


def _panel(page: str) -> str:
    found = re.search(r'<div id="files"[^>]*>(.*?)</section>', page, re.S)
    assert found, "the leases and messages panel"
    return html.unescape(re.sub(r"\s+", " ", found.group(1)))


def test_the_room_page_shows_live_leases_and_each_recipients_state(ann: Person) -> None:
    room, made = _busy_room(ann)

    panel = _panel(ann.client.get(f"/rooms/{room.room_id}/").content.decode())

    task_lease = made["claimed"]["leases"][0]
    assert re.search(
        r'<code class="path">src/<wbr>api/<wbr>\*\*</code></td><td><strong>alice</strong></td>'
        r"<td>users endpoint</td>"
        rf'<td><time datetime="{re.escape(task_lease["expiresAt"])}">',
        panel,
    ), panel
    assert '<code class="path">docs/<wbr>*.md</code> <span class="tag">shared</span>' in panel
    assert "<strong>carol</strong></td><td>—</td>" in panel
    assert "<strong>bob</strong> → *" in panel and "ack asked" in panel
    assert "<strong>schema</strong>: users table changed" in panel
    assert 'class="delivery state-acked"' in panel and "alice: acked" in panel
    assert "carol: stored" in panel
    live = ann.client.get(f"/rooms/{room.room_id}/live").content.decode()
    assert 'id="files" hx-swap-oob="innerHTML"' in live and "alice: acked" in live


def test_the_context_panel_says_who_is_behind(ann: Person) -> None:
    room, _ = _busy_room(ann)
    page = html.unescape(ann.client.get(f"/rooms/{room.room_id}/").content.decode())
    readers = re.search(r'<p class="meta readers">(.*?)</p>', page, re.S)
    assert readers, "the readers line"
    assert "read by carol (v1.0), alice (v1.1)" in readers.group(1)
    assert '<span class="behind">behind: carol</span>' in readers.group(1)


def test_the_message_event_reads_as_words(ann: Person) -> None:
    room, _ = _busy_room(ann)
    page = html.unescape(ann.client.get(f"/rooms/{room.room_id}/").content.decode())
    assert "<strong>bob</strong> sent a message “schema”: “users table changed”" in page
    assert '<p class="meta">to alice, carol</p>' in page
    assert "<strong>carol</strong> leased docs/<wbr>*.md (shared)" in page
    assert "{&quot;" not in page and '{"' not in page.split("<main", 1)[1]  # no raw JSON


def test_another_team_sees_none_of_it(ann: Person, bob: Person) -> None:
    room, _ = _busy_room(ann)
    for path in (f"/rooms/{room.room_id}/", f"/rooms/{room.room_id}/live"):
        refused = bob.client.get(path)
        assert refused.status_code == 404
        assert b"users table changed" not in refused.content and b"src/api" not in refused.content
