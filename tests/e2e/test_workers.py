"""`WEB_CONCURRENCY=2`: two worker processes behind one port behave as one service. A
wait on one is woken by a write on the other, and a key revoked through one is refused
by both at once (each has it remembered, under its team's epoch). Which worker takes a
connection is the kernel's choice: the test opens fresh connections until both workers
have served, and checks that both did."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, start_server
from tests.e2e.test_push import mcp_call, mcp_value, redis_commands, scripts_loaded, until_reads

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
BOUND = 20.0


def _workers(parent: int) -> list[int]:
    """The uvicorn worker processes of `parent` (multiprocessing spawn children)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and b"spawn_main" in cmdline:
            found.append(int(stat.parent.name))
    return sorted(found)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


async def _fresh_call(url: str, secret: str, tool: str, args: dict[str, Any]) -> httpx.Response:
    """One call on a connection of its own (so the kernel picks a worker for it)."""
    async with httpx.AsyncClient(timeout=20) as http:
        return await http.post(
            f"{url}/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": tool, "arguments": args},
            },
            headers={"authorization": f"Bearer {secret}", "accept": "application/json"},
        )


async def test_two_worker_processes_behave_as_one_service() -> None:
    server = start_server({"WEB_CONCURRENCY": "2"})
    try:
        with anyio.fail_after(BOUND):
            while len(workers := _workers(server.process.pid)) < 2:
                await asyncio.sleep(0.1)
        assert len(workers) == 2, workers
        room = new_room_id("workers")

        # Both workers serve (fresh connections until each has spent CPU on calls).
        before = {w: _cpu_ticks(w) for w in workers}
        with anyio.fail_after(60):
            while not all(_cpu_ticks(w) > before[w] + 2 for w in workers):
                answers = await asyncio.gather(
                    *(
                        _fresh_call(server.url, TEAM_A_SECRET, "read_plan", {"roomId": room})
                        for _ in range(10)
                    )
                )
                assert all(a.status_code == 200 for a in answers)

        # Waits on many connections (so on both workers), woken by writes from others.
        agents = [f"w{i}" for i in range(8)]
        limits = httpx.Limits(max_connections=32, max_keepalive_connections=0)
        async with (
            httpx.AsyncClient(timeout=40, limits=limits) as http,
            redis_commands(room) as seen,
        ):
            await scripts_loaded(http, server.url, room)
            waits = [
                asyncio.get_running_loop().create_task(
                    mcp_call(
                        http,
                        server.url,
                        "wait_for_events",
                        {
                            "roomId": room,
                            "agentId": agent,
                            "timeoutMs": 15000,
                            "addressedOnly": True,
                        },
                    )
                )
                for agent in agents
            ]
            for agent in agents:
                await until_reads(seen, room, agent, 1)
            posted = [
                mcp_value(
                    (
                        await _fresh_call(
                            server.url,
                            TEAM_A_SECRET,
                            "post_event",
                            {"roomId": room, "type": "go", "from": "boss", "to": agent},
                        )
                    ).json()["result"]
                )
                for agent in agents
            ]
            with anyio.fail_after(BOUND):
                results = [mcp_value(r) for r in await asyncio.gather(*waits)]
        for agent, result, event in zip(agents, results, posted, strict=True):
            assert event["to"] == agent and result["events"] == [event], (agent, result)

        # A key revoked through one worker is refused by both on the next call.
        made = await _fresh_call(server.url, TEAM_A_SECRET, "read_plan", {"roomId": room})
        assert made.status_code == 200
        async with httpx.AsyncClient(timeout=20) as http:
            team = await http.post(
                f"{server.url}/api/v1/teams",
                json={"slug": new_room_id("wk")},
                headers={"authorization": f"Bearer {TEAM_A_SECRET}"},
            )
            assert team.status_code == 201, team.text
            owner = team.json()["key"]["secret"]
            minted = await http.post(
                f"{server.url}/api/v1/keys",
                json={"name": "doomed"},
                headers={"authorization": f"Bearer {owner}"},
            )
            doomed, doomed_id = minted.json()["secret"], minted.json()["id"]
        own_room = new_room_id("own")
        warm = await asyncio.gather(
            *(_fresh_call(server.url, doomed, "read_plan", {"roomId": own_room}) for _ in range(20))
        )
        assert all(a.status_code == 200 for a in warm)
        async with httpx.AsyncClient(timeout=20) as http:
            revoked = await http.post(
                f"{server.url}/api/v1/keys/{doomed_id}/revoke",
                headers={"authorization": f"Bearer {owner}"},
            )
            assert revoked.status_code == 200, revoked.text
        after = await asyncio.gather(
            *(_fresh_call(server.url, doomed, "read_plan", {"roomId": own_room}) for _ in range(20))
        )
        assert [a.status_code for a in after] == [401] * 20
        kept = await _fresh_call(server.url, owner, "read_plan", {"roomId": own_room})
        assert kept.status_code == 200
    finally:
        server.stop()
