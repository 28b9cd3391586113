"""`make bench` section "search": what a search costs in rooms of 1k and 100k events.

Each room holds 100 tasks, 20 context entries and its events, every one written by the
real write script (POST_EVENT_SCRIPT, pipelined straight into Redis for the events, the
tools for the rest), so the index is the one the service keeps. Event texts are sentences
of a Zipf-distributed vocabulary of 3,000 words; one rare word sits in the oldest event of
each room, one in the newest. Five kinds of query are timed, alternating between the rooms
so the machine's noise weighs on both alike: a common word, a rare one (found in the
oldest event: the whole retained log is searched), two words, a phrase, a prefix.
Figures: p50 per query and room, the growth from 1k to 100k, and what the index costs in
Redis per event.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import redis

from bench import server, wire
from rooms import scripts

EVENT_SIZES = (1_000, 100_000)
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
    source = "local WAKE_VERB = 'PUBLISH'\n" + scripts.POST_EVENT_SCRIPT
    sha = r.script_load(source)
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
            keys = [_key(srv, room, p) for p in ("events", "meta", "reads")]
            keys += [_key(srv, room, p) for p in ("search_events", "search_docs", "search_vocab")]
            ttl = 30 * 86_400_000
            args = [ttl, 1_100_000, 2**31, _key(srv, room, "wake")]
            stream_before = _memory(r, srv, room, ("events",))
            index_parts = ("search_events", "search_vocab")
            index_before = _memory(r, srv, room, index_parts)
            pipe = r.pipeline(transaction=False)
            for i in range(size):
                text = _sentence(rng, weights, words)
                if i == 0:
                    text += " needleold"
                if i == size - 1:
                    text += " needlenew"
                payload = json.dumps({"message": text, "n": i})
                pipe.evalsha(sha, len(keys), *keys, "progress", "bench", "all", payload, "", *args)
                if i % 2_000 == 1_999:
                    pipe.execute()
            pipe.execute()
            fig.event_bytes_per_event[size] = (
                _memory(r, srv, room, ("events",)) - stream_before
            ) / size
            fig.index_bytes_per_event[size] = (
                _memory(r, srv, room, index_parts) - index_before
            ) / size
        fig.fill_seconds = time.perf_counter() - t0
        await conn.close()  # idle past the server's keep-alive while filling
        conn = ep.connection()
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
