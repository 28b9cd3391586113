"""`make bench` section "claims": N agents claim one task at once, round after round.

Each round adds a fresh task, then every agent (its own connection, all released at one
moment) calls claim_task on it. Exactly one must win each round; every other one must get
the tool error that names the winner; nothing may fail otherwise. Figures: each claim's
latency, and how long a whole race takes to settle (its slowest claim).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from bench import wire
from bench.stats import percentile

AGENT_COUNTS = (8, 32, 64)
ROUNDS = 20


class Fails(Protocol):
    def add(self, check: str, detail: str = "", n: int = 1) -> None: ...


@dataclass
class RaceFigures:
    agents: int
    rounds: int = 0
    one_winner_rounds: int = 0
    losers_told_owner: int = 0
    failed: int = 0
    claim_ms: list[float] = field(default_factory=list)
    settle_ms: list[float] = field(default_factory=list)


@dataclass
class ClaimFigures:
    races: list[RaceFigures] = field(default_factory=list)
    leases: list[RaceFigures] = field(default_factory=list)  # lease_claim on overlapping paths


Attempt = Callable[[int], Awaitable[tuple[str, float, str]]]


async def _round(
    fig: RaceFigures, fails: Fails, what: str, attempt: Attempt, told: Callable[[str, str], bool]
) -> None:
    """Every agent's attempt released at one moment. `attempt(i)` answers (won / lost /
    failed, seconds, the winner's name or the loser's answer); `told(answer, winner)` says
    whether a loser was told who won."""
    go = asyncio.Event()

    async def at_once(i: int) -> tuple[str, float, str]:
        await go.wait()
        return await attempt(i)

    jobs = [asyncio.create_task(at_once(i)) for i in range(fig.agents)]
    await asyncio.sleep(0.01)
    t0 = time.perf_counter()
    go.set()
    results = await asyncio.gather(*jobs)
    fig.settle_ms.append(1000 * (time.perf_counter() - t0))
    fig.rounds += 1
    fig.claim_ms += [1000 * r[1] for r in results]
    fig.failed += sum(1 for r in results if r[0] == "failed")
    for r in results:
        if r[0] == "failed":
            fails.add(f"{what}: an attempt neither won nor was told who did", r[2][:400])
    winners = [r for r in results if r[0] == "won"]
    if len(winners) != 1:
        fails.add(f"{what}: not exactly one winner", f"round {fig.rounds}: {len(winners)} won")
        return
    fig.one_winner_rounds += 1
    fig.losers_told_owner += sum(1 for r in results if r[0] == "lost" and told(r[2], winners[0][2]))


async def _race(
    ep: wire.McpEndpoint, room: str, conns: list[wire.Connection], fig: RaceFigures, fails: Fails
) -> None:
    """Every agent claims one fresh task."""
    setup = ep.connection()
    try:
        added = await wire.call_tool(
            setup, ep, "add_task", {"roomId": room, "title": f"race {fig.rounds}"}
        )
    finally:
        await setup.close()
    if not added.ok:
        fails.add("claims: add_task", added.describe())
        return
    task = added.value["id"]

    async def claimant(i: int) -> tuple[str, float, str]:
        res = await wire.call_tool(
            conns[i], ep, "claim_task", {"roomId": room, "taskId": task, "agentId": f"a{i:02d}"}
        )
        if res.ok:
            return "won", res.seconds, str(res.value.get("owner"))
        body = res.response.decode("utf-8", "replace")
        return ("lost" if "owned by" in body else "failed"), res.seconds, body

    await _round(
        fig, fails, "claims", claimant, lambda body, owner: f'owned by \\"{owner}\\"' in body
    )


async def _lease_race(
    ep: wire.McpEndpoint, room: str, conns: list[wire.Connection], fig: RaceFigures, fails: Fails
) -> None:
    """Every agent claims, exclusively, one of four overlapping patterns of a fresh folder."""
    folder = f"round{fig.rounds}"
    paths = [f"{folder}/**", f"{folder}/app.py", f"{folder}/*.py", f"{folder}/**/app.py"]

    async def claimant(i: int) -> tuple[str, float, str]:
        args = {"roomId": room, "agentId": f"a{i:02d}", "path": paths[i % len(paths)]}
        res = await wire.call_tool(conns[i], ep, "lease_claim", args)
        if not res.ok:
            return "failed", res.seconds, res.describe()
        if res.value["granted"]:
            return "won", res.seconds, str(res.value["lease"]["holder"])
        return "lost", res.seconds, str(res.value["conflicts"][0]["holder"])

    await _round(fig, fails, "leases", claimant, lambda holder, winner: holder == winner)


async def contention(ep: wire.McpEndpoint, fails: Fails) -> ClaimFigures:
    out = ClaimFigures()
    for n in AGENT_COUNTS:
        fig = RaceFigures(agents=n)
        room = f"bench-claims-{n}-{secrets.token_hex(4)}"
        conns = [ep.connection() for _ in range(n)]
        try:
            for conn in conns:
                await conn.open()
            for _ in range(ROUNDS):
                await _race(ep, room, conns, fig, fails)
        finally:
            for conn in conns:
                await conn.close()
        if fig.losers_told_owner != fig.one_winner_rounds * (n - 1):
            fails.add(
                "claims: a loser was not told the owner",
                json.dumps({"agents": n, "told": fig.losers_told_owner}),
            )
        out.races.append(fig)
        leases = RaceFigures(agents=n)
        conns = [ep.connection() for _ in range(n)]
        try:
            for conn in conns:
                await conn.open()
            room = f"bench-leases-{n}-{secrets.token_hex(4)}"
            for _ in range(ROUNDS):
                await _lease_race(ep, room, conns, leases, fails)
        finally:
            for conn in conns:
                await conn.close()
        if leases.losers_told_owner != leases.one_winner_rounds * (n - 1):
            fails.add("leases: a refused claim did not name the holder", f"{n} agents")
        out.leases.append(leases)
    return out


def section(figs: ClaimFigures) -> list[str]:
    lines = [
        f"Claim contention (section claims): N agents claim one fresh task (or lease one of four "
        f"overlapping paths of a fresh folder) at once, {ROUNDS} rounds each",
        "  Exactly one winner per round; every loser told the owner; latency over all claims",
        "  (ms); settle = the slowest claim of a round (ms). Python clients, one connection each.",
    ]
    kinds = (("claim_task, one task", figs.races), ("lease_claim, overlapping paths", figs.leases))
    for title, races in kinds:
        lines.append(f"  {title}:")
        for r in races:
            lines.append(
                f"    {r.agents:3d} agents: one winner in {r.one_winner_rounds}/{r.rounds} "
                f"rounds, {r.losers_told_owner} losers told the owner, {r.failed} failed; "
                f"claim p50 {statistics.median(r.claim_ms) if r.claim_ms else 0:.2f} / p99 "
                f"{percentile(r.claim_ms, 99):.2f}; settle p50 "
                f"{statistics.median(r.settle_ms) if r.settle_ms else 0:.2f}"
            )
    lines.append("")
    return lines
