"""`make bench` section "search": what a search costs in rooms of 1k and 100k events.

Each room holds 100 tasks, 20 context entries and its events, every one written by the
service's own write step (the tools for the tasks and entries; for the events, a child
process with the server's settings calling rooms.store `event_append`, many at once), so
the index is the one the service keeps. Event texts are sentences
of a Zipf-distributed vocabulary of 3,000 words; one rare word sits in the oldest event of
each room, one in the newest. Five kinds of query are timed, alternating between the rooms
so the machine's noise weighs on both alike: a common word, a rare one (found in the
oldest event: the whole retained log is searched), two words, a phrase, a prefix.
Figures: p50 per query and room, the growth from 1k to 100k, and what the index costs in
Redis per event.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import redis

from bench import server, sizes, wire

EVENT_SIZES = (1_000, 100_000)
APPENDS_AT_ONCE = 64
CALLS = 200
VOCABULARY = 3_000
QUERIES = {
    "common word": "w0003",
    "rare word (oldest event)": "needleold",
    "two words": "w0010 w0042",
    "phrase": '"w0001 w0002"',
    "prefix": "w012*",
}


@dataclass
class SearchFigures:
    p50_ms: dict[tuple[str, int], float] = field(default_factory=dict)
    hits: dict[tuple[str, int], int] = field(default_factory=dict)
    fill_seconds: float = 0.0
    index_bytes_per_event: dict[int, float] = field(default_factory=dict)
    event_bytes_per_event: dict[int, float] = field(default_factory=dict)
    found_oldest: dict[int, bool] = field(default_factory=dict)
    found_newest: dict[int, bool] = field(default_factory=dict)


def _redis(srv: server.BenchServer) -> redis.Redis:
    return redis.Redis.from_url(srv.redis_url.replace("redis+socket://", "unix://"))


def _key(srv: server.BenchServer, room: str, part: str) -> str:
    return f"{srv.key_prefix}:{{{room}}}:{part}"


def _sentence(rng: random.Random, weights: list[float], words: list[str]) -> str:
    n = rng.randint(12, 25)
    picked = rng.choices(words, weights, k=n)
    if rng.random() < 0.3:
        picked[0:2] = ["w0001", "w0002"]  # the phrase, in a third of the events
    return " ".join(picked)


def _memory(r: redis.Redis, srv: server.BenchServer, room: str, parts: tuple[str, ...]) -> int:
    return sum(int(r.memory_usage(_key(srv, room, p), samples=0) or 0) for p in parts)


async def measure(srv: server.BenchServer, ep: wire.McpEndpoint, label: str) -> SearchFigures:
    fig = SearchFigures()
    r = _redis(srv)
    rng = random.Random(20261201)
    words = [f"w{i:04d}" for i in range(VOCABULARY)]
    weights = [1 / (i + 1) for i in range(VOCABULARY)]  # Zipf
    conn = ep.connection()
    rooms: dict[int, str] = {}
    try:
        t0 = time.perf_counter()
        for size in EVENT_SIZES:
            room = rooms[size] = f"{label}-search-{size}"
            writes: list[tuple[str, dict[str, Any]]] = [
                (
                    "add_task",
                    {
                        "title": f"Task {t}: {_sentence(rng, weights, words)[:60]}",
                        "description": _sentence(rng, weights, words),
                    },
                )
                for t in range(100)
            ]
            writes += [
                (
                    "write_context",
                    {
                        "type": "note",
                        "summary": _sentence(rng, weights, words)[:80],
                        "consuming_agents": [],
                        "payload": {"text": _sentence(rng, weights, words)},
                        "author": "bench",
                    },
                )
                for _ in range(20)
            ]
            for name, args in writes:
                res = await wire.call_tool(conn, ep, name, {"roomId": room, **args})
                if not res.ok:
                    raise RuntimeError(res.describe())
            stream_before = _memory(r, srv, room, ("events",))
            index_parts = ("search_events", "search_vocab")
            index_before = _memory(r, srv, room, index_parts)
            texts = [_sentence(rng, weights, words) for _ in range(size)]
            texts[0] += " needleold"
            texts[-1] += " needlenew"
            events_fill(srv, room, texts)
            fig.event_bytes_per_event[size] = (
                _memory(r, srv, room, ("events",)) - stream_before
            ) / size
            fig.index_bytes_per_event[size] = (
                _memory(r, srv, room, index_parts) - index_before
            ) / size
        fig.fill_seconds = time.perf_counter() - t0
        for size, room in rooms.items():
            for needle, into in (("needleold", fig.found_oldest), ("needlenew", fig.found_newest)):
                res = await wire.call_tool(conn, ep, "search", {"roomId": room, "q": needle})
                into[size] = res.ok and len(_hits(res)) == 1
        timed: dict[tuple[str, int], list[float]] = {}
        for _ in range(CALLS):
            for name, q in QUERIES.items():
                for size, room in rooms.items():
                    res = await wire.call_tool(conn, ep, "search", {"roomId": room, "q": q})
                    if not res.ok:
                        raise RuntimeError(res.describe())
                    timed.setdefault((name, size), []).append(res.seconds)
                    fig.hits[(name, size)] = len(_hits(res))
        for k, seconds in timed.items():
            fig.p50_ms[k] = statistics.median(seconds) * 1000
    finally:
        await conn.close()
        r.close()
    return fig


def events_fill(srv: server.BenchServer, room: str, texts: list[str]) -> None:
    """Runs `python -m bench.search` with the server's settings (its Redis, its key prefix,
    its event caps), which appends one event a text to the room."""
    env = {
        **os.environ,
        **sizes.SERVER_ENV,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "REDIS_KEY_PREFIX": srv.key_prefix,
        "REDIS_URL": srv.redis_url,
        "ROOMSERVICE_VAR_DIR": str(srv.var_dir),
    }
    done = subprocess.run(
        [sys.executable, "-m", "bench.search"],
        cwd=server.ROOT,
        env=env,
        input=json.dumps({"room": room, "texts": texts}),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench.search (events) failed: {done.stderr[-2000:]}")


async def events_append(room_id: str, texts: list[str]) -> None:
    """Each text as a progress event from "bench" to all, through the store's own step
    (what post_event runs), APPENDS_AT_ONCE at a time. Needs Django set up."""
    from rooms import turns
    from rooms.keys import RoomKeys
    from rooms.store import events as events_store

    keys = RoomKeys(room_id)
    turn = turns.turn_of_post("bench", "all")
    for start in range(0, len(texts), APPENDS_AT_ONCE):
        ids = await asyncio.gather(
            *(
                events_store.event_append(
                    keys,
                    type_="progress",
                    from_="bench",
                    to="all",
                    payload_json=json.dumps({"message": text, "n": start + n}),
                    reply_to=None,
                    turn=turn,
                    keyed=None,
                    actor=None,
                )
                for n, text in enumerate(texts[start : start + APPENDS_AT_ONCE])
            )
        )
        if None in ids:
            raise RuntimeError(f"an event of {room_id} was not appended")


async def _child(spec: dict[str, Any]) -> None:
    from rooms.store import engine as engine_store

    try:
        await events_append(spec["room"], spec["texts"])
    finally:
        await engine_store.close_client()


def _hits(res: Any) -> list[Any]:
    value = res.value if hasattr(res, "value") else None
    if isinstance(value, dict):
        return list(value.get("hits", []))
    return []


def section(fig: SearchFigures) -> list[str]:
    small, large = EVENT_SIZES
    lines = [
        f"Search (section search): rooms of {small:,} and {large:,} events (+100 tasks, 20 "
        f"context entries), {CALLS} calls per query and room, p50 ms (hits returned)",
    ]
    for name in QUERIES:
        a, b = fig.p50_ms.get((name, small), 0.0), fig.p50_ms.get((name, large), 0.0)
        lines.append(
            f"    {name:26s} {a:6.2f} ({fig.hits.get((name, small), 0):2d})   "
            f"{b:6.2f} ({fig.hits.get((name, large), 0):2d})   growth {b / a if a else 0:.2f}x"
        )
    for size in EVENT_SIZES:
        lines.append(
            f"    {size:>7,} events: oldest event's word found "
            f"{'yes' if fig.found_oldest.get(size) else 'NO'}, newest "
            f"{'yes' if fig.found_newest.get(size) else 'NO'}; index "
            f"{fig.index_bytes_per_event.get(size, 0):.0f} B per event (the event itself "
            f"{fig.event_bytes_per_event.get(size, 0):.0f} B)"
        )
    lines.append(f"    fill {fig.fill_seconds:.1f} s")
    lines.append("")
    return lines


if __name__ == "__main__":
    import django

    django.setup()
    asyncio.run(_child(json.load(sys.stdin)))
