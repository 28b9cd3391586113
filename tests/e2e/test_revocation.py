"""Revoking a key or an invite refuses its very next request on every server process, and
ends its open streams and pending waits there too."""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
from pathlib import Path

import anyio
import httpx
import pytest

from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, WEB_ONLY, migrated_database, start_server

pytestmark = pytest.mark.e2e


def mcp(url: str, secret: str, tool: str, arguments: dict[str, object]) -> httpx.Response:
    return httpx.post(
        f"{url}/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        },
        headers={"authorization": f"Bearer {secret}", "accept": "application/json"},
        timeout=10,
    )


def api(
    url: str, secret: str, method: str, path: str, body: dict[str, object] | None = None
) -> httpx.Response:
    return httpx.request(
        method, f"{url}{path}", json=body, headers={"authorization": f"Bearer {secret}"}, timeout=10
    )


def test_revocation_reaches_every_process_on_the_next_request() -> None:
    shared = Path(tempfile.mkdtemp(prefix="rs-two-"))
    shutil.copyfile(migrated_database(), shared / "shared.sqlite3")
    env = {"DATABASE_URL": f"sqlite:///{shared / 'shared.sqlite3'}", **WEB_ONLY}
    one = start_server(env, var_dir=shared / "one")
    two = start_server(env, var_dir=shared / "two")
    try:
        team = api(one.url, TEAM_A_SECRET, "POST", "/api/v1/teams", {"slug": new_room_id("two")})
        assert team.status_code == 201, team.text
        key = team.json()["key"]
        room = api(one.url, key["secret"], "POST", "/api/v1/rooms", {})
        room_id = room.json()["roomId"]
        invite = api(
            one.url, key["secret"], "POST", f"/api/v1/rooms/{room_id}/invites", {"label": "guest"}
        ).json()

        # Both processes know both credentials (and have them cached now).
        for server in (one, two):
            for secret in (key["secret"], invite["secret"]):
                r = mcp(server.url, secret, "heartbeat", {"roomId": room_id, "agentId": "a"})
                assert r.status_code == 200 and r.json()["result"]["isError"] is False

        revoked = api(
            one.url, key["secret"], "POST", f"/api/v1/rooms/{room_id}/invites/{invite['id']}/revoke"
        )
        assert revoked.status_code == 200 and revoked.json()["revoked_at"]
        assert (
            mcp(
                two.url, invite["secret"], "heartbeat", {"roomId": room_id, "agentId": "a"}
            ).status_code
            == 401
        )
        assert (
            mcp(
                one.url, invite["secret"], "heartbeat", {"roomId": room_id, "agentId": "a"}
            ).status_code
            == 401
        )

        # A second key revokes the first (a key may revoke itself too; here the other way).
        spare = api(one.url, key["secret"], "POST", "/api/v1/keys", {"name": "spare"}).json()
        revoked = api(two.url, spare["secret"], "POST", f"/api/v1/keys/{key['id']}/revoke")
        assert revoked.status_code == 200
        assert (
            mcp(
                one.url, key["secret"], "heartbeat", {"roomId": room_id, "agentId": "a"}
            ).status_code
            == 401
        )
        assert api(two.url, key["secret"], "GET", "/api/v1/me").status_code == 401
        assert mcp(one.url, spare["secret"], "read_plan", {"roomId": room_id}).status_code == 200
    finally:
        one.stop()
        two.stop()


async def parked(url: str, bound: float = 15.0) -> None:
    """Returns once the server at `url` holds a waiting call (its open waiters, in /metrics):
    a bounded wait on that condition."""
    with anyio.fail_after(bound):
        while True:
            metrics = httpx.get(f"{url}/metrics", timeout=5).text
            if re.search(r'^roomservice_open\{kind="waiters"\} [1-9]', metrics, re.M):
                return
            await anyio.sleep(0.02)


