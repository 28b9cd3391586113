"""What a waiting call keeps (issue 34: a waiting call's memory is what an idle agent costs
the web process, for as long as it waits): nothing of its request but what the call needs.
Its JSON, its headers and the middleware's copies of them are let go before the wait: no
frame of ours along the call's awaits holds them."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from types import FrameType

import httpx
import pytest

from config.asgi import application
from rooms.store import wakeups as wakeups_store
from tenants import services
from tenants.db import db_run
from tenants.models import Team
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]

ROOT = Path(__file__).resolve().parents[2]


def _key_and_room() -> tuple[str, str]:
    team: Team = services.team_ensure("holds")
    room = services.room_create(team=team, room_id=new_room_id("holds"), actor="test")
    return services.api_key_create(team=team, name="k").secret, room.room_id


def _ours(frame: FrameType) -> bool:
    path = Path(frame.f_code.co_filename)
    return path.is_relative_to(ROOT) and ".venv" not in path.parts


def _has(value: object, markers: set[str], depth: int = 0) -> bool:
    if isinstance(value, str):
        return any(m in value for m in markers)
    if isinstance(value, bytes | bytearray):
        return any(m.encode() in value for m in markers)
    if depth > 6:
        return False
    if isinstance(value, dict):
        return any(
            _has(k, markers, depth + 1) or _has(v, markers, depth + 1) for k, v in value.items()
        )
    if isinstance(value, list | tuple | set | frozenset):
        return any(_has(v, markers, depth + 1) for v in value)
    return False


def _holding(task: asyncio.Future[object], *markers: str) -> list[str]:
    """Each local of our code's frames, along the waiting call's chain of awaits, that holds
    one of `markers` (in text, bytes, or a dict or list of them)."""
    found = []
    step: object = task.get_coro() if isinstance(task, asyncio.Task) else None
    while step is not None:
        frame = getattr(step, "cr_frame", None) or getattr(step, "gi_frame", None)
        if frame is not None and _ours(frame):
            for name, value in frame.f_locals.items():
                # The ASGI scope is the server's, which keeps it for the request anyway.
                if name != "scope" and _has(value, set(markers)):
                    found.append(f"{frame.f_code.co_qualname}: {name}")
        step = getattr(step, "cr_await", None) or getattr(step, "gi_yieldfrom", None)
    return found


async def test_a_waiting_call_keeps_nothing_of_its_request_but_its_arguments(
    redis_client_closed: None,
) -> None:
    secret, room = await db_run(_key_and_room)
    in_meta, in_header = secrets.token_hex(8), secrets.token_hex(8)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "wait_for_events",
            "arguments": {"roomId": room, "agentId": "waiter", "timeoutMs": 30_000},
            "_meta": {"probe": in_meta},
        },
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "authorization": f"Bearer {secret}",
        "x-probe": in_header,
    }
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        waiting = asyncio.ensure_future(
            client.post("/mcp", headers=headers, content=json.dumps(body))
        )
        async with asyncio.timeout(10):
            while wakeups_store.wake_hub().waiting() < 1:
                await asyncio.sleep(0.01)
        assert not waiting.done()
        held = _holding(waiting, in_meta, in_header)
        assert held == []
        # The call itself is whole: a write wakes it, and it answers the write.
        post = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "post_event",
                "arguments": {"roomId": room, "type": "note", "from": "writer", "payload": {}},
            },
        }
        await client.post("/mcp", headers=headers, content=json.dumps(post))
        answer = (await asyncio.wait_for(waiting, 30)).json()
    woken = answer["result"]["structuredContent"]
    assert [e["type"] for e in woken["events"]] == ["note"] and woken["timedOut"] is False
