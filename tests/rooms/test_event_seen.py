"""The waiters one write wakes answer with one decoded, encoded event between them
(records.event_seen): each answer is still exactly what encoding it alone would give, for any
payload, and the shared renders stay within their bound whatever a tenant writes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from rooms import records
from rooms.refs import RoomRef
from rooms.services import events as events_services
from rooms.store import wakeups as wakeups_store

pytestmark = pytest.mark.anyio

ODD = {
    "text": 'é ✓ "quoted" \\ \u2028 \u0000 </script> 𝄞',
    "n": [1, 2.5, None, True],
    "nested": {"": {"deep": ["x" * 300]}},
}


def _told(value: Any) -> None:
    """Its text is dumps of it, and its quoted text what MCP's text content carries."""
    assert isinstance(value, records.KnownJson)
    assert value.json_text == records.dumps(value)
    assert '"' + value.json_quoted + '"' == json.dumps(value.json_text, ensure_ascii=False)


async def _waits(room: RoomRef, agents: list[str]) -> list[asyncio.Future[Any]]:
    waits = [
        asyncio.ensure_future(
            events_services.event_wait(
                room, agent_id=a, timeout_ms=30_000, limit=10, addressed_only=False
            )
        )
        for a in agents
    ]
    async with asyncio.timeout(10):
        while wakeups_store.wake_hub().waiting() < len(agents):
            await asyncio.sleep(0)
    return waits


async def test_one_write_wakes_many_with_one_shared_event_each_answer_exact(
    room: RoomRef,
) -> None:
    waits = await _waits(room, [f"agent-{i}" for i in range(20)])
    posted = await events_services.event_post(
        room, type_="note", from_="writer", to="all", payload=ODD
    )
    answers = await asyncio.wait_for(asyncio.gather(*waits), 30)
    events = [a["events"][0] for a in answers]
    assert all(e is events[0] for e in events)  # decoded once, for all of them
    assert events[0]["payload"] == ODD and events[0]["id"] == posted["id"]
    for answer in answers:
        _told(answer)
        assert json.loads(answer.json_text) == {
            "events": [json.loads(records.dumps(posted))],
            "cursor": posted["id"],
            "count": 1,
            "timedOut": False,
            "timeoutMs": 30_000,
            "capped": False,
        }


async def test_a_wait_nothing_woke_and_one_with_many_events_are_exact(room: RoomRef) -> None:
    quiet = await events_services.event_wait(
        room, agent_id="a", timeout_ms=50, limit=10, addressed_only=False
    )
    _told(quiet)
    assert quiet["events"] == [] and quiet["timedOut"] is True
    for n in range(3):
        await events_services.event_post(
            room, type_="note", from_="w", to="all", payload={**ODD, "n": n}
        )
    many = await events_services.event_wait(
        room, agent_id="a", timeout_ms=50, limit=10, addressed_only=False
    )
    _told(many)
    assert [e["payload"]["n"] for e in many["events"]] == [0, 1, 2]


def test_entries_with_one_id_and_other_fields_are_other_events() -> None:
    """Stream ids repeat across rooms (two writes in one millisecond): an event is shared by
    its whole entry, never by its id alone."""
    one = records.event_seen(("1700000000000-0", {"type": "a", "from": "x", "payload": "1"}))
    other = records.event_seen(("1700000000000-0", {"type": "b", "from": "y", "payload": "2"}))
    assert (one["type"], one["payload"]) == ("a", 1)
    assert (other["type"], other["payload"]) == ("b", 2)
    again = records.event_seen(("1700000000000-0", {"type": "a", "from": "x", "payload": "1"}))
    assert again is one


def test_the_shared_events_are_bounded_by_size_whatever_a_tenant_writes() -> None:
    """Shared by every tenant of the process: a huge event is never kept, and however many
    large ones are read, what is held stays under the bound."""
    big = ("1-0", {"type": "t", "payload": json.dumps("x" * (records.EVENTS_SEEN.entry_chars))})
    records.event_seen(big)
    assert records.EVENTS_SEEN.get((big[0], *big[1].items())) is None
    for n in range(3_000):
        entry = (f"{n}-0", {"type": "t", "from": "w", "payload": json.dumps("p" * 8_000)})
        event = records.event_seen(entry)
        assert event["id"] == f"{n}-0" and event.json_text == records.dumps(event)
        held, chars = records.EVENTS_SEEN.held()
        assert chars <= records.EVENTS_SEEN.chars
        assert held <= records.EVENTS_SEEN.most