class StreamReader:
    """Reads one SSE response across several bounded waits (one byte iterator, one buffer)."""

    def __init__(self, response: httpx.Response) -> None:
        self.chunks = response.aiter_bytes()
        self.buffer = b""

    async def until(self, marker: bytes, bound: float = 15.0) -> bytes:
        """Everything up to and including `marker`, consumed from the buffer."""
        with anyio.fail_after(bound):
            while marker not in self.buffer:
                self.buffer += await self.chunks.__anext__()
        end = self.buffer.index(marker) + len(marker)
        found, self.buffer = self.buffer[:end], self.buffer[end:]
        return found


@pytest.mark.anyio
async def test_a_key_revoked_on_one_process_ends_its_stream_and_wait_on_another() -> None:
    shared = Path(tempfile.mkdtemp(prefix="rs-live-"))
    shutil.copyfile(migrated_database(), shared / "shared.sqlite3")
    env = {"DATABASE_URL": f"sqlite:///{shared / 'shared.sqlite3'}", **WEB_ONLY}
    one = start_server(env, var_dir=shared / "one")
    two = start_server(env, var_dir=shared / "two")
    try:
        team = api(one.url, TEAM_A_SECRET, "POST", "/api/v1/teams", {"slug": new_room_id("lv")})
        key = team.json()["key"]
        spare = api(one.url, key["secret"], "POST", "/api/v1/keys", {"name": "spare"}).json()
        room_id = api(one.url, key["secret"], "POST", "/api/v1/rooms", {}).json()["roomId"]
        auth = {"authorization": f"Bearer {key['secret']}"}
        async with (
            httpx.AsyncClient(timeout=30) as http,
            http.stream(
                "GET", f"{two.url}/api/v1/rooms/{room_id}/events/stream", headers=auth
            ) as stream,
        ):
            assert stream.status_code == 200
            reader = StreamReader(stream)
            opened = await reader.until(b"\n\n")
            assert opened.startswith(b"retry: 2000")
            wait = asyncio.ensure_future(
                http.post(
                    f"{two.url}/api/v1/rooms/{room_id}/tools/wait_for_events",
                    json={"agentId": "a", "timeoutMs": 30_000},
                    headers=auth,
                )
            )
            post = mcp(
                one.url,
                key["secret"],
                "post_event",
                {"roomId": room_id, "type": "t", "from": "b", "payload": {}},
            )
            assert post.json()["result"]["isError"] is False
            await reader.until(b"data: ")
            waited = await wait  # the first write wakes it; park it again
            assert waited.status_code == 200 and waited.json()["count"] == 1
            wait = asyncio.ensure_future(
                http.post(
                    f"{two.url}/api/v1/rooms/{room_id}/tools/wait_for_events",
                    json={"agentId": "a", "timeoutMs": 30_000},
                    headers=auth,
                )
            )
            await parked(two.url)  # on process two; revoke on process one
            revoked = api(one.url, spare["secret"], "POST", f"/api/v1/keys/{key['id']}/revoke")
            assert revoked.status_code == 200
            await reader.until(b"event: revoked")
            with anyio.fail_after(15):
                refused = await wait
        assert refused.status_code == 401
        assert refused.json()["code"] == "credential_revoked"
    finally:
        one.stop()
        two.stop()


@pytest.mark.anyio
async def test_every_stream_ends_after_its_lifetime_and_resumes_without_a_gap() -> None:
    server = start_server(
        {"SSE_MAX_LIFETIME_SECONDS": "2", "SSE_KEEPALIVE_SECONDS": "1", **WEB_ONLY}
    )
    try:
        room_id = new_room_id("life")
        mcp(server.url, TEAM_A_SECRET, "heartbeat", {"roomId": room_id, "agentId": "a"})
        auth = {"authorization": f"Bearer {TEAM_A_SECRET}"}
        async with httpx.AsyncClient(timeout=30) as http:
            with anyio.fail_after(15):
                async with http.stream(
                    "GET", f"{server.url}/api/v1/rooms/{room_id}/events/stream", headers=auth
                ) as stream:
                    assert stream.status_code == 200
                    body = b"".join([chunk async for chunk in stream.aiter_bytes()])
        # It ended on its own (the client reconnects, and is checked again then).
        assert body.startswith(b"retry: 2000") and b"keep-alive" in body
    finally:
        server.stop()
