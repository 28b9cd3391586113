"""One onboarding story in a real browser (issue 26, point 2): on a fresh `make run`, the
banner's sign-up link (its claim token) leads to the demo team the banner printed, while
the landing page's "Create an account" makes a team of one's own; `manage.py signin_link`
gives a new way in without a restart; with SIGNUP=closed the page says so, and the first
administrator comes from `manage.py create_admin`, whose link signs them in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from dashboard.forms import CLAIM_DEMO_LABEL
from tenants.people import SIGNUP_CLOSED
from tests.browser.conftest import CHROMIUM_ARGS, SCREENSHOTS, chromium_path
from tests.e2e.conftest import ROOT, RunningServer, start_server

pytestmark = pytest.mark.e2e


def manage(server: RunningServer, *args: str) -> str:
    """`manage.py <args>` against the running server's own database, as its operator would
    type it in another terminal."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{server.var_dir / 'db.sqlite3'}",
        "ROOMSERVICE_VAR_DIR": str(server.var_dir),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", *args, "--base-url", server.url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def link_in(server: RunningServer, output: str) -> str:
    found = re.search(rf"{re.escape(server.url)}(/signin/\S+)", output)
    assert found, output
    return found.group(1)


def claim_url_in(server: RunningServer) -> str:
    """The sign-up link that claims the demo team, as the server's banner printed it."""
    found = re.search(rf"{re.escape(server.url)}(/signup\?claim=\S+)", server.log.read_text())
    assert found, server.log.read_text()[-4000:]
    return found.group(1)


@pytest.fixture
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium: install Debian's chromium (make test does when it can)")
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def new_page(browser: Any, server: RunningServer) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=server.url)
    return context.new_page()


def test_signing_up_on_a_fresh_local_run_leads_to_the_demo_team(browser: Any) -> None:
    server = start_server({"API_KEYS": "", "SIGNUP": ""})  # what `make run` does
    try:
        claim = claim_url_in(server)
        page = new_page(browser, server)
        page.goto("/")
        page.get_by_role("link", name="Create an account").click()
        page.wait_for_url("**/signup")
        page.get_by_label("Email").wait_for()
        assert page.get_by_label(CLAIM_DEMO_LABEL).count() == 0  # only the banner's link has it
        page.goto(claim)
        page.get_by_text("This is a fresh local run").wait_for()
        box = page.get_by_label(CLAIM_DEMO_LABEL)
        assert box.is_checked()
        page.get_by_label("Email").fill("newcomer@example.com")
        page.get_by_label("Password").fill("a-long-and-good-passphrase")
        page.screenshot(path=str(SCREENSHOTS / "signup-claims-demo-1-offer.png"), full_page=True)
        page.get_by_role("button", name="Create account").click()
        page.wait_for_url("**/rooms/demo/")
        page.get_by_role("heading", name="Demo room").first.wait_for()
        page.screenshot(path=str(SCREENSHOTS / "signup-claims-demo.png"), full_page=True)

        # The next person is not offered it, even with the banner's link: it has an owner now.
        other = new_page(browser, server)
        other.goto(claim)
        other.get_by_text("This link does not claim the demo team").wait_for()
        assert other.get_by_label(CLAIM_DEMO_LABEL).count() == 0

        # A new way in, without a restart: the first-run operator's link, then the newcomer's.
        for args in ((), ("--email", "newcomer@example.com")):
            fresh = new_page(browser, server)
            fresh.goto(link_in(server, manage(server, "signin_link", *args)))
            fresh.wait_for_url("**/rooms/demo/")
        fresh.screenshot(path=str(SCREENSHOTS / "signin-link-demo-room.png"), full_page=True)
    finally:
        server.stop()


def test_closed_sign_up_and_the_first_administrator(browser: Any) -> None:
    server = start_server({"API_KEYS": "", "SIGNUP": "closed"})
    try:
        page = new_page(browser, server)
        page.goto("/")
        assert page.get_by_role("link", name="Create an account").count() == 0
        page.goto("/signup")
        page.get_by_text(SIGNUP_CLOSED).wait_for()
        assert page.get_by_label("Password").count() == 0
        assert page.get_by_label(CLAIM_DEMO_LABEL).count() == 0
        page.screenshot(path=str(SCREENSHOTS / "signup-closed.png"), full_page=True)

        said = manage(server, "create_admin", "--email", "admin@example.com")
        assert "superuser, owner of the team" in said
        page.goto(link_in(server, said))
        page.wait_for_url("**/rooms")
        page.goto("/account")
        page.get_by_role("heading", name="Set a password").wait_for()
        page.get_by_label("New password").fill("a-long-and-good-passphrase")
        page.get_by_role("button", name="Set password").click()
        page.get_by_text("Password set.").wait_for()
        page.screenshot(path=str(SCREENSHOTS / "create-admin-password-set.png"), full_page=True)
        page.goto("/admin/")
        page.get_by_text("Site administration").wait_for()
        page.screenshot(path=str(SCREENSHOTS / "create-admin-django-admin.png"), full_page=True)
    finally:
        server.stop()
