"""What each caller may spend: tool calls a minute, open event streams, waiting calls.

A budget belongs to the team, or, for a guest (an invite or a share link), to that one
credential: a guest's calls, streams and waits count only against its own budget, so one
guest can never lock its team out. Calls are a sliding window in Redis that fails open
(seeds/000 §8.3: availability over perfect abuse protection; roomd fails closed); streams
and waiters are leased slots, so a server that dies frees its slots when they lapse.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal

from django.conf import settings

from config import telemetry
from rooms import clock, store
from tenants import errors
from tenants.capabilities import Caller

log = logging.getLogger(__name__)
WINDOW_MS = 60_000
SlotKind = Literal["streams", "waiters"]
SLOT_WHAT = {"streams": "Event streams", "waiters": "Waiting calls"}
# What this server process holds at once, whoever it belongs to (PROCESS_*_MAX).
_held: dict[str, int] = {"streams": 0, "waiters": 0}


def held_here(kind: SlotKind) -> int:
    return _held[kind]


def _scope(caller: Caller) -> str:
    return "invite" if caller.kind == "invite" else "share link" if caller.guest else "team"


@dataclass(frozen=True, slots=True)
class Charge:
    """One budget step's answer: the team's epoch read in it (None: the limiter did not
    answer, so no in-process cache may be trusted), and the refusal, when over the limit."""

    epoch: int | None
    refused: errors.RateLimitedError | None = None


def _call_limit(caller: Caller) -> int:
    return int(
        settings.RATE_LIMIT_INVITE_PER_MINUTE if caller.guest else settings.RATE_LIMIT_PER_MINUTE
    )


async def budget_step(caller: Caller, *, charge: bool) -> Charge:
    """Count one call against the caller's budget (when `charge`), and read its team's
    epoch, in one round trip. Fails open: with the limiter away the call is let through."""
    limit = _call_limit(caller) if charge else 0
    now = clock.now_ms()
    try:
        step = await store.budget_step(
            caller.team_id,
            caller.budget,
            now_ms=now,
            window_ms=WINDOW_MS,
            limit=max(0, limit),
            member=f"{now}-{secrets.token_hex(4)}",
        )
    except store.LimiterError as exc:
        log.warning("rate limiter unavailable, letting the call through: %s", exc)
        return Charge(epoch=None)
    if step.allowed:
        return Charge(epoch=step.epoch)
    retry = max(1, -(-step.value // 1000))
    return Charge(
        epoch=step.epoch,
        refused=errors.RateLimitedError(
            errors.RATE_LIMITED.format(limit=limit, scope=_scope(caller), retry=retry),
            retry_after_seconds=retry,
        ),
    )


async def call_charge(caller: Caller) -> Charge:
    """Count one call against the caller's budget; RateLimitedError over the limit."""
    charged = await budget_step(caller, charge=True)
    if charged.refused is not None:
        raise charged.refused
    return charged


def slot_cap(caller: Caller, kind: SlotKind) -> int:
    if kind == "streams":
        return int(
            settings.SSE_STREAMS_PER_GUEST if caller.guest else settings.SSE_STREAMS_PER_TEAM
        )
    return int(settings.WAITERS_PER_GUEST if caller.guest else settings.WAITERS_PER_TEAM)


@dataclass
class Slot:
    """A held slot; `renew()` extends its lease and says whether it is still held."""

    caller: Caller
    kind: SlotKind
    slot_id: str
    lease_ms: int

    @property
    def bucket(self) -> str:
        return f"{self.kind}:{self.caller.budget}"

    async def renew(self) -> bool:
        return await store.slot_admit(
            self.bucket,
            self.slot_id,
            now_ms=clock.now_ms(),
            lease_ms=self.lease_ms,
            cap=slot_cap(self.caller, self.kind),
        )


@contextlib.asynccontextmanager
async def slot_hold(caller: Caller, kind: SlotKind, *, lease_ms: int) -> AsyncIterator[Slot]:
    """Hold one of the caller's stream or waiter slots; TooManyError when none is free, or
    when this server process already holds its most."""
    process_cap = int(
        settings.PROCESS_STREAMS_MAX if kind == "streams" else settings.PROCESS_WAITERS_MAX
    )
    if _held[kind] >= process_cap:
        raise errors.TooManyError(
            errors.TOO_MANY_HERE.format(what=SLOT_WHAT[kind], cap=process_cap),
            retry_after_seconds=max(1, int(settings.SSE_KEEPALIVE_SECONDS)),
        )
    slot = Slot(caller=caller, kind=kind, slot_id=secrets.token_hex(8), lease_ms=lease_ms)
    if not await slot.renew():
        cap = slot_cap(caller, kind)
        raise errors.TooManyError(
            errors.TOO_MANY.format(what=SLOT_WHAT[kind], scope=_scope(caller), cap=cap),
            retry_after_seconds=max(1, int(settings.SSE_KEEPALIVE_SECONDS)),
        )
    _held[kind] += 1
    telemetry.OPEN.labels(kind=kind).inc()
    try:
        yield slot
    finally:
        _held[kind] -= 1
        telemetry.OPEN.labels(kind=kind).dec()
        store.slot_release_soon(slot.bucket, slot.slot_id)
