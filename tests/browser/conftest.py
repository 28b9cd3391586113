"""A real headless Chromium (Debian's, driven by Playwright) against a real server.

`make test` installs Chromium when it can; when no browser is present these tests skip
with the reason, and CI (which has one) runs them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ops.chromium import CHROMIUM_ARGS, chromium_path
from tests.e2e.conftest import ROOT, RunningServer, start_server

SCREENSHOTS = Path(os.environ.get("TEST_OUTPUT_DIR", ROOT / "test-output")) / "screenshots"


def page_waits_for(page: Any, expression: str, timeout_seconds: float = 15) -> None:
    """Waits until `expression` is true in the page. The pages allow no eval
    (config/middleware.py's CSP) and Playwright's `wait_for_function` re-evaluates a
    string predicate with eval on every poll after the first, so it fails whenever the first
    check is false; `page.evaluate` runs through the debugger protocol, which the policy does
    not govern."""
    deadline = time.monotonic() + timeout_seconds
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"never true within {timeout_seconds} s: {expression}")
        time.sleep(0.1)


def own_team_choose(page: Any) -> None:
    """Sign up for an empty team of one's own: on a fresh local run (as these servers are)
    the sign-up page offers the demo team, ticked (tests/browser/test_onboarding.py)."""
    from dashboard.forms import CLAIM_DEMO_LABEL

    box = page.get_by_label(CLAIM_DEMO_LABEL)
    if box.count():
        box.uncheck()


@pytest.fixture(scope="module")
def browser_server() -> Iterator[RunningServer]:
    running = start_server({"API_KEYS": ""})
    yield running
    running.stop()


@pytest.fixture
def page(browser_server: RunningServer) -> Iterator[object]:
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium: install Debian's chromium (make test does when it can)")
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        context = browser.new_context(
            viewport={"width": 1280, "height": 900}, base_url=browser_server.url
        )
        yield context.new_page()
        context.close()
        browser.close()


def sign_up(page: Any, email: str, room: str) -> str:
    """A new person with a room and an agent key; the key's secret."""
    page.goto("/signup")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill("a-long-and-good-passphrase")
    own_team_choose(page)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url("**/rooms")  # a team of one's own: only the banner's link claims the demo
    page.goto("/rooms")
    page.get_by_label("Room id (optional)").fill(room)
    page.get_by_role("button", name="Create room").click()
    page.wait_for_url("**/rooms/*/")
    page.goto("/keys")
    page.get_by_label("Name").fill("agents")
    page.get_by_role("button", name="Create key").click()
    return str(page.locator("#new-secret").inner_text())
