"""The first run, from a fresh clone, in a real browser (issue 14, points 1 and 10): the
service started as `make run` starts it (embedded SQLite and Redis, no settings at all)
prints a sign-in link and a demo key; following the link lands on the demo room, and the
agent's first call with the printed key appears there without a reload."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import CHROMIUM_ARGS, SCREENSHOTS, chromium_path, page_waits_for
from tests.browser.test_dashboard_flow import in_thread
from tests.e2e.conftest import ROOT, free_port
from tests.e2e.mcp_clients import call, mcp_client

pytestmark = pytest.mark.e2e

BANNER_SECONDS = 120  # a fresh clone migrates a new SQLite database first


def banner_read(process: subprocess.Popen[str], log: list[str]) -> str:
    """The server's output up to its banner's last snippet (bounded wait)."""
    assert process.stdout is not None
    deadline = time.monotonic() + BANNER_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError("the server exited:\n" + "".join(log)[-4000:])
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            line = process.stdout.readline()
            log.append(line)
            if "Codex" in line or "codex" in line or "mcpServers" in line:
                # The snippets follow; read what is already written.
                while select.select([process.stdout], [], [], 1.0)[0]:
                    more = process.stdout.readline()
                    if not more:
                        break
                    log.append(more)
                return "".join(log)
    raise AssertionError("no banner within the wait:\n" + "".join(log)[-4000:])


async def agent_first_call(url: str, secret: str, room_id: str) -> dict[str, Any]:
    async with mcp_client(url, secret) as agent:
        await call(agent, "heartbeat", roomId=room_id, agentId="claude")
        return await call(agent, "add_task", roomId=room_id, title="My agent's first task")  # type: ignore[no-any-return]


def test_a_fresh_clone_leads_the_newcomer_to_their_agents_first_call() -> None:
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium: install Debian's chromium (make test does when it can)")
    clone = Path(tempfile.mkdtemp(prefix="rs-clone-")) / "roomservice"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("DATABASE_", "REDIS_", "TEST_", "API_KEYS", "ROOMSERVICE_", "PROMETHEUS_")
        )
        and k != "DJANGO_SETTINGS_MODULE"
    }
    env.update({"PORT": str(port), "HOST": "127.0.0.1", "PYTHONUNBUFFERED": "1"})
    process = subprocess.Popen(
        [sys.executable, "-m", "config.serve"],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    log: list[str] = []
    try:
        banner = banner_read(process, log)
        base = f"http://127.0.0.1:{port}"
        sign_in = re.search(rf"{re.escape(base)}(/signin/\S+)", banner)
        secret = re.search(r"\b(rs_live_[A-Za-z0-9_-]+)", banner)
        room = re.search(r'roomId "([^"]+)"', banner)
        assert sign_in and secret and room, banner
        assert f"{base}/rooms/{room.group(1)}/" in banner

        from playwright.sync_api import sync_playwright

        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
            page = browser.new_context(base_url=base).new_page()
            page.goto(sign_in.group(1))
            page.wait_for_url(f"**/rooms/{room.group(1)}/")
            page_waits_for(page, "window.roomLive === true")
            page.screenshot(path=str(SCREENSHOTS / "first-run-1-demo-room.png"), full_page=True)
            task = in_thread(agent_first_call, f"{base}/mcp", secret.group(1), room.group(1))
            page.locator(f"#task-{task['id']}").wait_for(timeout=15_000)
            page.locator("#agents").get_by_text("claude").wait_for(timeout=15_000)
            page.screenshot(path=str(SCREENSHOTS / "first-run-2-first-call.png"), full_page=True)
            browser.close()
    finally:
        with_group = os.getpgid(process.pid)
        os.killpg(with_group, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(with_group, signal.SIGKILL)
            process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()
