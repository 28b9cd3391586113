"""Reviews: requested, listed, and resolved by the reviewer (a submission by anyone but its
submitter, its task moved in the same step) (rooms/lua/reviews/)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import AtQuota, awaited, event_args, idle_ttl_ms, named, run_write


async def review_request(
    keys: RoomKeys,
    *,
    review_id: str,
    review_json: str,
    target_type: str,
    target_id: str,
    requested_by: str,
    reviewer: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> str | AtQuota | None:
    """The review_requested event id; AtQuota (ROOM_REVIEWS_MAX); None: no such target."""
    res = await run_write(
        keys,
        scripts.REQUEST_REVIEW_SCRIPT,
        [
            keys.reviews,
            keys.review_order,
            keys.tasks,
            keys.context,
            keys.meta,
            keys.events,
            keys.reads,
        ],
        [
            review_id,
            review_json,
            target_type,
            target_id,
            requested_by,
            reviewer,
            idle_ttl_ms(),
            *event_args(keys),
            int(settings.ROOM_REVIEWS_MAX),
        ],
        keyed=keyed,
        actor=actor,
    )
    if res[0] == "unknown":
        return None
    return str(res[1]) if res[0] == "ok" else AtQuota(int(res[1]))


ReviewOutcome = Literal[
    "ok", "unknown", "resolved", "not_reviewer", "own_submission", "not_submitted"
]


@dataclass(frozen=True, slots=True)
class ReviewStep:
    """ "ok", "unknown", "resolved" (already), "not_reviewer", "own_submission" (judged by
    its submitter) or "not_submitted" (verify_task: nothing awaits verification; the
    task's JSON in `review_json`); the review as it is now, and its task when resolving
    moved it."""

    outcome: ReviewOutcome
    review_json: str = ""
    task_json: str = ""


async def review_resolve(
    keys: RoomKeys,
    *,
    review_id: str,
    agent_id: str,
    status: str,
    note: str | None,
    now_iso: str,
    task_id: str | None = None,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> ReviewStep:
    """A review resolved by its reviewer; a submission by anyone but its submitter, its
    task moved in the same step. With `task_id`, the task's pending submission."""
    res = await run_write(
        keys,
        scripts.RESOLVE_REVIEW_SCRIPT,
        [
            keys.reviews,
            keys.meta,
            keys.events,
            keys.reads,
            keys.tasks,
            keys.claims,
            keys.claim_holders,
            keys.leases,
            keys.lease_expiry,
        ],
        [
            review_id,
            agent_id,
            status,
            note or "",
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
            task_id or "",
            int(settings.TASK_NOTES_KEPT),
        ],
        keyed=keyed,
        actor=actor,
    )
    outcome: ReviewOutcome = named(res, ReviewOutcome)
    if outcome == "unknown":
        return ReviewStep("unknown")
    if outcome == "ok":
        return ReviewStep("ok", str(res[1]), str(res[3]))
    return ReviewStep(outcome, str(res[1]))


async def reviews_list(keys: RoomKeys) -> list[str]:
    """Every review's JSON, newest first (at most ROOM_REVIEWS_MAX)."""
    r = client()
    ids = await awaited(r.zrevrange(keys.review_order, 0, -1))
    if not ids:
        return []
    found = await awaited(r.hmget(keys.reviews, ids))
    return [str(v) for v in found if v is not None]
