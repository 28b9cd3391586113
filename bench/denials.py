"""Bench section "room denials": with first-touch claiming off, another team's room, an
unknown id and a malformed id must be refused alike — the same answer (checked: a
difference is a correctness failure) and no time difference a client could use.

One server runs with ROOM_CLAIM_ON_FIRST_TOUCH=false. Team bench2 creates a room; team
bench then calls read_plan on it, on one unknown id asked again and again, on a fresh
unknown id each time, and on a malformed id, TRIES times each, interleaved so the machine's
background weighs on all four alike.
"""

from __future__ import annotations

import json
import random
import statistics
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import server, wire
from bench.stats import percentile

TRIES = 100
CASES = (
    "another team's room",
    "an unknown id, again",
    "a new unknown id each time",
    "a malformed id",
)


@dataclass
class DenialFigures:
    times_ms: dict[str, list[float]] = field(default_factory=dict)
    answers: dict[str, set[str]] = field(default_factory=dict)
    ran: bool = False

    def stat(self, case: str) -> tuple[float, float, float]:
        values = self.times_ms[case]
        return statistics.median(values), percentile(values, 90), statistics.mean(values)


def _create_room(srv: server.BenchServer, secret: str, room_id: str) -> None:
    req = urllib.request.Request(
        f"{srv.base_url}/api/v1/rooms",
        data=json.dumps({"roomId": room_id}).encode(),
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 201


def _text(resp: wire.Response) -> str:
    try:
        result = json.loads(resp.body)["result"]
        return str(result["content"][0]["text"])
    except (ValueError, KeyError, IndexError, TypeError):
        return f"HTTP {resp.status} {resp.body[:200]!r}"


async def measure(var_root: Path, keys: server.Keys, key_prefix: str, fails: Any) -> DenialFigures:
    figs = DenialFigures()
    srv = server.start(
        "thin",
        var_root,
        keys,
        key_prefix,
        name="denials",
        extra_env={"ROOM_CLAIM_ON_FIRST_TOUCH": "false"},
    )
    try:
        theirs = f"bench-theirs-{random.randrange(10**9)}"
        _create_room(srv, keys.other_secret, theirs)
        ep = wire.McpEndpoint(srv.host, srv.port, keys.secret)
        conn = ep.connection()
        await conn.open()
        again = f"bench-ghost-{random.randrange(10**9)}"
        ids = {
            CASES[0]: lambda i: theirs,
            CASES[1]: lambda i: again,
            CASES[2]: lambda i: f"bench-new-{i}-{random.randrange(10**9)}",
            CASES[3]: lambda i: "Not.A__Room",
        }
        for case in CASES:
            figs.times_ms[case] = []
            figs.answers[case] = set()
        for warm in range(10):  # connections, caches, the interpreter
            for case in CASES:
                await conn.request(ep.raw_call("read_plan", {"roomId": ids[case](-warm)}))
        for i in range(TRIES):
            order = list(CASES)
            random.shuffle(order)
            for case in order:
                raw = ep.raw_call("read_plan", {"roomId": ids[case](i)})
                import time

                t0 = time.perf_counter()
                resp = await conn.request(raw)
                figs.times_ms[case].append((time.perf_counter() - t0) * 1000)
                figs.answers[case].add(_text(resp))
        await conn.close()
        answers = set().union(*figs.answers.values())
        if len(answers) != 1:
            fails.add("room denials differ", " | ".join(sorted(answers))[:600])
        figs.ran = True
    finally:
        srv.stop()
    return figs


def section(figs: DenialFigures) -> list[str]:
    from bench.run import explain, table

    lines = [f"7. Room denials with claiming off: read_plan refused, {TRIES} tries each (ms)"]
    lines += explain(
        "ROOM_CLAIM_ON_FIRST_TOUCH=false. The four cases are interleaved in a random order each",
        "round, on one keep-alive connection. Every answer must be the same one denial text;",
        "the times should differ by no more than the noise between runs.",
    )
    rows = [["case", "p50", "p90", "mean", "answer"]]
    base = figs.stat(CASES[0])[0] if figs.ran else 0.0
    for case in CASES:
        if not figs.ran:
            continue
        p50, p90, mean = figs.stat(case)
        same = "the one denial" if len(figs.answers[case]) == 1 else "DIFFERS"
        rows.append([case, f"{p50:.2f}", f"{p90:.2f}", f"{mean:.2f}", same])
    if figs.ran:
        spread = max(figs.stat(c)[0] for c in CASES) - min(figs.stat(c)[0] for c in CASES)
        lines += [
            table(rows),
            f"   p50 spread across the four cases: {spread:.3f} ms "
            f"({spread / base * 100:.1f} % of the first).",
            "",
        ]
    return lines
