"""Issue 26, point 4 in a real browser: every dashboard page fits a 390 px phone with no
sideways scrolling; the room page shows its activity charts and its plan as a graph, and a
plan of 50 tasks still reads as one; photographed under test-output/."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.browser.conftest import SCREENSHOTS, sign_up
from tests.browser.test_accessibility import AXE, BAD, axe_violations
from tests.browser.test_dashboard_flow import in_thread
from tests.browser.test_onboarding import claim_url_in
from tests.browser.test_room_actions import agents_set_up
from tests.e2e.conftest import RunningServer
from tests.e2e.mcp_clients import call, mcp_client

pytestmark = pytest.mark.e2e

OUTPUT = SCREENSHOTS.parent  # test-output/
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}

# The widest elements when a page is wider than the window, to say what to fix.
OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const wide = [];
  for (const el of document.querySelectorAll('body *')) {
    const box = el.getBoundingClientRect();
    if (box.right > width + 0.5 && box.width > 0) {
      let hidden = false;
      for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
        const style = getComputedStyle(up);
        if (style.overflowX !== 'visible') { hidden = true; break; }
      }
      const name = typeof el.className === 'string' ? el.className.split(' ').join('.') : '';
      if (!hidden) wide.push(
        el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (name ? '.' + name : '') +
        ' right=' + Math.round(box.right));
    }
  }
  return {scrollWidth: document.documentElement.scrollWidth, wide: wide.slice(0, 8)};
}"""


async def plan_with_dependencies(url: str, secret: str, room: str, count: int) -> list[str]:
    """`count` tasks in five steps, each after one or two tasks of the step before (a
    cycle-free plan; now and then one waits for nothing), in every status, some with long
    titles; their ids."""
    per_step = max(2, count // 5)
    ids: list[str] = []
    needs: list[set[int]] = []
    async with mcp_client(url, secret) as agent:
        for n in range(count):
            before = (n // per_step - 1) * per_step
            picks = {before + (n * 3) % per_step, before + (n * 7 + 1) % per_step}
            needs.append({i for i in picks if 0 <= i < n} if n % 6 else set())
            title = (
                f"Step {n}: wire the payment provider's webhooks into the ledger"
                if n % 7 == 3
                else f"Step {n}: {['schema', 'API', 'UI', 'tests', 'docs'][n % 5]}"
            )
            after = [ids[i] for i in sorted(needs[n])]
            task = await call(agent, "add_task", roomId=room, title=title, depends_on=after)
            ids.append(task["id"])
        for n, task_id in enumerate(ids):
            if n < count // 3:
                await call(agent, "update_task", roomId=room, taskId=task_id, status="done")
            elif n % 4 == 0 and all(i < count // 3 for i in needs[n]):  # its needs are done
                await call(agent, "claim_task", roomId=room, taskId=task_id, agentId="backend")
            elif n % 9 == 0:
                await call(agent, "update_task", roomId=room, taskId=task_id, status="blocked")
    return ids


def assert_fits(page: Any, url: str) -> None:
    page.goto(url)
    measured = page.evaluate(OVERFLOW_JS)
    assert measured["scrollWidth"] <= PHONE["width"], (url, measured)


def test_every_page_fits_a_phone_and_the_room_page_is_photographed(
    browser_server: RunningServer, page: Any
) -> None:
    room = "phone-room"
    page.set_viewport_size(PHONE)
    # The sign-up page as the banner's link opens it offers the demo team (opening it claims
    # nothing; the sign-up below, without it, makes a team of its own).
    for url in ("/", "/login", "/signup", claim_url_in(browser_server)):
        assert_fits(page, url)
    assert page.get_by_text("This is a fresh local run").count() == 1
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    served = page.request.get(icon)
    assert served.ok and served.headers["content-type"].startswith("image/svg+xml")
    assert "<svg" in served.text()
    page.set_viewport_size(DESKTOP)
    secret = sign_up(page, "phone@example.com", room)
    made = in_thread(agents_set_up, browser_server.mcp_url, secret, room)
    in_thread(plan_with_dependencies, browser_server.mcp_url, secret, room, 8)
    page.goto(f"/rooms/{room}/share")
    page.get_by_role("button", name="Create link").click()
    shared = page.locator("#new-link").inner_text().split("/s/", 1)[1]
    page.goto(f"/rooms/{room}/invites")
    page.get_by_role("button", name="Create invite").click()
    page.goto("/keys")
    key_id = page.locator("a[href$='/revoke']").first.get_attribute("href").split("/")[2]

    page.goto(f"/rooms/{room}/")
    assert page.locator("svg.bars").count() == 2
    assert page.locator("svg.plan-graph a.node").count() == 10
    page.screenshot(path=str(OUTPUT / "room-page.png"), full_page=True)

    page.set_viewport_size(PHONE)
    pages = [
        "/rooms",
        f"/rooms/{room}/",
        f"/rooms/{room}/events",
        f"/rooms/{room}/events?q=orders",
        f"/rooms/{room}/tasks/{made['api']['id']}",
        f"/rooms/{room}/context/{made['change']['id']}",
        f"/rooms/{room}/connect",
        f"/rooms/{room}/report",
        f"/rooms/{room}/invites",
        f"/rooms/{room}/share",
        f"/rooms/{room}/webhooks",
        "/keys",
        f"/keys/{key_id}/revoke",
        "/team",
        "/audit",
        "/account",
        f"/s/{shared}",
    ]
    for url in pages:
        assert_fits(page, url)
    page.goto(f"/rooms/{room}/")
    page.screenshot(path=str(OUTPUT / "room-page-390.png"), full_page=True)
    page.goto("/keys")
    page.screenshot(path=str(OUTPUT / "keys-390.png"), full_page=True)


def test_a_plan_of_fifty_tasks_reads_as_a_graph(browser_server: RunningServer, page: Any) -> None:
    room = "fifty-room"
    secret = sign_up(page, "fifty@example.com", room)
    ids = in_thread(plan_with_dependencies, browser_server.mcp_url, secret, room, 50)
    page.goto(f"/rooms/{room}/")
    graph = page.locator("svg.plan-graph")
    assert graph.locator("a.node").count() == 50
    assert graph.locator("path.edge").count() >= 40
    # Every node links to its task and carries its whole title.
    first = graph.locator(f'a.node[href="/rooms/{room}/tasks/{ids[3]}"]')
    assert (
        "wire the payment provider's webhooks into the ledger"
        in first.locator("title").text_content()
    )
    box = graph.bounding_box()
    page.set_viewport_size({"width": int(box["width"]) + 120, "height": 900})
    page.evaluate(  # the whole graph in one picture, not its scrolling box
        """() => {
          document.querySelector('main').style.maxWidth = 'none';
          const box = document.querySelector('.graph-panel .scroll');
          box.style.maxHeight = 'none';
          box.style.overflow = 'visible';
        }"""
    )
    page.locator(".graph-panel").screenshot(path=str(OUTPUT / "dependency-graph-50.png"))
    page.set_viewport_size(DESKTOP)
    page.reload()
    first.click()
    page.wait_for_url(f"**/tasks/{ids[3]}")
    assert page.locator("h1").inner_text().startswith("Step 3:")
    if AXE.exists():  # the graph and the charts add no accessibility fault, at both widths
        found = {}
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size(viewport)
            page.goto(f"/rooms/{room}/")
            found[name] = [v for v in axe_violations(page) if v["impact"] in BAD]
        assert found == {"desktop": [], "phone": []}, json.dumps(found, indent=2)
    page.set_viewport_size(PHONE)
    assert_fits(page, f"/rooms/{room}/")
