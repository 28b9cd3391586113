"""Issue 31's smaller page fixes in a real browser: the activity charts follow the live
room, a task's status pill is outlined whole, lease paths break only after a slash on a
390 px phone; the changed pages photographed under test-output/.

The pages allow no eval (config/middleware.py's CSP): waits are Playwright's `expect`, never
`wait_for_function` with a string."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import sign_up
from tests.browser.test_dashboard_flow import in_thread
from tests.browser.test_room_page import DESKTOP, OUTPUT, PHONE, assert_fits
from tests.e2e.conftest import RunningServer
from tests.e2e.mcp_clients import call, mcp_client

pytestmark = pytest.mark.e2e

LIVE_WAIT_MS = 20_000  # the stream refreshes at once; polling, every two seconds

# Where each line of an element's text ends: the character before every line break.
LINE_ENDS_JS = """(el) => {
  const ends = [];
  let lastTop = null, lastChar = null;
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      const range = document.createRange();
      range.setStart(node, i); range.setEnd(node, i + 1);
      const box = range.getClientRects()[0];
      if (!box) continue;
      if (lastTop !== null && box.top > lastTop + 2) ends.push(lastChar);
      lastTop = box.top; lastChar = node.data[i];
    }
  }
  return ends;
}"""

DEEP_PATH = "services/payments/internal/reconciliation/ledger.py"


async def agent_adds_tasks(url: str, secret: str, room: str, count: int) -> None:
    async with mcp_client(url, secret) as agent:
        for n in range(count):
            await call(agent, "add_task", roomId=room, title=f"Live task {n}", agentId="backend")


async def agent_leases(url: str, secret: str, room: str) -> dict[str, Any]:
    async with mcp_client(url, secret) as agent:
        await call(agent, "heartbeat", roomId=room, agentId="backend")
        await call(agent, "lease_claim", roomId=room, agentId="backend", path=DEEP_PATH)
        await call(agent, "lease_claim", roomId=room, agentId="backend", path="src/api/users.py")
        task: dict[str, Any] = await call(agent, "add_task", roomId=room, title="Orders API")
        await call(agent, "claim_task", roomId=room, taskId=task["id"], agentId="backend")
        return task


def _events_in(caption: str) -> int:
    found = re.search(r"(\d+) events? from", caption)
    return int(found.group(1)) if found else 0


def test_the_activity_charts_follow_the_live_room(browser_server: RunningServer, page: Any) -> None:
    room = "chart-room"
    secret = sign_up(page, "charts@example.com", room)
    page.goto(f"/rooms/{room}/")
    days = page.locator("#activity-charts figure").first.locator("figcaption")
    hours = page.locator("#activity-charts figure").nth(1).locator("figcaption")
    before = _events_in(days.inner_text())
    page.locator("#msg-body").fill("a draft the refresh must keep")  # no reload
    in_thread(agent_adds_tasks, browser_server.mcp_url, secret, room, 3)
    expect(days).to_contain_text(f"{before + 3} events from", timeout=LIVE_WAIT_MS)
    expect(hours).to_contain_text(f"{before + 3} events from", timeout=LIVE_WAIT_MS)
    expect(page.locator("#msg-body")).to_have_value("a draft the refresh must keep")
    page.locator("section.activity").screenshot(path=str(OUTPUT / "activity-live.png"))


def test_status_pill_and_lease_paths_on_a_phone(browser_server: RunningServer, page: Any) -> None:
    room = "paths-room"
    secret = sign_up(page, "paths@example.com", room)
    task = in_thread(agent_leases, browser_server.mcp_url, secret, room)

    # The status pill: its whole outline in the status's colour, its status in words.
    page.goto(f"/rooms/{room}/tasks/{task['id']}")
    pill = page.locator("main p.meta span.tag").first
    expect(pill).to_have_text("in progress")
    right = pill.evaluate("(el) => getComputedStyle(el).borderRightColor")
    expect(pill).to_have_css("border-left-color", right)
    assert right != pill.evaluate("(el) => getComputedStyle(el).color")  # coloured, not grey
    page.locator("main p.meta").first.screenshot(path=str(OUTPUT / "task-status-pill.png"))

    # Lease paths on a phone: every line of a path ends at a slash, and the page fits.
    page.set_viewport_size(PHONE)
    assert_fits(page, f"/rooms/{room}/")
    paths = page.locator("#files code.path, #agents code.path")
    assert paths.count() == 4  # two leases, in the table and on the agent's line
    wrapped = 0
    for n in range(paths.count()):
        ends = paths.nth(n).evaluate(LINE_ENDS_JS)
        assert all(end == "/" for end in ends), (paths.nth(n).inner_text(), ends)
        wrapped += len(ends)
    assert wrapped, "no path wrapped at 390 px: the test proves nothing"
    table, box = page.locator("#files table.leases"), page.locator("#files")
    assert table.bounding_box()["width"] <= box.bounding_box()["width"]  # no sideways scroll
    page.locator("#files").screenshot(path=str(OUTPUT / "lease-paths-390.png"))
    page.locator("#agents").screenshot(path=str(OUTPUT / "agent-leases-390.png"))
    page.set_viewport_size(DESKTOP)


def test_the_changed_pages_photographed(browser_server: RunningServer, page: Any) -> None:
    # The landing page of a fresh local run says where the demo team is to be had.
    page.set_viewport_size(PHONE)
    page.goto("/")
    expect(page.get_by_role("note")).to_contain_text("This is a fresh local run.")
    page.screenshot(path=str(OUTPUT / "landing-fresh-run-390.png"), full_page=True)
    # A used (or forged) sign-in link: the site's page, saying how to get another.
    used = page.goto("/signin/MQ/not-a-token")
    assert used is not None and used.status == 400
    expect(page.get_by_role("heading", level=1)).to_have_text("This sign-in link no longer works")
    expect(page.locator("main")).to_contain_text("manage.py signin_link")
    page.screenshot(path=str(OUTPUT / "signin-link-used-390.png"), full_page=True)
    # /favicon.ico is the site's icon.
    icon = page.request.get("/favicon.ico")
    assert icon.ok and icon.headers["content-type"].startswith("image/svg+xml")

    page.set_viewport_size(DESKTOP)
    room = "filters-room"
    secret = sign_up(page, "filters@example.com", room)
    in_thread(agent_leases, browser_server.mcp_url, secret, room)
    # The events page: the agent and the type are chosen from the room's.
    page.goto(f"/rooms/{room}/events")
    page.get_by_label("Agent").select_option("backend")
    page.get_by_label("Type").select_option(label="lease granted")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r".*agent=backend&type=lease_granted.*"))
    expect(page.locator("ol.feed li.event")).to_have_count(2)
    page.screenshot(path=str(OUTPUT / "events-filters.png"), full_page=True)
    # The audit says who: the person's email, not user:<id>.
    page.goto("/audit")
    expect(page.locator("tbody")).to_contain_text("filters@example.com")
    page.screenshot(path=str(OUTPUT / "audit.png"), full_page=True)
