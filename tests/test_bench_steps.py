"""`make bench` writes part of its data without the tools (issue 31, point 8): the search
section's 100k events, the hooks section's post_event step timed in Redis. Both must stay
the service's own step as it is today: these run them against the real test Redis, so a
change of a script's KEYS or ARGV fails here rather than in a bench run."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench import hooks as hooks_bench
from bench import search as search_bench
from bench import wakes as wakes_bench
from bench.stats import env_int, percentile
from calls.runner import tool_run
from rooms.keys import RoomKeys
from rooms.store import events as events_store
from tenants.capabilities import Caller
from tests import callers
from tests.conftest import new_room_id, redis_for_assertions

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.store]

BENCH = Path(__file__).resolve().parent.parent / "bench"


async def call(caller: Caller, room_id: str, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room_id, **args})


async def test_the_search_bench_appends_its_events_through_the_store(
    redis_client_closed: None,
) -> None:
    caller = await callers.team("bench-steps")
    room = new_room_id("bench-search")
    await call(caller, room, "add_task", title="a task", description="so the room exists")
    before = await events_store.event_count(RoomKeys(room))
    texts = ["w0001 w0002 needleold", *(f"w{n:04d} w0003" for n in range(150)), "needlenew"]
    await search_bench.events_append(room, texts)
    assert await events_store.event_count(RoomKeys(room)) == before + len(texts)
    for needle in ("needleold", "needlenew"):
        found = await call(caller, room, "search", q=needle)
        assert len(found["hits"]) == 1, found


@pytest.mark.parametrize("present", [False, True])
async def test_the_hooks_bench_runs_the_post_event_step_the_store_runs(
    present: bool, redis_client_closed: None
) -> None:
    caller = await callers.team("bench-steps")
    room = new_room_id("bench-presence")
    await call(caller, room, "add_task", title="a task", description="so the room exists")
    before = await events_store.event_count(RoomKeys(room))
    script, keys, args = hooks_bench.post_event_step(room, "p-one", present=present)
    r = redis_for_assertions()
    try:
        answer = r.eval(script, len(keys), *keys, *args)
        # The present wrapper made the act presence; without it, nothing marks the agent.
        assert (r.zscore(RoomKeys(room).presence, "p-one") is not None) is present
    finally:
        r.close()
    assert answer[0] == "ok", answer
    assert await events_store.event_count(RoomKeys(room)) == before + 1


def test_every_direct_script_call_in_the_bench_is_one_tested_here() -> None:
    """A new EVAL/EVALSHA in bench/ must come with its step builder and a test above; and
    no bench file assembles a script's text itself (the search section did, and missed the
    engine's TRACE)."""
    direct = {
        path.name
        for path in BENCH.glob("*.py")
        if re.search(r"\.(evalsha|eval|script_load)\(", path.read_text())
    }
    assert direct == {"hooks.py"}
    assembling = [p.name for p in BENCH.glob("*.py") if "local WAKE_VERB" in p.read_text()]
    assert assembling == []


@pytest.mark.parametrize(("agents", "rooms"), [(10_000, 1_000), (1_000, 100), (1_001, 100), (7, 3)])
def test_the_wakes_bench_spreads_its_agents_evenly_over_its_rooms(agents: int, rooms: int) -> None:
    """Every room has waiters, as many as the others give or take one: the section's
    expected wakes count each room's own."""
    per_room = Counter(wakes_bench.room_of(i, agents, rooms) for i in range(agents))
    assert set(per_room) == set(range(rooms))
    assert max(per_room.values()) - min(per_room.values()) <= 1


@pytest.mark.parametrize(
    ("p", "expected"), [(50, 50), (99, 99), (100, 100), (99.9, 100), (0.07 * 100, 7)]
)
def test_the_bench_percentile_is_the_nearest_rank(p: float, expected: float) -> None:
    assert percentile([float(v) for v in range(100, 0, -1)], p) == expected


@pytest.mark.parametrize("p", [0.1, 50, 99, 99.9, 100])
def test_the_bench_percentile_of_one_value_is_that_value(p: float) -> None:
    assert percentile([4.2], p) == 4.2


def test_the_bench_percentile_of_no_values_is_nan() -> None:
    assert math.isnan(percentile([], 99))


@pytest.mark.parametrize(("value", "expected"), [(None, 7), ("12", 12), ("x", 7)])
def test_the_bench_env_int_falls_back_to_its_default(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: int
) -> None:
    if value is None:
        monkeypatch.delenv("BENCH_TEST_INT", raising=False)
    else:
        monkeypatch.setenv("BENCH_TEST_INT", value)
    assert env_int("BENCH_TEST_INT", 7) == expected
