"""The main pages pass an automated accessibility check (axe-core, in the real browser) with
no serious or critical violation, at desktop and phone widths, and are photographed at
both under test-output/screenshots (issue 14, points 6 and 10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import (
    CHROMIUM_ARGS,
    SCREENSHOTS,
    chromium_path,
    page_waits_for,
    sign_up,
)
from tests.browser.test_dashboard_flow import in_thread
from tests.browser.test_room_actions import agents_set_up
from tests.e2e.conftest import ROOT, RunningServer
from tests.e2e.mcp_clients import call, mcp_client

pytestmark = pytest.mark.e2e

AXE = ROOT / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
ROOM = "a11y-room"
BAD = ("serious", "critical")


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's WCAG 2.1 A/AA rules and best practices on the page as it stands."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text())
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [n["target"] for n in v["nodes"]][:5],
        }
        for v in result["violations"]
    ]


def test_the_main_pages_have_no_serious_accessibility_violation(
    browser_server: RunningServer,
) -> None:
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium: install Debian's chromium (make test does when it can)")
    if not AXE.exists():
        pytest.skip("no axe-core: `make browsers` installs it with npm")
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    found: dict[str, list[dict[str, Any]]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        for width, viewport in WIDTHS.items():
            context = browser.new_context(
                viewport=viewport, base_url=browser_server.url, bypass_csp=True
            )
            page = context.new_page()
            # The check itself works: a page with known faults is caught.
            page.set_content('<html><body><img src="x.png"><button></button></body></html>')
            assert {v["id"] for v in axe_violations(page)} >= {"image-alt", "button-name"}
            pages = ["/", "/login", "/signup"]
            for url in pages:
                page.goto(url)
                found[f"{width} {url}"] = axe_violations(page)
                page.screenshot(path=str(SCREENSHOTS / f"a11y-{width}{_name(url)}.png"))
            email = "a11y@example.com"
            if width == "desktop":
                secret = sign_up(page, email, ROOM)
                made = in_thread(agents_set_up, browser_server.mcp_url, secret, ROOM)
                after = [made["api"]["id"], made["shipped"]["id"]]
                in_thread(task_waiting_for, browser_server.mcp_url, secret, after)
            else:  # the same person on a phone
                page.goto("/login")
                page.get_by_label("Email").fill(email)
                page.get_by_label("Password").fill("a-long-and-good-passphrase")
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_url("**/rooms")
            room = ROOM
            task_url = f"/rooms/{room}/tasks/{made['api']['id']}"
            context_url = f"/rooms/{room}/context/{made['change']['id']}"
            inner = [
                "/rooms",
                f"/rooms/{room}/",
                f"/rooms/{room}/events",
                f"/rooms/{room}/events?q=orders",
                f"/rooms/{room}/connect",
                f"/rooms/{room}/report",
                f"/rooms/{room}/invites",
                f"/rooms/{room}/share",
                f"/rooms/{room}/webhooks",
                "/keys",
                "/team",
                "/audit",
                "/account",
                task_url,
                context_url,
            ]
            for url in inner:
                page.goto(url)
                if url == f"/rooms/{room}/":  # the charts and the graph are on the page checked
                    assert page.locator("svg.bars").count() == 2
                    assert page.locator("svg.plan-graph a.node").count() == 3
                found[f"{width} {url}"] = axe_violations(page)
                copies = page.locator("button.copy").evaluate_all(
                    "bs => bs.map(b => b.getAttribute('aria-label') || b.textContent)"
                )
                assert len(set(copies)) == len(copies), (url, copies)  # distinct names
                page.screenshot(
                    path=str(SCREENSHOTS / f"a11y-{width}{_name(url)}.png"), full_page=True
                )
            if width == "desktop":
                keyboard_and_live_region(page, browser_server, secret)
            context.close()
        browser.close()
    report = Path(SCREENSHOTS.parent / "axe.json")
    report.write_text(json.dumps(found, indent=2))
    serious = {
        page: [v for v in violations if v["impact"] in BAD]
        for page, violations in found.items()
        if any(v["impact"] in BAD for v in violations)
    }
    assert serious == {}, json.dumps(serious, indent=2)
    assert len(found) >= 36  # every page was checked, at both widths


def _name(url: str) -> str:
    name = url.strip("/").replace(f"rooms/{ROOM}", "room").replace("/", "-").replace("?q=", "-")
    name = "-".join(part.split("_")[0] if "_" in part else part for part in name.split("-"))
    return f"-{name}" if name else "-landing"


async def task_waiting_for(url: str, secret: str, after: list[str]) -> None:
    """A task that waits for others, so the room page draws its dependency graph."""
    async with mcp_client(url, secret) as agent:
        await call(
            agent, "add_task", roomId=ROOM, title="Release the orders page", depends_on=after
        )


async def agent_posts(url: str, secret: str) -> None:
    async with mcp_client(url, secret) as agent:
        await call(
            agent,
            "post_event",
            roomId=ROOM,
            type="note",
            to="all",
            payload={"n": 1},
            **{"from": "backend"},
        )


def keyboard_and_live_region(page: Any, server: RunningServer, secret: str) -> None:
    """The board scrolls from the keyboard (its region takes focus, Tab reaches it), and a
    new event is announced in the polite live region."""
    page.goto(f"/rooms/{ROOM}/")
    page_waits_for(page, "window.roomLive === true")
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.matches('.board-panel .scroll')"):
            break
    else:
        raise AssertionError("Tab never reached the plan board")
    assert page.get_attribute("#announcer", "aria-live") == "polite"
    in_thread(agent_posts, server.mcp_url, secret)
    page_waits_for(page, "document.getElementById('announcer').textContent.includes('new event')")
    assert page.locator('.tabs a[aria-current="page"]').inner_text() == "Live"
    assert page.locator(".top nav a[aria-current]").inner_text() == "Rooms"
