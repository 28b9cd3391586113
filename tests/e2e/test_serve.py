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
