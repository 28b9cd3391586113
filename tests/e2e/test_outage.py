"""A Redis outage, as the service lives through one: /health names what is down within a
second and recovers without a restart; tool calls say the room store is unavailable and to
retry, within a second; a wait honours its timeout while the store's pub/sub is gone."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import httpx
import pytest

from config.embedded_redis import EmbeddedRedis
from rooms.errors import STORE_UNAVAILABLE
from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, WEB_ONLY, start_server

pytestmark = pytest.mark.e2e


def call(url: str, tool: str, arguments: dict[str, object], timeout: float) -> httpx.Response:
    return httpx.post(
        f"{url}/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        },
        headers={"authorization": f"Bearer {TEAM_A_SECRET}", "accept": "application/json"},
        timeout=timeout,
    )


def health(url: str) -> httpx.Response:
    # The bound is the client's timeout: an answer later than that fails the test.
    return httpx.get(f"{url}/health", timeout=1.5)


def until(check: object, bound: float = 20.0) -> None:
    """Poll `check()` until it is true (a bounded wait on a condition)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


@pytest.mark.single_redis
def test_a_redis_outage_is_named_bounded_and_recovered_from_without_a_restart() -> None:
    redis_dir = Path(tempfile.mkdtemp(prefix="rs-outage-"))
    own = EmbeddedRedis(folder=redis_dir, persistent=False)
    url = own.start()
    server = start_server(
        {
            "REDIS_URL": url,
            **WEB_ONLY,  # only Redis matters here
            "SSE_KEEPALIVE_SECONDS": "1",
        }
    )
    try:
        room = new_room_id("outage")
        ok = call(server.url, "heartbeat", {"roomId": room, "agentId": "a"}, timeout=5)
        assert ok.json()["result"]["isError"] is False
        assert health(server.url).json()["status"] == "ok"
        stream = httpx.Client(timeout=10)
        opened = stream.stream(
            "GET",
            f"{server.url}/api/v1/rooms/{room}/events/stream",
            headers={"authorization": f"Bearer {TEAM_A_SECRET}"},
        )
        response = opened.__enter__()
        assert response.status_code == 200
        chunks = response.iter_bytes()
        assert next(chunks).startswith(b"retry: 2000")

        own.stop()  # Redis goes away

        # The open stream says so and ends (its client reconnects with Last-Event-ID later).
        rest = b"".join(chunks)  # bounded by the client's read timeout
        assert b"event: unavailable" in rest
        opened.__exit__(None, None, None)
        stream.close()

        # Reported within a second (the answer is reused for at most 0.25 s).
        until(lambda: health(server.url).status_code == 503, bound=1.0)
        down = health(server.url)
        assert down.status_code == 503
        assert "redis" in down.json()["failing"] and down.json()["checks"]["database"] == "ok"
        refused = call(server.url, "read_plan", {"roomId": room}, timeout=1.5)
        assert refused.status_code == 200
        result = refused.json()["result"]
        assert result["isError"] is True and result["content"][0]["text"] == STORE_UNAVAILABLE
        waited = call(
            server.url,
            "wait_for_events",
            {"roomId": room, "agentId": "a", "timeoutMs": 2000},
            timeout=4.0,
        )
        assert waited.json()["result"]["content"][0]["text"] == STORE_UNAVAILABLE

        own.start()  # back, on the same socket

        until(lambda: health(server.url).status_code == 200)
        until(
            lambda: (
                call(server.url, "read_plan", {"roomId": room}, timeout=5).json()["result"][
                    "isError"
                ]
                is False
            )
        )
        # Its pub/sub is back too: a wait is woken by a write again.
        import threading

        woken: dict[str, object] = {}

        def wait() -> None:
            woken["r"] = call(
                server.url,
                "wait_for_events",
                {"roomId": room, "agentId": "w", "timeoutMs": 10_000},
                timeout=15,
            ).json()

        call(server.url, "get_unread_events", {"roomId": room, "agentId": "w"}, timeout=5)
        thread = threading.Thread(target=wait)
        thread.start()
        until(
            lambda: (
                call(
                    server.url,
                    "post_event",
                    {"roomId": room, "type": "t", "from": "b", "payload": {}},
                    timeout=5,
                ).status_code
                == 200
            )
        )
        thread.join(timeout=15)
        result = woken["r"]["result"]  # type: ignore[index]
        assert result["isError"] is False and result["structuredContent"]["count"] >= 1
    finally:
        server.stop()
        own.stop()
