"""What each caller may spend: tool calls a minute, open event streams, waiting calls.

A budget belongs to the team, or, for a guest (an invite or a share link), to that one
credential; a guest's calls, streams and waits also count against its team's guests'
ceiling (all its guests together: RATE_LIMIT_GUESTS_PER_MINUTE,
SSE_STREAMS_GUESTS_PER_TEAM, WAITERS_GUESTS_PER_TEAM; unset, the larger of the team's own
budget and one guest's), never against the team's own budget, so no number of guests can
lock their team out, nor spend more together than that ceiling. Calls are a sliding window
in Redis that fails open (docs/protocol.md "Tenancy and access": availability over perfect
abuse protection; roomd fails closed). Streams and waiting calls are counted in the server
process that holds them, each budget's in each process: all they hold is that process's.

A server process holds at most PROCESS_STREAMS_MAX streams and PROCESS_WAITERS_MAX waiting
calls, and keeps the last PROCESS_RESERVE_PERCENT of each for teams holding fewer than
PROCESS_RESERVED_PER_TEAM there: no team, whatever its budgets and however many guests it
has, takes another team's first stream or waiter.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal

from django.conf import settings
from prometheus_client import Gauge

from rooms import clock, ids
from rooms.store import budgets as budgets_store
from tenants import errors
from tenants.capabilities import Caller

log = logging.getLogger(__name__)
WINDOW_MS = 60_000
OPEN = Gauge(
    "roomservice_open",
    "Open event streams and waiting calls, by kind (streams, waiters).",
    ["kind"],
    multiprocess_mode="livesum",
)
SlotKind = Literal["streams", "waiters"]
SLOT_WHAT = {"streams": "Event streams", "waiters": "Waiting calls"}
# Each kind's series, looked up once (labels() takes a lock and builds its key each time).
_OPEN_OF = {kind: OPEN.labels(kind=kind) for kind in SLOT_WHAT}
# What this server process holds at once: of each kind in all (PROCESS_*_MAX), and by scope
# (_scopes). A stream or a waiting call holds this process's connection and memory and
# nothing in Redis (it sleeps on the process's one subscription), so it is counted where
# it is held: no round trip takes or gives it back, a server that dies leaves nothing
# behind, and callers arriving at once see each other (no await between look and count).
_held: dict[str, int] = {"streams": 0, "waiters": 0}
_held_by: collections.Counter[tuple[str, str]] = collections.Counter()
# The scope a refusal by the guests' ceiling names (errors.RATE_LIMITED's "this {scope}").
GUESTS_SCOPE = "team's guests together (invites and share links; the team's own keys still work)"
TOO_MANY_GUESTS = (
    "{what}: this team's guests (invites and share links) together already have {cap} open "
    "at once (the most they may; the team's own keys still have theirs). Close one of them "
    "and retry."
)
TOO_MANY_TEAM_HERE = (
    "{what}: this team holds {held} of this server's {cap}, and the last {reserve} are kept "
    "for other teams. Close one of this team's (its guests' count too) and retry in a few "
    "seconds (another server may take it)."
)


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


def _guests_setting(name: str, team: str, guest: str) -> int:
    """A team's guests' ceiling: its own setting; unset (None), as much as the team's own
    budget or one guest's, whichever is more (a ceiling never below what one guest may)."""
    value = getattr(settings, name, None)
    if value is not None:
        return int(value)
    return max(int(getattr(settings, team)), int(getattr(settings, guest)))


def guests_call_limit() -> int:
    """Calls a minute of all a team's guests together (0: no ceiling; unset, none either
    when the team's own limit is off)."""
    unset = getattr(settings, "RATE_LIMIT_GUESTS_PER_MINUTE", None) is None
    if unset and int(settings.RATE_LIMIT_PER_MINUTE) <= 0:
        return 0
    return _guests_setting(
        "RATE_LIMIT_GUESTS_PER_MINUTE", "RATE_LIMIT_PER_MINUTE", "RATE_LIMIT_INVITE_PER_MINUTE"
    )


# The team's window that all its guests' calls are counted in too (TeamKeys.calls).
GUESTS_BUCKET = "guests"


