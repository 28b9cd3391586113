"""The canonical producer-consumer handoff (docs/protocol.md "The canonical workflow"),
driven step by step by two agents with the official `mcp` client over real HTTP, in both
protocol revisions."""

from __future__ import annotations

import pytest

from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, RunningServer
from tests.e2e.mcp_clients import MODES, call, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CONTRACT = {
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
}


@pytest.mark.parametrize("mode", MODES)
async def test_canonical_handoff_between_two_agents(server: RunningServer, mode: str) -> None:
    room = new_room_id("handoff")
    async with (
        mcp_client(server.mcp_url, TEAM_A_SECRET, mode) as backend,
        mcp_client(server.mcp_url, TEAM_A_SECRET, mode) as frontend,
    ):
        names = {t.name for t in (await backend.list_tools()).tools}
        assert {"read_plan", "get_my_summary", "acquire_lock", "reply_to_event"} <= names
        await frontend.list_tools()

        # The operator's plan: the auth API, then the login UI that depends on it.
        api = await call(backend, "add_task", roomId=room, title="auth API", description="")
        ui = await call(backend, "add_task", roomId=room, title="login UI", depends_on=[api["id"]])
        await call(
            backend, "update_task", roomId=room, taskId=ui["id"], status="pending", owner="frontend"
        )

        # B: heartbeat, lock the plan, claim the API task, release.
        beat = await call(backend, "heartbeat", roomId=room, agentId="backend")
        assert [p["agentId"] for p in beat["presence"]] == ["backend"]
        lock = await call(backend, "acquire_lock", roomId=room, resource="plan", agentId="backend")
        assert lock["acquired"] is True and lock["holder"] == "backend"
        # Holding the advisory lock does not block the holder's own plan write.
        claimed = await call(
            backend,
            "update_task",
            roomId=room,
            taskId=api["id"],
            status="in_progress",
            owner="backend",
        )
        assert claimed["status"] == "in_progress" and claimed["owner"] == "backend"
        released = await call(
            backend, "release_lock", roomId=room, resource="plan", agentId="backend"
        )
        assert released["released"] is True

        # B publishes the contract for the frontend, then finishes the API.
        contract = await call(
            backend,
            "write_context",
            roomId=room,
            type="api_contract",
            summary="auth API v1",
            consuming_agents=["frontend"],
            payload=CONTRACT,
            author="backend",
        )
        assert contract["version"] == "1.0"
        await call(backend, "update_task", roomId=room, taskId=api["id"], status="done")

        # F: cold start in one call.
        await call(frontend, "heartbeat", roomId=room, agentId="frontend")
        summary = await call(frontend, "get_my_summary", roomId=room, agentId="frontend")
        assert [t["id"] for t in summary["myTasks"]] == [ui["id"]]
        kinds = [e["type"] for e in summary["unreadEvents"]]
        assert "context_available" in kinds and kinds.count("task_updated") == 3
        available = next(e for e in summary["unreadEvents"] if e["type"] == "context_available")
        assert available["to"] == "frontend" and available["payload"]["id"] == contract["id"]
        assert summary["newContextCount"] == 1
        assert {p["agentId"] for p in summary["presence"] if p["status"] == "online"} == {
            "backend",
            "frontend",
        }
        unblocked = await call(frontend, "get_unblocked_tasks", roomId=room, agentId="frontend")
        assert [t["id"] for t in unblocked] == [ui["id"]]

        # F reads the contract by type, starts the UI, and asks for a change.
        contracts = await call(frontend, "list_context", roomId=room, type="api_contract")
        assert contracts[0]["payload"]["endpoints"][0]["path"] == "/login"
        await call(frontend, "update_task", roomId=room, taskId=ui["id"], status="in_progress")
        request = await call(
            frontend,
            "write_context",
            roomId=room,
            type="change_request",
            summary="need a logout endpoint",
            consuming_agents=["backend"],
            payload={
                "requested_by": "frontend",
                "target_agent": "backend",
                "description": "Add POST /logout",
                "urgency": "medium",
                "blocking_task_id": ui["id"],
            },
            author="frontend",
        )

        # B catches up: only what is addressed to it (or to all) — the contract's notice went
        # to the frontend, the change request's comes to the backend.
        unread = await call(
            backend, "get_unread_events", roomId=room, agentId="backend", addressedOnly=True
        )
        assert all(e["to"] in ("all", "backend") for e in unread["events"])
        notices = [e for e in unread["events"] if e["type"] == "context_available"]
        assert [e["payload"]["id"] for e in notices] == [request["id"]]
        change_event = notices[-1]
        assert change_event["to"] == "backend"
        again = await call(
            backend, "get_unread_events", roomId=room, agentId="backend", addressedOnly=True
        )
        assert again["events"] == [] and again["count"] == 0

        # B revises the contract (v1.1) and replies to the request's event.
        endpoints = [
            *CONTRACT["endpoints"],  # type: ignore[misc]
            {
                "method": "POST",
                "path": "/logout",
                "response": {},
                "auth_required": True,
                "description": "End the session",
            },
        ]
        revised = await call(
            backend,
            "update_context",
            roomId=room,
            id=contract["id"],
            author="backend",
            payload={**CONTRACT, "version": "1.1", "endpoints": endpoints},
            expectedVersion="1.0",
        )
        assert revised["version"] == "1.1"
        reply = await call(
            backend,
            "reply_to_event",
            roomId=room,
            replyToId=change_event["id"],
            type="change_done",
            **{"from": "backend"},
            to="frontend",
            payload={"contextId": contract["id"], "version": "1.1"},
        )
        assert reply["reply_to_id"] == change_event["id"]

        # F sees the update and the reply, exactly once, and builds against v1.1.
        news = await call(frontend, "get_unread_events", roomId=room, agentId="frontend")
        types = [e["type"] for e in news["events"]]
        assert types.count("context_updated") == 1 and types.count("change_done") == 1
        current = await call(frontend, "read_context", roomId=room, id=contract["id"])
        assert [e["path"] for e in current["payload"]["endpoints"]] == ["/login", "/logout"]
        done = await call(frontend, "update_task", roomId=room, taskId=ui["id"], status="done")
        assert done["status"] == "done"
        plan = await call(frontend, "read_plan", roomId=room)
        assert [t["status"] for t in plan["tasks"]] == ["done", "done"]
