"""`make run`'s program: embedded Redis started and stopped with it, a demo key printed on
the first start only, and a second start that finds the first one's data."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import httpx
import pytest

from config.embedded_redis import EmbeddedRedis
from tests.e2e.conftest import WEB_ONLY, start_server

pytestmark = pytest.mark.e2e
KEY_RE = re.compile(r"rs_live_[A-Za-z0-9_-]{20,}")


def call(url: str, secret: str, name: str, arguments: dict[str, object]) -> dict[str, object]:
    r = httpx.post(
        f"{url}/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        },
        headers={"authorization": f"Bearer {secret}", "accept": "application/json"},
        timeout=10,
    )
    assert r.status_code == 200, r.text
    result: dict[str, object] = r.json()["result"]
    assert result["isError"] is False, result
    return result["structuredContent"]  # type: ignore[return-value]


@pytest.mark.single_redis
def test_serve_on_embedded_defaults_stops_cleanly_and_keeps_its_data() -> None:
    var = Path(tempfile.mkdtemp(prefix="rs-serve-"))
    env = {"API_KEYS": "", "REDIS_URL": "", "DATABASE_URL": ""}
    first = start_server(env, var_dir=var)
    try:
        keys = KEY_RE.findall(first.log.read_text())
        assert len(set(keys)) == 1  # one key, shown in the banner and its config snippets
        secret = keys[0]
        assert f"{first.url}/mcp" in first.log.read_text()
        task = call(
            first.url, secret, "add_task", {"roomId": "kept-room", "title": "survives a restart"}
        )
    finally:
        code = first.stop()
    assert code == 0
    embedded = EmbeddedRedis(folder=var / "redis")
    assert not embedded.answering()  # the embedded Redis went with it

    second = start_server(env, var_dir=var)
    try:
        assert KEY_RE.findall(second.log.read_text().split("Roomservice is running.")[-1]) == []
        plan = call(second.url, secret, "read_plan", {"roomId": "kept-room"})
        assert [t["id"] for t in plan["tasks"]] == [task["id"]]  # type: ignore[index, attr-defined]
    finally:
        assert second.stop() == 0
    assert not embedded.answering()


def test_client_addresses_come_only_from_a_trusted_proxy() -> None:
    """Behind the configured proxy, X-Forwarded-For names the client, so throttles are per
    real address; with no proxy configured the header is ignored, so an attacker cannot
    rotate addresses by writing it."""
    import httpx

    from tests.e2e.conftest import start_server

    def answers(url: str, forwarded_for: str, tries: int) -> str:
        """The sign-in page's answer to the last of `tries` wrong passwords."""
        with httpx.Client(base_url=url, timeout=10, follow_redirects=False) as client:
            client.get("/login")
            headers = {
                "X-Forwarded-For": forwarded_for,
                "X-CSRFToken": client.cookies.get("csrftoken", ""),
                "Referer": url,
            }
            text = ""
            for _ in range(tries):
                text = client.post(
                    "/login", data={"email": "x@example.com", "password": "no"}, headers=headers
                ).text
            return text

    throttled, wrong = "Too many failed attempts", "Wrong email or password"
    behind = start_server(
        {"FORWARDED_ALLOW_IPS": "127.0.0.1", "LOGIN_FAILURES_ALLOWED": "3", **WEB_ONLY}
    )
    try:
        assert throttled in answers(behind.url, "203.0.113.1", 7)
        assert wrong in answers(behind.url, "198.51.100.3", 1)  # another client is not held
    finally:
        behind.stop()
    direct = start_server({"LOGIN_FAILURES_ALLOWED": "3", **WEB_ONLY})
    try:
        assert throttled in answers(direct.url, "203.0.113.1", 7)
        # Rotating the header changes nothing: the socket's peer is the address.
        assert throttled in answers(direct.url, "198.51.100.3", 1)
    finally:
        direct.stop()


PUBLIC_DEFAULT_KEY = "dev-only-insecure-secret-key-change-me-in-production"
FORGE = (
    "import django; django.setup();"
    "from tenants.firstrun import demo_claim_token, operator_get, sign_in_path;"
    "print(sign_in_path(operator_get())); print(demo_claim_token())"
)