async def budget_step(caller: Caller, *, charge: bool) -> Charge:
    """Count one call against the caller's budget (when `charge`), and read its team's
    epoch, in one round trip. Fails open: with the limiter away the call is let through."""
    limit = _call_limit(caller) if charge else 0
    ceiling = None
    if caller.guest:
        ceiling = (GUESTS_BUCKET, max(0, guests_call_limit()) if charge else 0)
    now = clock.now_ms()
    try:
        step = await budgets_store.budget_step(
            caller.team_id,
            caller.budget,
            now_ms=now,
            window_ms=WINDOW_MS,
            limit=max(0, limit),
            member=f"{now}-{ids.process_unique()}",
            ceiling=ceiling,
        )
    except budgets_store.LimiterError as exc:
        log.warning("rate limiter unavailable, letting the call through: %s", exc)
        return Charge(epoch=None)
    if step.allowed:
        return Charge(epoch=step.epoch)
    retry = max(1, -(-step.value // 1000))
    if step.by_ceiling:
        message = errors.RATE_LIMITED.format(
            limit=guests_call_limit(), scope=GUESTS_SCOPE, retry=retry
        )
    else:
        message = errors.RATE_LIMITED.format(limit=limit, scope=_scope(caller), retry=retry)
    return Charge(
        epoch=step.epoch,
        refused=errors.RateLimitedError(message, retry_after_seconds=retry),
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


def guests_slot_cap(kind: SlotKind) -> int:
    """Streams or waiting calls all a team's guests together may hold at once."""
    if kind == "streams":
        return _guests_setting(
            "SSE_STREAMS_GUESTS_PER_TEAM", "SSE_STREAMS_PER_TEAM", "SSE_STREAMS_PER_GUEST"
        )
    return _guests_setting("WAITERS_GUESTS_PER_TEAM", "WAITERS_PER_TEAM", "WAITERS_PER_GUEST")


def _retry_soon() -> int:
    return max(1, int(settings.SSE_KEEPALIVE_SECONDS))


def _refusal(caller: Caller, kind: SlotKind) -> errors.TooManyError | None:
    """Why this process takes no more of `kind` for the caller, if it does not: it holds its
    most, or all but the part it keeps for other teams, or the caller's own are all held, or
    its team's guests' together."""
    what = SLOT_WHAT[kind]
    cap = int(settings.PROCESS_STREAMS_MAX if kind == "streams" else settings.PROCESS_WAITERS_MAX)
    held = _held[kind]
    if held >= cap:
        return errors.TooManyError(
            errors.TOO_MANY_HERE.format(what=what, cap=cap), retry_after_seconds=_retry_soon()
        )
    reserve = cap * max(0, int(settings.PROCESS_RESERVE_PERCENT)) // 100
    mine = _held_by[(kind, _team(caller))]
    if held >= cap - reserve and mine >= int(settings.PROCESS_RESERVED_PER_TEAM):
        return errors.TooManyError(
            TOO_MANY_TEAM_HERE.format(what=what, held=mine, cap=cap, reserve=reserve),
            retry_after_seconds=_retry_soon(),
        )
    if _held_by[(kind, caller.budget)] >= slot_cap(caller, kind):
        message = errors.TOO_MANY.format(
            what=what, scope=_scope(caller), cap=slot_cap(caller, kind)
        )
        return errors.TooManyError(message, retry_after_seconds=_retry_soon())
    if caller.guest and _held_by[(kind, _guests(caller))] >= guests_slot_cap(kind):
        message = TOO_MANY_GUESTS.format(what=what, cap=guests_slot_cap(kind))
        return errors.TooManyError(message, retry_after_seconds=_retry_soon())
    return None


def _team(caller: Caller) -> str:
    return f"all of team {caller.team_id}"


def _guests(caller: Caller) -> str:
    return f"guests of team {caller.team_id}"


def _scopes(caller: Caller) -> tuple[str, ...]:
    """Whose counts one of the caller's holds is in: its budget (the team's own, or one
    guest's), all of its team's (the process reserve: its guests' too), and, for a guest,
    its team's guests' together."""
    return (caller.budget, _team(caller), *((_guests(caller),) if caller.guest else ()))


@contextlib.asynccontextmanager
async def slot_hold(caller: Caller, kind: SlotKind) -> AsyncIterator[None]:
    """Hold one of the caller's streams or waiting calls in this process; TooManyError
    (_refusal) when it may hold no more."""
    refused = _refusal(caller, kind)
    if refused is not None:
        raise refused
    scopes = [(kind, scope) for scope in _scopes(caller)]
    _held[kind] += 1
    _held_by.update(scopes)
    _OPEN_OF[kind].inc()
    try:
        yield
    finally:
        _held[kind] -= 1
        _held_by.subtract(scopes)
        for scope in scopes:
            if not _held_by[scope]:
                del _held_by[scope]
        _OPEN_OF[kind].dec()
