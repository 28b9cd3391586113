"""The limiter and the budgets of open streams and waiters (rooms/lua/budgets/). Budget steps
and rate windows run on the limiter's own connection: when it fails, requests go through.
Slots are leases in the store, given back in one pipeline per turn of the event loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rooms import scripts
from rooms.keys import TeamKeys, open_slots, rate_window
from rooms.store.connections import StoreDown, client, limiter
from rooms.store.engine import named, run, run_on

# A budget step's outcomes: charged; the bucket's own window full; a guest's team's guests'
# window together full (the ceiling). A rate window and a slot set answer "ok" or "full".
BudgetOutcome = Literal["ok", "full", "ceiling"]
AdmitOutcome = Literal["ok", "full"]


@dataclass(frozen=True, slots=True)
class BudgetStep:
    """What one budget step answered: allowed, calls left or retry-after ms, the epoch."""

    allowed: bool
    value: int
    epoch: int
    # Refused by the shared ceiling (a guest's team's guests together), not the bucket's own.
    by_ceiling: bool = False


async def budget_step(
    team_id: int,
    bucket: str,
    *,
    now_ms: int,
    window_ms: int,
    limit: int,
    member: str,
    ceiling: tuple[str, int] | None = None,
) -> BudgetStep:
    """Charge one call to `bucket` (limit 0: charge nothing) and read the team's epoch, in
    one round trip to the limiter. `ceiling`: a second window of the team, (bucket, limit),
    charged with it, the call refused when either is full. Raises StoreDown when the
    limiter does not answer."""
    keys = TeamKeys(team_id)
    if ceiling is None:
        res = await run_on(
            limiter(),
            scripts.BUDGET_STEP_SCRIPT,
            [keys.calls(bucket), keys.epoch],
            [now_ms, window_ms, limit, member],
        )
        return _budget_step(res)
    shared, shared_limit = ceiling
    res = await run_on(
        limiter(),
        scripts.BUDGET_STEP_GUEST_SCRIPT,
        [keys.calls(bucket), keys.calls(shared), keys.epoch],
        [now_ms, window_ms, limit, shared_limit, member],
    )
    return _budget_step(res)


def _budget_step(res: Any) -> BudgetStep:
    outcome: BudgetOutcome = named(res, BudgetOutcome)
    return BudgetStep(outcome == "ok", int(res[1]), int(res[2]), by_ceiling=outcome == "ceiling")


async def team_epoch_bump(team_id: int) -> int:
    """Every process's cached callers and room answers of the team are stale from now."""
    return int(await limiter().incr(TeamKeys(team_id).epoch))


async def rate_window_hit(
    bucket: str, *, now_ms: int, window_ms: int, limit: int, member: str
) -> tuple[bool, int]:
    """(allowed, remaining) or (False, retry-after ms). Raises the client's error when the
    limiter's Redis does not answer; the caller decides to fail open."""
    res = await run_on(
        limiter(),
        scripts.SLIDING_WINDOW_SCRIPT,
        [rate_window(bucket)],
        [now_ms, window_ms, limit, member],
    )
    outcome: AdmitOutcome = named(res, AdmitOutcome)
    return outcome == "ok", int(res[1])


LimiterError = StoreDown


async def rate_window_stats(bucket: str, *, now_ms: int, window_ms: int) -> tuple[int, int]:
    """(hits of `bucket` in the window ending now, time of the newest hit in ms or 0)."""
    r = limiter()
    pipe = r.pipeline(transaction=False)
    pipe.zcount(rate_window(bucket), f"({now_ms - window_ms}", "+inf")
    pipe.zrange(rate_window(bucket), -1, -1, withscores=True)
    count, newest = await pipe.execute()
    return int(count), int(newest[0][1]) if newest else 0


async def rate_window_clear(bucket: str) -> None:
    await limiter().delete(rate_window(bucket))


async def slot_admit(bucket: str, slot_id: str, *, now_ms: int, lease_ms: int, cap: int) -> bool:
    """Take (or renew) one of `cap` slots of `bucket`; False when all are taken. Slots are
    leases: a server that dies without releasing frees them when they lapse."""
    res = await run(
        scripts.ADMIT_SLOT_SCRIPT, [open_slots(bucket)], [slot_id, now_ms, lease_ms, cap]
    )
    outcome: AdmitOutcome = named(res, AdmitOutcome)
    return outcome == "ok"


async def slot_release(bucket: str, slot_id: str) -> None:
    await client().zrem(open_slots(bucket), slot_id)
