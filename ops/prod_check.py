"""`make prod-check`: the production configuration started on this machine, without container
images, and used through its TLS proxy the way people and agents use it.

One module on purpose: it is one program an operator runs, read top to bottom as the
steps it takes; nothing of the service imports it.

What it starts, as docker-compose.yml lays it out: the service under its production
settings (PRODUCTION=1) with several uvicorn workers, the Celery worker and beat, the
webhook relay, on this machine's Postgres (a database of its own, dropped after) and Redis
(two numbered databases of its own, emptied before and after), and Caddy (Debian's package,
deploy/Caddyfile) terminating TLS in front with its local certificate authority.

What it does through https://localhost:<port>: signs up and creates a room and a key in
headless Chromium (CSRF, secure cookies, the scheme forwarded by the proxy), acts in the
room from the page, makes MCP calls with the key over verified TLS (both protocol eras),
registers a webhook and sees the relay and the worker deliver an event to it with the
call's trace context, reads /metrics with its token (and is refused without it), checks
that the OAuth door and its metadata name the public https address, and checks the
security headers. Then it stops everything it started, also when a step fails,
and says which step failed with the end of each process's log.

    make prod-check                 # or: .venv/bin/python -m ops.prod_check
    PRODCHECK_KEEP=1 make prod-check  # leave the folder of logs (var/prod-check/) behind
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from config.lifecycle import child_of_this_process
from ops.chromium import CHROMIUM_ARGS, chromium_path

BASE_DIR = Path(__file__).resolve().parent.parent
FOLDER = BASE_DIR / "var" / "prod-check"
ADMIN_DATABASE_URL = os.environ.get(
    "PRODCHECK_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
REDIS_BASE_URL = os.environ.get("PRODCHECK_REDIS_URL", "redis://127.0.0.1:6379")
REDIS_DB, BROKER_DB = 13, 14
MARKER = "roomservice-prod-check"  # the key that says a Redis database is lent to the check
WEB_WORKERS = 2
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
PASSWORD = "a-long-and-good-passphrase"


class CheckFailed(Exception):
    pass


def leftovers_stop() -> None:
    """Stop what a run killed outright (SIGKILL: no `finally`) left running: the process
    groups its folder lists, each only if it still runs with that folder in its environment
    (a pid the system gave to someone else since is left alone)."""
    listed = FOLDER / "pids"
    if not listed.exists():
        return
    for line in listed.read_text().split():
        pid = int(line)
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if str(FOLDER).encode() in environ:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(what: str, ready: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if ready():
                return
        time.sleep(0.25)
    raise CheckFailed(f"{what}: not ready after {seconds:.0f} s")


@dataclass
class Receiver:
    """The webhook's receiver: a real HTTP server on loopback, recording each POST."""

    seen: list[dict[str, Any]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    def start(self) -> str:
        state = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                state.seen.append({"headers": dict(self.headers), "body": body})
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@dataclass
class ProdCheck:
    app_port: int = field(default_factory=free_port)
    tls_port: int = field(default_factory=free_port)
    database: str = field(default_factory=lambda: f"roomservice_prodcheck_{secrets.token_hex(4)}")
    metrics_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    # One of each for every process it starts, as one .env gives them all.
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(50))
    export_key: str = field(default_factory=lambda: secrets.token_urlsafe(40))
    lent: bool = False  # the Redis databases are marked as the check's (stores_make)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    receiver: Receiver = field(default_factory=Receiver)
    steps: list[tuple[str, float]] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"https://localhost:{self.tls_port}"

    @property
    def root_ca(self) -> Path:
        return FOLDER / "caddy-data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"

    def env(self) -> dict[str, str]:
        """The production settings, as an operator would write them in .env."""
        admin = urlsplit(ADMIN_DATABASE_URL)
        database_url = admin._replace(path=f"/{self.database}").geturl()
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))},
            "PRODUCTION": "1",
            "DEBUG": "0",
            "SECRET_KEY": self.secret_key,
            "ROOM_EXPORT_SIGNING_KEY": self.export_key,
            "ALLOWED_HOSTS": "localhost",
            "PUBLIC_URL": self.base,
            "CSRF_TRUSTED_ORIGINS": self.base,
            "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto:https",
            "SECURE_SSL_REDIRECT": "1",
            "DATABASE_URL": database_url,
            "REDIS_URL": f"{REDIS_BASE_URL}/{REDIS_DB}",
            "CELERY_BROKER_URL": f"{REDIS_BASE_URL}/{BROKER_DB}",
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "METRICS_ACCESS": "token",
            "METRICS_TOKEN": self.metrics_token,
            "PROMETHEUS_MULTIPROC_DIR": str(FOLDER / "metrics"),
            "SIGNUP": "open",
            "API_KEYS": "",
            # The receiver of the check's webhook is on loopback, which the SSRF guard
            # refuses in production unless told otherwise.
            "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1",
            "LOG_FORMAT": "json",
            # Caddy's state (its local CA among it) and config stay in the check's folder.
            "XDG_DATA_HOME": str(FOLDER / "caddy-data"),
            "XDG_CONFIG_HOME": str(FOLDER / "caddy-config"),
            "SITE_ADDRESS": self.base,
            "UPSTREAMS": f"127.0.0.1:{self.app_port}",
            "CADDY_ADMIN": "off",
        }

    # --- Running it -----------------------------------------------------------------------

    def step(self, name: str, action: Callable[[], None]) -> None:
        started = time.monotonic()
        print(f"  {name} ...", end="", flush=True)
        try:
            action()
        except CheckFailed:
            print(" FAILED")
            raise
        except Exception as exc:
            print(" FAILED")
            raise CheckFailed(f"{name}: {type(exc).__name__}: {exc}") from exc
        took = time.monotonic() - started
        self.steps.append((name, took))
        print(f" ok ({took:.1f} s)")

    def run(self) -> None:
        self.step("tools: Caddy and Chromium", self.tools_present)
        self.step("stores: a database and two Redis databases of its own", self.stores_make)
        self.step("migrate", self.migrate)
        self.step("start: web workers, Celery worker and beat, relay, Caddy", self.start)
        self.step("TLS: /health through Caddy, certificate verified", self.tls_health)
        secret, room = self.browser_flow_result()
        self.step(
            "MCP over HTTPS: both protocol eras, the browser's task seen",
            lambda: self.mcp(secret, room),
        )
        self.step(
            "webhook: relay and worker deliver, with the call's trace",
            lambda: self.webhook(secret, room),
        )
        self.step("/metrics: with its token, refused without", self.metrics)
        self.step("OAuth door: its challenge and metadata name the public address", self.oauth)
        self.step("processes: every one still running", self.all_alive)

    def browser_flow_result(self) -> tuple[str, str]:
        found: dict[str, str] = {}

        def flow() -> None:
            found.update(self.browser_flow())

        self.step("browser: sign up, room, key, act in the room (CSRF, secure cookies)", flow)
        return found["secret"], found["room"]

    def tools_present(self) -> None:
        if shutil.which("caddy") is None:
            raise CheckFailed(
                "no caddy: apt-get install caddy (make prod-check installs it when it can)"
            )
        if chromium_path() is None:
            raise CheckFailed("no Chromium: apt-get install chromium")

    def stores_make(self) -> None:
        import psycopg
        import redis

        for db in (REDIS_DB, BROKER_DB):
            store = redis.Redis.from_url(f"{REDIS_BASE_URL}/{db}")
            # It lends itself two numbered databases: never one that holds someone else's
            # keys (its own, left by a run that was killed, it empties).
            if store.dbsize() and not store.exists(MARKER):
                raise CheckFailed(
                    f"Redis database {db} of {REDIS_BASE_URL} holds keys that are not the "
                    "prod-check's; point PRODCHECK_REDIS_URL at a Redis it may use"
                )
            store.flushdb()
            store.set(MARKER, "1")
        self.lent = True
        leftovers_stop()
        if FOLDER.exists():
            shutil.rmtree(FOLDER)
        (FOLDER / "metrics").mkdir(parents=True)
        with psycopg.connect(ADMIN_DATABASE_URL, autocommit=True) as conn:
            # A run killed outright (SIGKILL) could not drop its database: this one does.
            for (name,) in conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'roomservice_prodcheck_%'"
            ).fetchall():
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{self.database}"')

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise CheckFailed(f"manage.py {' '.join(args)}: {done.stderr[-2000:]}")
        return done.stdout

    def migrate(self) -> None:
        self.manage("migrate", "--noinput")
        self.manage("check", "--deploy", "--fail-level", "ERROR")

    def spawn(self, name: str, argv: list[str]) -> None:
        with (FOLDER / f"{name}.log").open("wb") as log:  # the child keeps its own copy
            self.processes[name] = process = subprocess.Popen(
                argv,
                cwd=BASE_DIR,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # Not the launcher's ignored or blocked signals, and stopped (SIGTERM: the web
                # server ends its workers) when the check dies, however it dies.
                preexec_fn=child_of_this_process(signal.SIGTERM),
            )
        with (FOLDER / "pids").open("a") as pids:  # what a killed run leaves, the next stops
            pids.write(f"{process.pid}\n")

    def start(self) -> None:
        bin_dir = Path(sys.executable).parent
        self.spawn(
            "web",
            [
                str(bin_dir / "uvicorn"),
                "config.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.app_port),
                "--workers",
                str(WEB_WORKERS),
                "--no-access-log",
                "--proxy-headers",
                "--forwarded-allow-ips",
                "127.0.0.1",
                "--timeout-graceful-shutdown",
                "10",
            ],
        )
        celery = str(bin_dir / "celery")
        self.spawn(
            "worker",
            [celery, "-A", "config.celery", "worker", "--pool", "threads", "--concurrency", "4"],
        )
        self.spawn(
            "beat",
            [celery, "-A", "config.celery", "beat", "-s", str(FOLDER / "beat-schedule")],
        )
        self.spawn("relay", [sys.executable, "manage.py", "relay_webhooks"])
        self.spawn(
            "caddy",
            [
                "caddy",
                "run",
                "--config",
                str(BASE_DIR / "deploy" / "Caddyfile"),
                "--adapter",
                "caddyfile",
            ],
        )
        wait_until("the web workers", lambda: self._up(f"http://127.0.0.1:{self.app_port}/health"))
        wait_until("Caddy's local CA", self.root_ca.exists)
        self.all_alive()

    @staticmethod
    def _up(url: str) -> bool:
        import httpx

        return httpx.get(url, timeout=2).status_code == 200

    def https(self) -> Any:
        import httpx

        return httpx.Client(base_url=self.base, verify=str(self.root_ca), timeout=30)

    def tls_health(self) -> None:
        def healthy() -> bool:
            with self.https() as http:
                return bool(http.get("/health").status_code == 200)

        wait_until("https /health through Caddy", healthy, 60)
        with self.https() as http:
            landing = http.get("/")
        hsts = landing.headers.get("strict-transport-security", "")
        if "max-age=" not in hsts:
            raise CheckFailed(f"no HSTS header on https pages (got {hsts!r})")
        if landing.headers.get("x-content-type-options") != "nosniff":
            raise CheckFailed("no X-Content-Type-Options: nosniff")

    def browser_flow(self) -> dict[str, str]:
        from playwright.sync_api import sync_playwright

        path = chromium_path()
        assert path is not None  # tools_present said so
        room = "prod-check-room"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
            try:
                # Caddy's local CA is not in Chromium's store: TLS itself is verified by the
                # MCP step (httpx with the CA's root certificate).
                context = browser.new_context(base_url=self.base, ignore_https_errors=True)
                page = context.new_page()
                page.set_default_timeout(20_000)
                page.goto("/signup")
                page.get_by_label("Email").fill("operator@example.com")
                page.get_by_label("Password").fill(PASSWORD)
                page.get_by_role("button", name="Create account").click()
                page.wait_for_url("**/rooms")
                cookies = {c["name"]: c for c in context.cookies()}
                for name in ("sessionid", "csrftoken"):
                    if not cookies.get(name, {}).get("secure"):
                        raise CheckFailed(f"the {name} cookie is not Secure over https")
                if not cookies["sessionid"].get("httpOnly"):
                    raise CheckFailed("the session cookie is readable by scripts")
                page.get_by_label("Room id (optional)").fill(room)
                page.get_by_label("Name").fill("Prod check")
                page.get_by_role("button", name="Create room").click()
                page.wait_for_url(f"**/rooms/{room}/")
                page.get_by_role("link", name="Keys").click()
                page.get_by_label("Name").fill("prod-check agent")
                page.get_by_role("button", name="Create key").click()
                secret = page.locator("#new-secret").inner_text().strip()
                if not re.fullmatch(r"rs_live_[A-Za-z0-9_-]{40,}", secret):
                    raise CheckFailed("the new key's secret was not shown")
                # A person acts in the room: a form POST with its CSRF token, over https.
                page.goto(f"/rooms/{room}/")
                page.get_by_label("Title").fill("Ship the release")
                page.get_by_role("button", name="Add task").click()
                page.locator("#board").get_by_text("Ship the release").first.wait_for()
                # The page names the endpoint by the scheme the proxy forwarded.
                page.goto(f"/rooms/{room}/connect")
                if f"{self.base}/mcp" not in page.content():
                    raise CheckFailed(f"the Connect page does not name {self.base}/mcp")
                FOLDER.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(FOLDER / "connect.png"), full_page=True)
            finally:
                browser.close()
        return {"secret": secret, "room": room}

    def mcp(self, secret: str, room: str) -> None:
        heads = {
            "authorization": f"Bearer {secret}",
            "accept": "application/json, text/event-stream",
        }
        with self.https() as http:
            init = http.post(
                "/mcp",
                headers=heads,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "prod-check", "version": "1"},
                    },
                },
            )
            if init.json()["result"]["protocolVersion"] != "2025-11-25":
                raise CheckFailed(f"initialize: {init.text[:300]}")
            plan = http.post(
                "/mcp",
                headers={**heads, "mcp-protocol-version": "2025-11-25"},
                json={
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "read_plan", "arguments": {"roomId": room}},
                },
            ).json()["result"]
            titles = [t["title"] for t in plan["structuredContent"]["tasks"]]
            if "Ship the release" not in titles:
                raise CheckFailed(f"read_plan does not show the browser's task: {titles}")
            modern = http.post(
                "/mcp",
                headers={
                    **heads,
                    "mcp-protocol-version": "2026-07-28",
                    "mcp-method": "tools/call",
                    "mcp-name": "heartbeat",
                },
                json={
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {
                        "name": "heartbeat",
                        "arguments": {"roomId": room, "agentId": "prod-check"},
                        "_meta": {
                            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientCapabilities": {},
                        },
                    },
                },
            ).json()["result"]
            if modern.get("resultType") != "complete" or modern.get("isError"):
                raise CheckFailed(f"a 2026-07-28 call: {json.dumps(modern)[:300]}")

    def webhook(self, secret: str, room: str) -> None:
        url = self.receiver.start()
        heads = {"authorization": f"Bearer {secret}"}
        with self.https() as http:
            made = http.post(
                f"/api/v1/rooms/{room}/webhooks",
                headers=heads,
                json={"url": url, "eventTypes": ["note"]},
            )
            if made.status_code != 201:
                raise CheckFailed(f"registering a webhook: {made.status_code} {made.text[:300]}")
            posted = http.post(
                "/mcp",
                headers={
                    **heads,
                    "accept": "application/json",
                    "mcp-protocol-version": "2025-11-25",
                },
                json={
                    "jsonrpc": "2.0",
                    "id": 4,
                    "method": "tools/call",
                    "params": {
                        "name": "post_event",
                        "arguments": {"roomId": room, "type": "note", "from": "prod-check"},
                        "_meta": {"traceparent": TRACE},
                    },
                },
            ).json()["result"]
        event_id = posted["structuredContent"]["id"]
        wait_until("the webhook delivery", lambda: bool(self.receiver.seen), 45)
        delivered = self.receiver.seen[0]
        if json.loads(delivered["body"])["id"] != event_id:
            raise CheckFailed("the delivery is not the event the call wrote")
        headers = {k.lower(): v for k, v in delivered["headers"].items()}
        if headers.get("traceparent") != TRACE:
            raise CheckFailed(f"the delivery lost the call's trace: {headers.get('traceparent')}")
        if not headers.get("x-roomservice-signature", "").startswith("sha256="):
            raise CheckFailed("the delivery is not signed")

    def metrics(self) -> None:
        with self.https() as http:
            refused = http.get("/metrics")
            if refused.status_code != 403:
                raise CheckFailed(f"/metrics without its token: {refused.status_code}")
            scraped = http.get(
                "/metrics", headers={"authorization": f"Bearer {self.metrics_token}"}
            )
        if scraped.status_code != 200 or "roomservice_tool_calls" not in scraped.text:
            raise CheckFailed(f"/metrics with its token: {scraped.status_code}")

    def oauth(self) -> None:
        """Behind the proxy a client compares the door's address, the resource its metadata
        names and the issuer: each must be https://<this host>/..., not what uvicorn saw."""
        with self.https() as http:
            door = http.post("/oauth/mcp", json={})
            resource = http.get("/.well-known/oauth-protected-resource/oauth/mcp").json()
            issuer = http.get("/.well-known/oauth-authorization-server/oauth").json()
        metadata = f"{self.base}/.well-known/oauth-protected-resource/oauth/mcp"
        challenge = door.headers.get("www-authenticate", "")
        if door.status_code != 401 or f'resource_metadata="{metadata}"' not in challenge:
            raise CheckFailed(f"/oauth/mcp answered {door.status_code}, {challenge!r}")
        named = (resource.get("resource"), resource.get("authorization_servers"), issuer["issuer"])
        if named != (f"{self.base}/oauth/mcp", [f"{self.base}/oauth"], f"{self.base}/oauth"):
            raise CheckFailed(f"the OAuth metadata names {named}")

    def all_alive(self) -> None:
        dead = [name for name, p in self.processes.items() if p.poll() is not None]
        if dead:
            raise CheckFailed(f"stopped early: {', '.join(dead)}")

    # --- Stopping it ----------------------------------------------------------------------

    def stop(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in self.processes.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        self.receiver.stop()
        with contextlib.suppress(Exception):
            import psycopg

            with psycopg.connect(ADMIN_DATABASE_URL, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        if self.lent:
            with contextlib.suppress(Exception):
                import redis

                for db in (REDIS_DB, BROKER_DB):
                    redis.Redis.from_url(f"{REDIS_BASE_URL}/{db}").flushdb()

    def logs_tail(self) -> Iterator[str]:
        for name in self.processes:
            path = FOLDER / f"{name}.log"
            if path.exists():
                lines = path.read_text(errors="replace").splitlines()[-15:]
                yield f"--- {name} ({path}) ---"
                yield from lines


def _stop_on_signal(signum: int, frame: object) -> None:
    """SIGTERM, SIGHUP (a closed terminal, a CI timeout) end the check through its `finally`,
    which stops what it started: its children run in sessions of their own, so no signal to
    the check's own group reaches them."""
    raise SystemExit(128 + signum)


def main() -> int:
    print("prod-check: the production configuration, through TLS, on this machine")
    FOLDER.parent.mkdir(parents=True, exist_ok=True)
    with (FOLDER.parent / "prod-check.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("prod-check: another one is running here (var/prod-check.lock); wait for it")
            return 1
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _stop_on_signal)
        return _checked()


def _checked() -> int:
    check = ProdCheck()
    try:
        check.run()
    except CheckFailed as failed:
        print(f"\nprod-check FAILED: {failed}")
        for line in check.logs_tail():
            print(line)
        return 1
    finally:
        check.stop()
        if not os.environ.get("PRODCHECK_KEEP") and FOLDER.exists():
            shutil.rmtree(FOLDER, ignore_errors=True)
    total = sum(took for _, took in check.steps)
    print(f"prod-check passed: {len(check.steps)} steps in {total:.0f} s; all of it stopped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
