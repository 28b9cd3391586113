"""Claims and keyed retries across processes, against the real service: agents racing for
one task through two server processes get one winner; a leased claim whose owner goes quiet
lapses by the service's own periodic sweep (Celery beat), with nobody calling; and one
keyed write sent to both processes at once is written once."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rooms.keys import RoomKeys
from tests.conftest import new_room_id, redis_for_assertions
from tests.e2e.conftest import RunningServer, start_server
from tests.e2e.test_push import mcp, mcp_call, mcp_error

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture(scope="module")
def quick_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A second process on the same store whose leases may be 1 s and whose sweeper runs
    every second."""
    running = start_server(
        {"CLAIM_LEASE_MIN_SECONDS": "1", "CLAIM_SWEEP_SECONDS": "1"},
        Path(tmp_path_factory.mktemp("claims")),
    )
    yield running
    running.stop()


async def test_agents_racing_through_two_processes_get_exactly_one_winner(
    server: RunningServer, quick_server: RunningServer
) -> None:
    room = new_room_id("race")
    limits = httpx.Limits(max_connections=80, max_keepalive_connections=80)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        task = await mcp(http, server.url, "add_task", roomId=room, title="the one task")
        agents = [f"agent-{i:02d}" for i in range(40)]
        results = await asyncio.gather(
            *(
                mcp_call(
                    http,
                    (server if i % 2 else quick_server).url,
                    "claim_task",
                    {"roomId": room, "taskId": task["id"], "agentId": agent},
                )
                for i, agent in enumerate(agents)
            )
        )
        won = [r for r in results if not r["isError"]]
        assert len(won) == 1, [r["content"][0]["text"] for r in won]
        owner = json.loads(won[0]["content"][0]["text"])["owner"]
        for result in results:
            if result["isError"]:
                assert f'owned by "{owner}"' in mcp_error(result)
        for url in (server.url, quick_server.url):
            got = await mcp(http, url, "get_task", roomId=room, taskId=task["id"])
            assert got["owner"] == owner and got["version"] == 2


async def test_a_quiet_owners_claim_lapses_with_nobody_calling(quick_server: RunningServer) -> None:
    room = new_room_id("lapse")
    async with httpx.AsyncClient(timeout=30) as http:
        task = await mcp(http, quick_server.url, "add_task", roomId=room, title="t")
        claimed = await mcp(
            http,
            quick_server.url,
            "claim_task",
            roomId=room,
            taskId=task["id"],
            agentId="backend",
            leaseSeconds=1,
        )
        assert claimed["lease_seconds"] == 1
        # Nobody calls the service now: the test reads the store itself.
        r = redis_for_assertions()
        try:
            deadline = time.monotonic() + 30
            stored = json.loads(r.hget(RoomKeys(room).tasks, task["id"]))
            while stored["status"] != "pending" and time.monotonic() < deadline:
                await asyncio.sleep(0.2)  # bounded wait for the sweep, not a sleep to pass
                stored = json.loads(r.hget(RoomKeys(room).tasks, task["id"]))
        finally:
            r.close()
        assert stored["status"] == "pending" and stored["owner"] is None
        events = await mcp(http, quick_server.url, "read_events", roomId=room)
        expired = [e for e in events if e["type"] == "task_claim_expired"]
        assert len(expired) == 1 and expired[0]["payload"]["previousOwner"] == "backend"
        # The next agent claims it.
        again = await mcp(
            http, quick_server.url, "claim_task", roomId=room, taskId=task["id"], agentId="qa"
        )
        assert again["owner"] == "qa"


async def test_one_keyed_write_sent_to_two_processes_at_once_is_written_once(
    server: RunningServer, quick_server: RunningServer
) -> None:
    room = new_room_id("keyed")
    async with httpx.AsyncClient(timeout=30) as http:
        results = await asyncio.gather(
            *(
                mcp_call(
                    http,
                    (server if i % 2 else quick_server).url,
                    "add_task",
                    {"roomId": room, "title": "deploy", "idempotencyKey": "deploy-1"},
                )
                for i in range(16)
            )
        )
        texts = {r["content"][0]["text"] for r in results}
        assert len(texts) == 1 and not any(r["isError"] for r in results)
        plan = await mcp(http, server.url, "read_plan", roomId=room)
        assert [t["title"] for t in plan["tasks"]] == ["deploy"]
        other = await mcp_call(
            http,
            quick_server.url,
            "add_task",
            {"roomId": room, "title": "something else", "idempotencyKey": "deploy-1"},
        )
        assert 'idempotencyKey "deploy-1"' in mcp_error(other)


async def test_stale_writers_through_two_processes_get_exactly_one_landing(
    server: RunningServer, quick_server: RunningServer
) -> None:
    """expectedVersion across processes: of writers that all read version 1, one lands."""
    room = new_room_id("cas")
    async with httpx.AsyncClient(timeout=30) as http:
        task = await mcp(http, server.url, "add_task", roomId=room, title="t")
        results = await asyncio.gather(
            *(
                mcp_call(
                    http,
                    (server if i % 2 else quick_server).url,
                    "update_task",
                    {
                        "roomId": room,
                        "taskId": task["id"],
                        "status": "blocked",
                        "note": f"writer {i}",
                        "agentId": f"w{i}",
                        "expectedVersion": 1,
                    },
                )
                for i in range(16)
            )
        )
        landed = [r for r in results if not r["isError"]]
        assert len(landed) == 1
        for result in results:
            if result["isError"]:
                assert "at version 2" in mcp_error(result)
        got = await mcp(http, quick_server.url, "get_task", roomId=room, taskId=task["id"])
        assert got["version"] == 2 and len(got["notes"]) == 1


async def test_agents_leasing_overlapping_paths_through_two_processes_get_one_lease(
    server: RunningServer, quick_server: RunningServer
) -> None:
    room = new_room_id("leases")
    paths = ["src/**", "src/app.py", "src/*.py", "**/app.py"]
    limits = httpx.Limits(max_connections=80, max_keepalive_connections=80)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        results = await asyncio.gather(
            *(
                mcp(
                    http,
                    (server if i % 2 else quick_server).url,
                    "lease_claim",
                    roomId=room,
                    agentId=f"agent-{i:02d}",
                    path=paths[i % len(paths)],
                )
                for i in range(40)
            )
        )
        granted = [r for r in results if r["granted"]]
        assert len(granted) == 1
        holder = granted[0]["lease"]["holder"]
        assert all(r["conflicts"][0]["holder"] == holder for r in results if not r["granted"])
        listed = await mcp(http, server.url, "lease_list", roomId=room)
        assert [lease["holder"] for lease in listed["leases"]] == [holder]
