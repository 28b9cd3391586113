"""`make run`'s program: embedded Redis started and stopped with it, a demo key printed on
the first start only, and a second start that finds the first one's data."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import httpx
import pytest

from config.embedded_redis import EmbeddedRedis
from tests.e2e.conftest import start_server

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
    behind = start_server({"FORWARDED_ALLOW_IPS": "127.0.0.1", "LOGIN_FAILURES_ALLOWED": "3"})
    try:
        assert throttled in answers(behind.url, "203.0.113.1", 7)
        assert wrong in answers(behind.url, "198.51.100.3", 1)  # another client is not held
    finally:
        behind.stop()
    direct = start_server({"LOGIN_FAILURES_ALLOWED": "3"})
    try:
        assert throttled in answers(direct.url, "203.0.113.1", 7)
        # Rotating the header changes nothing: the socket's peer is the address.
        assert throttled in answers(direct.url, "198.51.100.3", 1)
    finally:
        direct.stop()
