"""A person goes from sign-up to an agent working in a room, in a real browser; the page
follows the agent live, and revoking the key in the page stops the agent."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.browser.conftest import SCREENSHOTS, own_team_choose, page_waits_for
from tests.e2e.conftest import RunningServer
from tests.e2e.mcp_clients import call, mcp_client

pytestmark = pytest.mark.e2e


def in_thread(coro_fn: Any, *args: Any) -> Any:
    """Run an asyncio coroutine (the mcp client) beside Playwright's sync API."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro_fn(*args)).result(timeout=60)


async def agent_adds_task(url: str, secret: str, room_id: str) -> dict[str, Any]:
    async with mcp_client(url, secret) as agent:
        await agent.list_tools()
        await call(agent, "heartbeat", roomId=room_id, agentId="backend")
        return await call(
            agent, "add_task", roomId=room_id, title="Build the auth API", agentId="backend"
        )  # type: ignore[no-any-return]


async def agent_calls_again(url: str, secret: str, room_id: str) -> str:
    try:
        async with mcp_client(url, secret) as agent:
            await agent.call_tool("read_plan", {"roomId": room_id})
    except BaseException as exc:
        return type(exc).__name__
    return "succeeded"


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_sign_up_to_a_live_room_and_revoking_a_key(
    page: Any, browser_server: RunningServer
) -> None:
    page.goto("/")
    shot(page, "01-landing")
    page.get_by_role("link", name="Create an account").click()
    page.get_by_label("Email").fill("operator@example.com")
    page.get_by_label("Password").fill("a-long-and-good-passphrase")
    shot(page, "02-signup")
    own_team_choose(page)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url("**/rooms")
    shot(page, "03-rooms-empty")

    page.get_by_label("Room id (optional)").fill("browser-room")
    page.get_by_label("Name").fill("Browser room")
    page.get_by_role("button", name="Create room").click()
    page.wait_for_url("**/rooms/browser-room/")
    shot(page, "04-room-empty")

    page.get_by_role("link", name="Keys").click()
    page.get_by_label("Name").fill("backend agent")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-secret").inner_text()
    assert re.fullmatch(r"rs_live_[A-Za-z0-9_-]{40,}", secret)
    shot(page, "05-key-created")

    page.goto("/rooms/browser-room/")
    assert page.get_by_text("Build the auth API").count() == 0
    # The page follows the room's event stream (polling is only the fallback).
    page_waits_for(page, "window.roomLive === true")
    task = in_thread(agent_adds_task, browser_server.mcp_url, secret, "browser-room")
    assert task["title"] == "Build the auth API"
    # No reload: the page's own refresh brings the task and the agent in (bounded wait).
    page.get_by_text("Build the auth API").first.wait_for(timeout=15_000)
    page.locator("#agents").get_by_text("backend").wait_for(timeout=15_000)
    assert page.locator(f"#task-{task['id']}").is_visible()
    shot(page, "06-room-live")

    page.get_by_role("link", name="Connect").click()
    assert "claude mcp add --transport http roomservice" in page.content()
    shot(page, "07-connect")
    page.get_by_role("link", name="Report").click()
    assert "Build the auth API" in page.locator("#report").inner_text()
    shot(page, "08-report")

    page.get_by_role("link", name="Keys").click()
    page.get_by_role("link", name="Revoke").click()
    shot(page, "09-revoke-confirm")
    page.get_by_role("button", name="Revoke key").click()
    page.wait_for_url("**/keys")
    assert "revoked" in page.locator("tr", has_text="backend agent").inner_text()
    shot(page, "10-key-revoked")

    assert (
        in_thread(agent_calls_again, browser_server.mcp_url, secret, "browser-room") != "succeeded"
    )
    refused = httpx.post(
        browser_server.mcp_url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "read_plan", "arguments": {"roomId": "browser-room"}},
        },
        headers={"authorization": f"Bearer {secret}", "accept": "application/json"},
    )
    assert refused.status_code == 401


def test_pages_work_with_the_keyboard_and_have_labels(page: Any) -> None:
    page.goto("/login")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert "Skip to content" in focused
    for field in page.locator("input:not([type=hidden])").all():
        field_id = field.get_attribute("id")
        assert page.locator(f"label[for='{field_id}']").count() == 1
