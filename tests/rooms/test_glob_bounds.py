"""Glob matching cannot be made slow (issue 22, point 1): patterns past the stated bounds
are refused saying which bound, and within them no Redis step matches a path at all (a
hostile pattern used to hold Redis's Lua for seconds, for every tenant); matching in the web
process never backtracks, and of agents claiming at once exactly one wins, nothing lost."""

from __future__ import annotations

import asyncio
import random
from functools import cache
from typing import Any

import pytest

from calls.runner import tool_run
from rooms import errors, paths
from rooms.paths import path_matches, path_normalize, paths_overlap, segment_matches
from rooms.refs import RoomRef
from tenants.capabilities import Caller
from tests.redis_monitor import commands_seen, primaries

pytestmark = pytest.mark.anyio

LONG = "a" * 255  # the longest segment a path may hold
HOSTILE = [  # each once froze Redis inside the Lua glob matcher (or would have)
    "*a*a*a*b",
    "*a*a*a*a*b/*a*a*a*a*b",
    "*a*a*a*a*a*a*a*b",
    "*" + "a?" * 7 + "b*",
    "**/*a*a*a*c/**/*a*a*a*c",
]


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


@pytest.mark.parametrize(
    ("raw", "bound"),
    [
        ("a" * 256, "segment longer than 255"),
        ("src/" + "*a" * 17, "more than 16"),
        ("*" + "a" * 64, "wildcard segment longer than 64"),
        ("/".join(["*"] * 17), "more than 16"),
    ],
)
async def test_patterns_past_the_bounds_are_refused_saying_which(
    team_a: Caller, room: RoomRef, raw: str, bound: str
) -> None:
    for tool, args in [
        ("lease_claim", {"agentId": "mallory", "path": raw}),
        ("lease_check", {"path": raw}),
        ("send_message", {"from": "mallory", "to": f"file:{raw}", "body": "hi"}),
    ]:
        with pytest.raises(errors.ToolArgumentsError, match=bound):
            await call(team_a, room, tool, **args)
    # Beside them, what real repositories use is taken as ever.
    got = await call(team_a, room, "lease_claim", agentId="alice", path="src/**/test_*.py")
    assert got["granted"]
    assert (await call(team_a, room, "lease_check", path="src/api/test_x.py"))["free"] is False


async def test_hostile_patterns_answer_right_and_no_redis_step_matches_a_path(
    team_a: Caller, room: RoomRef
) -> None:
    """100 leases on the longest paths a lease may hold, then the patterns that froze Redis:
    every answer is right, and the Redis side of each check is the same two reads however
    many leases the room holds (no per-lease work inside a script)."""
    held = [f"{LONG}/{'a' * 250}{i:04d}" for i in range(100)]
    for i, path in enumerate(held):
        got = await call(team_a, room, "lease_claim", agentId=f"holder{i % 5}", path=path)
        assert got["granted"], got
    async with commands_seen(primaries()) as watched:
        for pattern in HOSTILE:
            await watched.settle()
            before = len(watched.seen)
            checked = await call(team_a, room, "lease_check", path=pattern)
            await watched.settle()
            inside = [c for c in watched.seen[before:] if "lua]" in c and room.room_id in c]
            assert checked["free"] is True, pattern  # none of the leases ends in b or c
            assert len(inside) <= 2, inside
        claimed = await call(team_a, room, "lease_claim", agentId="mallory", path=HOSTILE[1])
        assert claimed["granted"] is True
        sent = await call(
            team_a,
            room,
            "send_message",
            **{"from": "mallory", "to": f"file:{HOSTILE[2]}"},
            body="anyone?",
        )
        assert sent["recipients"] == []
    # The legitimate use beside it: a pattern that does overlap finds every holder.
    wide = await call(team_a, room, "lease_check", path="*a*a*a*/*a*a*a*")
    assert {lease["holder"] for lease in wide["leases"]} >= {f"holder{i}" for i in range(5)}
    sent = await call(
        team_a,
        room,
        "send_message",
        **{"from": "mallory", "to": "file:*a*/*a*0099"},
        body="yours?",
    )
    assert sent["recipients"] == ["holder4"]