def _forged_links(database: Path, key: str) -> tuple[str, str]:
    """What another local user made (issue 31, P2): the project's own code run with the
    published development SECRET_KEY against the first run's database."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", FORGE],
        cwd=Path(__file__).resolve().parents[2],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECRET_KEY": key,
            "DATABASE_URL": f"sqlite:///{database}",
            "ROOMSERVICE_VAR_DIR": tempfile.mkdtemp(prefix="rs-attacker-"),
            "API_KEYS": "",
        },
        capture_output=True,
        text=True,
        check=True,
    )
    sign_in, claim = done.stdout.split()
    return sign_in, f"/signup?claim={claim}"


def _owner_only(var: Path) -> list[str]:
    """Everything under `var` that anyone but its owner may read, write or enter."""
    return [
        f"{path} {oct(path.lstat().st_mode & 0o777)}"
        for path in [var, *var.rglob("*")]
        if path.lstat().st_mode & 0o077 and path.name != "server.log"  # the test's own
    ]


@pytest.mark.single_redis
def test_a_first_run_keeps_its_data_and_secret_to_its_owner_and_forged_links_fail() -> None:
    var = Path(tempfile.mkdtemp(prefix="rs-serve-")) / "var"
    env = {"API_KEYS": "", "REDIS_URL": "", "DATABASE_URL": "", "SECRET_KEY": ""}
    first = start_server(env, var_dir=var)
    try:
        banner = first.log.read_text()
        sign_in = re.search(r"http://\S+(/signin/\S+)", banner)
        claim = re.search(r"http://\S+(/signup\?claim=\S+)", banner)
        assert sign_in and claim, banner
        secret = (var / "secret_key").read_text().strip()
        assert len(secret) >= 32 and secret != PUBLIC_DEFAULT_KEY
        # The worker's schedule is written too: wait for it (bounded), then look at all.
        import time

        deadline = time.monotonic() + 60
        while not list(var.glob("celerybeat*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(var.glob("celerybeat*"))
        assert (var / "redis" / "redis.sock").exists() and (var / "metrics").is_dir()
        assert _owner_only(var) == []

        # The attack: links derived from the published key (even with the database in
        # hand) are refused; the console's own work.
        forged_sign_in, forged_claim = _forged_links(
            var / "roomservice.sqlite3", PUBLIC_DEFAULT_KEY
        )
        with httpx.Client(base_url=first.url, timeout=10) as attacker:
            assert attacker.get(forged_sign_in).status_code == 400
            assert 'name="claim_demo"' not in attacker.get(forged_claim).text
        assert 'name="claim_demo"' in httpx.get(first.url + claim[1], timeout=10).text
        operator = httpx.Client(base_url=first.url, timeout=10)
        assert operator.get(sign_in[1]).status_code == 302
        assert operator.get("/rooms").status_code == 200
    finally:
        assert first.stop() == 0

    second = start_server(env, var_dir=var)
    try:
        # The same secret: the operator's session and the claim link outlive the restart.
        assert (var / "secret_key").read_text().strip() == secret
        operator.base_url = httpx.URL(second.url)
        assert operator.get("/rooms", follow_redirects=False).status_code == 200
        assert 'name="claim_demo"' in httpx.get(second.url + claim[1], timeout=10).text
    finally:
        operator.close()
        assert second.stop() == 0


@pytest.mark.single_redis  # both runs start the embedded Redis of make run
def test_a_second_run_on_a_busy_port_starts_nothing_and_says_so() -> None:
    import os
    import subprocess
    import sys

    running = start_server({"API_KEYS": "", "REDIS_URL": "", "DATABASE_URL": ""})
    var = Path(tempfile.mkdtemp(prefix="rs-second-"))
    try:
        port = running.url.rsplit(":", 1)[1]
        second = subprocess.run(
            [sys.executable, "-m", "config.serve"],
            cwd=Path(__file__).resolve().parents[2],
            env={
                **os.environ,
                "HOST": "127.0.0.1",
                "PORT": port,
                "API_KEYS": "",
                "REDIS_URL": "",
                "DATABASE_URL": "",
                "ROOMSERVICE_VAR_DIR": str(var),
            },
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode != 0
        assert second.stdout == ""  # no banner, no sign-in link, no key
        assert f"Port {port} on 127.0.0.1 is already in use by another Roomservice" in second.stderr
        assert f"PORT={int(port) + 1} make run" in second.stderr
        assert list(var.iterdir()) == []  # no database, no Redis, no secret: nothing started
        # The first one is untouched.
        assert httpx.get(f"{running.url}/health", timeout=10).status_code == 200
    finally:
        running.stop()
