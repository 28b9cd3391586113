"""Revoking a key or an invite refuses its very next request on every server process."""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, start_server

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
    env = {"DATABASE_URL": f"sqlite:///{shared / 'shared.sqlite3'}"}
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
