"""The README's picture (docs/images/room.png): a fresh `make run` in a folder of its own,
two agents working in the demo room over MCP, and the room page photographed in headless
Chromium after signing in with the banner's link.

    .venv/bin/python scripts/readme_screenshot.py [docs/images/room.png]

Nothing is staged by hand: every task, lease, message and contract on the page is a tool
call an agent made, as in the README's walkthrough.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ops.chromium import CHROMIUM_ARGS, chromium_path  # noqa: E402  # needs ROOT on the path


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Agent:
    def __init__(self, base: str, key: str, name: str) -> None:
        self.http = httpx.Client(
            base_url=base,
            headers={"authorization": f"Bearer {key}", "accept": "application/json"},
            timeout=30,
        )
        self.name = name
        self.calls = 0

    def __call__(self, tool: str, **arguments: Any) -> Any:
        self.calls += 1
        answer = self.http.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": self.calls,
                "method": "tools/call",
                "params": {"name": tool, "arguments": {"roomId": "demo", **arguments}},
            },
        ).json()["result"]
        if answer.get("isError"):
            raise RuntimeError(f"{tool}: {answer['content'][0]['text']}")
        return answer.get("structuredContent")


def stage(base: str, key: str) -> None:
    backend, frontend = Agent(base, key, "backend"), Agent(base, key, "frontend")
    backend("heartbeat", agentId="backend")
    frontend("heartbeat", agentId="frontend")
    schema = backend("add_task", title="Database schema for accounts", agentId="backend")
    api = backend("add_task", title="Login API", depends_on=[schema["id"]], agentId="backend")
    page = frontend("add_task", title="Login page", depends_on=[api["id"]], agentId="frontend")
    frontend("add_task", title="Session expiry banner", depends_on=[page["id"]], agentId="frontend")
    backend("add_task", title="Rate-limit sign-ins", depends_on=[api["id"]], agentId="backend")
    backend("add_task", title="Audit log of sign-ins", depends_on=[schema["id"]], agentId="backend")
    backend("claim_task", taskId=schema["id"], agentId="backend")
    backend("lease_claim", path="db/migrations/**", agentId="backend", ttlSeconds=1800)
    backend("update_task", taskId=schema["id"], status="done", agentId="backend")
    backend("claim_task", taskId=api["id"], agentId="backend", paths=["api/auth/**"])
    backend(
        "write_context",
        type="api_contract",
        author="backend",
        summary="POST /login exchanges credentials for a session token",
        payload={
            "service": "auth",
            "version": "1.0",
            "base_url": "http://localhost:4000",
            "endpoints": [
                {
                    "method": "POST",
                    "path": "/login",
                    "request": {"email": "string", "password": "string"},
                    "response": {"token": "string"},
                    "auth_required": False,
                    "description": "Exchange credentials for a token",
                }
            ],
        },
    )
    form = frontend("add_task", title="Login form components", agentId="frontend")
    frontend("claim_task", taskId=form["id"], agentId="frontend", paths=["web/login/**"])
    frontend(
        "send_message",
        to="backend",
        body="Building the login page against auth-api v1. Does /login set a cookie too?",
        agentId="frontend",
    )
    backend("send_message", to="frontend", body="Token only; the page keeps it.", agentId="backend")


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "room.png"
    from playwright.sync_api import sync_playwright

    var = Path(tempfile.mkdtemp(prefix="readme-shot-"))
    port = _port()
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in ("DATABASE_URL", "REDIS_URL", "API_KEYS")
        },
        "ROOMSERVICE_VAR_DIR": str(var),
        "PORT": str(port),
        "RUN_WORKER": "0",
        "RUN_RELAY": "0",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "config.serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        banner = ""
        deadline = time.monotonic() + 120
        assert server.stdout is not None
        key = link = None
        while time.monotonic() < deadline and not (key and link):
            banner += server.stdout.readline()
            key = re.search(r"(rs_live_[A-Za-z0-9_-]+)", banner)
            link = re.search(r"(http://\S+/signin/\S+)", banner)
        if not key or not link:
            print(banner)
            return 1
        # Its log goes on after the banner: read and dropped, so a full pipe never stops it.
        threading.Thread(target=lambda: all(server.stdout or ()), daemon=True).start()
        base = f"http://127.0.0.1:{port}"
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        stage(base, key.group(1))
        chromium = chromium_path() or "/usr/bin/chromium"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1500})
            page.goto(link.group(1))
            page.goto(f"{base}/rooms/demo/")
            page.wait_for_timeout(1500)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
            browser.close()
        print(f"wrote {out}")
        return 0
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        shutil.rmtree(var, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
