"""A person acts in a room from its page, in a real browser (issue 14, points 2 and 10):
every action, and what the agents then see through the official MCP client — the person's
name on each event, the task moved, the message delivered."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import own_team_choose
from tests.browser.test_dashboard_flow import in_thread, shot
from tests.e2e.conftest import RunningServer
from tests.e2e.mcp_clients import call, mcp_client

pytestmark = pytest.mark.e2e

EMAIL = "actor@example.com"
ME = f"person:{EMAIL}"
ROOM = "acting-room"


async def agents_set_up(url: str, secret: str, room: str = ROOM) -> dict[str, Any]:
    """backend and frontend join; a task in progress submitted for verification, another
    handed to frontend, a change request from frontend, a review asked of qa."""
    async with mcp_client(url, secret) as agent:
        for name in ("backend", "frontend", "qa"):
            await call(agent, "heartbeat", roomId=room, agentId=name)
        shipped = await call(agent, "add_task", roomId=room, title="Ship the parser")
        await call(agent, "claim_task", roomId=room, taskId=shipped["id"], agentId="backend")
        await call(
            agent,
            "submit_task",
            roomId=room,
            taskId=shipped["id"],
            agentId="backend",
            evidence=[{"kind": "test", "text": "48 passed"}],
        )
        api = await call(agent, "add_task", roomId=room, title="Orders API")
        await call(agent, "claim_task", roomId=room, taskId=api["id"], agentId="backend")
        handoff = await call(
            agent,
            "handoff_task",
            roomId=room,
            taskId=api["id"],
            to="frontend",
            **{"from": "backend"},
        )
        change = await call(
            agent,
            "write_context",
            roomId=room,
            type="change_request",
            summary="Orders need a currency",
            consuming_agents=["backend"],
            author="frontend",
            payload={
                "requested_by": "frontend",
                "target_agent": "backend",
                "description": "Add currency to GET /orders",
                "urgency": "high",
            },
        )
        review = await call(
            agent,
            "request_review",
            roomId=room,
            targetType="task",
            targetId=api["id"],
            requestedBy="backend",
            reviewer="qa",
        )
        return {
            "shipped": shipped,
            "api": api,
            "handoff": handoff,
            "change": change,
            "review": review,
        }


async def agents_look(url: str, secret: str) -> dict[str, Any]:
    async with mcp_client(url, secret) as agent:
        return {
            "events": await call(agent, "read_events", roomId=ROOM, limit=100, order="asc"),
            "plan": await call(agent, "read_plan", roomId=ROOM),
            "inbox": await call(agent, "inbox", roomId=ROOM, agentId="backend"),
            "reviews": await call(agent, "list_reviews", roomId=ROOM),
            "change": await call(agent, "list_context", roomId=ROOM, type="change_request"),
        }


def said(page: Any) -> str:
    text: str = page.locator(".flash").inner_text()
    return text


def test_a_person_does_every_room_action_in_the_browser(
    page: Any, browser_server: RunningServer
) -> None:
    page.goto("/signup")
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill("a-long-and-good-passphrase")
    own_team_choose(page)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url("**/rooms")
    page.get_by_label("Room id (optional)").fill(ROOM)
    page.get_by_label("Name").fill("Acting room")
    page.get_by_role("button", name="Create room").click()
    page.wait_for_url(f"**/rooms/{ROOM}/")
    page.goto("/keys")
    page.get_by_label("Name").fill("agents")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-secret").inner_text()
    made = in_thread(agents_set_up, browser_server.mcp_url, secret)

    page.goto(f"/rooms/{ROOM}/")
    waiting = page.locator("#waiting")
    assert "Ship the parser" in waiting.inner_text() and "Orders need a currency" in (
        waiting.inner_text()
    )
    shot(page, "20-room-waiting")

    # A message to one agent, and a broadcast.
    page.get_by_label("To (an agent").fill("backend")
    page.get_by_label("Subject (optional)").fill("Rebase")
    page.get_by_label("Message", exact=True).fill("Please rebase on main")
    page.get_by_role("button", name="Send message").click()
    assert "Message sent to backend" in said(page)
    page.get_by_label("To everyone in the room").fill("Freeze at five")
    page.get_by_role("button", name="Broadcast").click()
    assert "Broadcast posted" in said(page)

    # A new task, then open it from its card.
    page.get_by_label("Title").fill("Write the changelog")
    page.get_by_label("Owner (optional)").fill("frontend")
    page.get_by_role("button", name="Add task").click()
    assert "added for frontend" in said(page)
    page.locator("#board").get_by_role("link", name="Write the changelog").click()
    page.wait_for_url(re.compile(r".*/tasks/t_.*"))
    assert "frontend" in page.locator("h1 + p").inner_text()

    # Reassign, block, unblock, reprioritise, note, close.
    page.get_by_label("Owner (empty: unowned)").fill("backend")
    page.get_by_role("button", name="Reassign").click()
    assert "is now with backend" in said(page)
    page.get_by_label("Note (optional)").fill("waiting for the release number")
    page.get_by_role("button", name="Mark blocked").click()
    assert "is blocked" in said(page)
    page.get_by_role("button", name="Unblock").click()
    assert "is pending" in said(page) or "is in progress" in said(page)
    page.get_by_label("Priority (lower first)").fill("1")
    page.get_by_role("button", name="Set priority").click()
    assert "has priority 1" in said(page)
    page.get_by_label("Add a note").fill("release is 2.4")
    page.get_by_role("button", name="Add note").click()
    assert "release is 2.4" in page.locator("#h-notes + ol").inner_text()
    page.get_by_role("button", name="Close (done)").click()
    assert "is done" in said(page)
    shot(page, "21-task-page")

    # Verify the submission (reject it, with a reason), from the waiting panel's task page.
    page.goto(f"/rooms/{ROOM}/tasks/{made['shipped']['id']}")
    assert "48 passed" in page.locator("#h-evidence + p + ul").inner_text()
    page.get_by_label("Verdict note (optional)").fill("add a test for nested blocks")
    page.get_by_role("button", name="Reject the submission").click()
    assert "rejected" in said(page)

    # Answer the change request.
    page.goto(f"/rooms/{ROOM}/context/{made['change']['id']}")
    page.get_by_label("Answer (as").fill("Adding it today")
    page.get_by_role("button", name="Accept the change").click()
    assert "Change request accepted" in said(page)

    # Acting for an agent: refused until the owner allows it on the Team page.
    page.goto(f"/rooms/{ROOM}/")
    assert page.get_by_role("button", name=re.compile("Accept the handoff")).count() == 0
    page.goto("/team")
    page.get_by_role("button", name="Let people act for agents").click()
    page.goto(f"/rooms/{ROOM}/")
    page.get_by_role("button", name=re.compile("Accept the handoff of Orders API")).click()
    assert "Handoff accepted for frontend" in said(page)
    assert f"accepted by {ME} on frontend's behalf" in page.locator("#feed").inner_text()
    page.get_by_role("button", name=re.compile(f"Approve review {made['review']['id']}")).click()
    assert "Review approved" in said(page)
    shot(page, "22-room-after-actions")

    seen = in_thread(agents_look, browser_server.mcp_url, secret)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in seen["events"]:
        by_type.setdefault(event["type"], []).append(event)
    assert [e["from"] for e in by_type["broadcast"]] == [ME]
    assert [m["from"] for m in seen["inbox"]["messages"]] == [ME]
    assert all(e["from"] == ME for e in by_type["task_rejected"])
    assert any(e["from"] == ME for e in by_type["task_updated"])
    assert ME in str(by_type["handoff_accepted"][0]["payload"])
    tasks = {t["title"]: t for t in seen["plan"]["tasks"]}
    assert tasks["Write the changelog"]["status"] == "done"
    assert tasks["Write the changelog"]["priority"] == 1
    assert tasks["Orders API"]["owner"] == "frontend"
    assert tasks["Ship the parser"]["status"] == "in_progress"
    statuses = {r["id"]: r["status"] for r in seen["reviews"]}
    assert statuses[made["review"]["id"]] == "approved"  # (the submission's own: rejected)
    assert seen["change"][0]["payload"]["answered_by"] == ME

    # The audit log names each action.
    page.goto("/audit")
    audit = page.locator("main").inner_text()
    for action in ("room.message", "room.task-assign", "room.handoff-accept", "room.review"):
        assert action in audit, action