async def test_of_many_agents_claiming_at_once_one_wins_and_distinct_claims_all_land(
    team_a: Caller, room: RoomRef
) -> None:
    """Grants decided on a view are taken only on its generation: overlapping claims at
    once have exactly one winner; claims on distinct paths at once are all granted."""
    same = await asyncio.gather(
        *[
            call(team_a, room, "lease_claim", agentId=f"a{i}", path=f"lib/*{'' if i % 2 else 'x'}")
            for i in range(24)
        ]
    )
    assert sum(1 for got in same if got["granted"]) == 1
    distinct = await asyncio.gather(
        *[call(team_a, room, "lease_claim", agentId=f"b{i}", path=f"pkg{i}/**") for i in range(24)]
    )
    assert all(got["granted"] for got in distinct)
    listed = await call(team_a, room, "lease_list")
    assert listed["count"] == 25
    messages = await asyncio.gather(
        *[
            call(team_a, room, "send_message", **{"from": "z", "to": f"file:pkg{i}/a.py"}, body="x")
            for i in range(12)
        ],
        *[
            call(team_a, room, "lease_claim", agentId=f"c{i}", path=f"more{i}.py")
            for i in range(12)
        ],
    )
    assert [m["recipients"] for m in messages[:12]] == [[f"b{i}"] for i in range(12)]


# --- The matcher, against a reference that backtracks (small inputs only) ----------------


def _reference(pattern: str, path: str) -> bool:
    import re

    def seg(s: str) -> str:
        out, i = [], 0
        while i < len(s):
            c = s[i]
            if c == "*":
                out.append("[^/]*")
            elif c == "?":
                out.append("[^/]")
            elif c == "[" and s.find("]", i + 2) != -1:
                end = s.find("]", i + 2)
                body = s[i + 1 : end]
                neg = body.startswith("!")
                out.append("[" + ("^" if neg else "") + re.escape(body[neg:]) + "]")
                i = end
            else:
                out.append(re.escape(c))
            i += 1
        return "".join(out)

    pat, segs = pattern.split("/"), path.split("/")

    @cache
    def at(i: int, j: int) -> bool:
        if i == len(pat):
            return j == len(segs)
        if pat[i] == "**":
            return at(i + 1, j) or (j < len(segs) and at(i, j + 1))
        return j < len(segs) and re.fullmatch(seg(pat[i]), segs[j]) is not None and at(i + 1, j + 1)

    return at(0, 0)


def _random_pattern(rng: random.Random, glob: bool) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 4)):
        if glob and rng.random() < 0.2:
            if not parts or parts[-1] != "**":
                parts.append("**")
            continue
        seg = ""
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            if glob and r < 0.2:
                seg += "*"
            elif glob and r < 0.3:
                seg += "?"
            elif glob and r < 0.36:
                seg += rng.choice(["[a]", "[!a]", "[ab]"])
            else:
                seg += rng.choice("ab")
        parts.append(seg.replace("**", "*"))
    return "/".join(parts) or "a"


def test_the_matcher_agrees_with_a_backtracking_reference() -> None:
    rng = random.Random(22)
    for _ in range(6000):
        pattern, path = _random_pattern(rng, True), _random_pattern(rng, False)
        assert path_matches(pattern, path) == _reference(pattern, path), (pattern, path)


def test_overlap_never_says_no_where_a_path_matches_both() -> None:
    rng = random.Random(7)
    concrete = [_random_pattern(rng, False) for _ in range(300)]
    for _ in range(1500):
        a, b = _random_pattern(rng, True), _random_pattern(rng, True)
        if any(_reference(a, p) and _reference(b, p) for p in concrete):
            assert paths_overlap(a, b), (a, b)


def test_the_worst_case_the_bounds_allow_is_matched_without_backtracking() -> None:
    """Counted, not timed: the regex pieces a segment match runs are at most one per piece,
    and a hostile pattern at the bounds is decided by the same few searches."""
    pattern = path_normalize("*a*a*a*a*a*a*a*b/" + "*" + "a?" * 4 + "b*")
    assert len(pattern.split("/")[0]) <= paths.MAX_GLOB_SEGMENT
    path = f"{LONG}/{LONG}"
    assert not path_matches(pattern, path)
    assert segment_matches("*a*a*a*a*a*a*a*a", LONG)
    assert not segment_matches("*a*a*a*a*a*a*a*b", LONG)
    compiled = paths._glob_compile("*a*a*a*a*a*a*a*b")
    assert len(compiled.pieces) == 9  # eight stars: nine fixed-width pieces, no more work
