"""One tool call, as every door runs it (MCP, the REST tool door, the dashboard's person
actions): below the doors, so no door calls another.

The walk, one way down and back: the door resolved the caller (tenants.auth) → the call is
charged to the caller's budget → the arguments are parsed (rooms.registry) → the actor
arguments are bound to a bound credential's agent, and the room is checked for this caller
(tenants.access, the only maker of RoomRef) → the row's operation runs (rooms services and
selectors, one atomic store step for a write) → the result goes back to the door. Nothing
below calls up again: a write wakes its room's listeners (waiters, streams, the webhook
relay) through the room's own wake channel, from inside the store step.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import Any, TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError
from prometheus_client import Counter, Histogram

from calls import live
from rooms import errors, idempotency, redaction, registry
from rooms.flag import Flag
from rooms.names import UNNAMED_AGENT
from rooms.refs import WAIT_MAX_MS, RoomRef
from rooms.schemas import RoomInput, SetRoomStatusInput, ToolInput
from rooms.services import presence as presence_services
from rooms.store import connections as connections_store
from rooms.store import engine as engine_store
from tenants import access, archives, budgets
from tenants.capabilities import Caller, Manage

T = TypeVar("T")

TOOL_CALLS = Counter(
    "roomservice_tool_calls",
    "Tool calls, by tool and outcome (ok, or the error's code).",
    ["tool", "outcome"],
)
TOOL_SECONDS = Histogram(
    "roomservice_tool_seconds",
    "Tool call latency, by tool.",
    ["tool"],
    buckets=engine_store.LATENCY_BUCKETS,
)
REFUSALS = Counter(
    "roomservice_quota_refusals",
    "Calls refused by a quota or a budget, by the refusal's code.",
    ["code"],
)
REFUSAL_CODES = frozenset({"quota_exceeded", "rate_limited", "too_many"})


def tool_observed(tool: str, outcome: str, seconds: float) -> None:
    calls, latency = _tool_series(tool, outcome)
    calls.inc()
    latency.observe(seconds)
    if outcome in REFUSAL_CODES:
        REFUSALS.labels(code=outcome).inc()


@lru_cache(maxsize=4096)
def _tool_series(tool: str, outcome: str) -> tuple[Counter, Histogram]:
    """A tool's two series, looked up once: `labels()` takes a lock and builds its key on
    every call, a measurable share of a warm call's CPU (docs/scaling.md)."""
    return TOOL_CALLS.labels(tool=tool, outcome=outcome), TOOL_SECONDS.labels(tool=tool)


async def tool_run(
    caller: Caller,
    tool: registry.Tool | str,
    arguments: Any,
    *,
    charge: budgets.Charge | None = None,
    wait_most_ms: int = WAIT_MAX_MS,
) -> Any:
    """Run one tool for `caller`: the row the door resolved (a name is resolved here, once).
    Raises DomainError for anything the caller can correct, and for an outage of a store
    (StoreUnavailableError: retry). `charge`: the door already charged the call
    (tenants.auth.caller_admit); without it the call is charged here. `wait_most_ms`: the
    longest a waiting tool may wait through this door (rooms.refs)."""
    started = time.perf_counter()
    outcome = "internal"
    # Unknown names are counted under one label: a caller cannot grow the series.
    known = "unknown"
    try:
        row = registry.tool_get(tool) if isinstance(tool, str) else tool
        known = row.name
        result = await _tool_run(caller, row, arguments, charge, wait_most_ms)
        outcome = "ok"
        return result
    except connections_store.StoreDown:
        outcome = errors.StoreUnavailableError.code
        raise errors.StoreUnavailableError(errors.STORE_UNAVAILABLE) from None
    except (OperationalError, InterfaceError):
        outcome = errors.StoreUnavailableError.code
        raise errors.StoreUnavailableError(errors.DATABASE_UNAVAILABLE) from None
    except errors.DomainError as exc:
        outcome = exc.code
        raise
    finally:
        tool_observed(known, outcome, time.perf_counter() - started)


async def _tool_run(
    caller: Caller,
    tool: registry.Tool,
    arguments: Any,
    charge: budgets.Charge | None,
    wait_most_ms: int,
) -> Any:
    if charge is None:
        charge = await budgets.call_charge(caller)
    elif charge.refused is not None:
        raise charge.refused
    args = registry.arguments_parse(tool, arguments)
    args = access.actors_bind(caller, tool, args)
    if isinstance(tool, registry.CallerTool):
        return await tool.run(access.CallerRooms(caller), args)
    assert isinstance(args, RoomInput)
    if tool.makes_room is not None and not args.roomId:
        made = tool.makes_room(args, caller.team_id)
        await access.room_made(caller, made)
        args = args.model_copy(update={"roomId": made})
    if tool.manages is not None:
        # Refused before the room is touched: a credential that may not manage changes
        # nothing, not even the room's last activity.
        if not tool.read_only:
            access.require_write(caller)
        access.require(caller, Manage(tool.manages))
    room = await access.room_access(
        caller, args.roomId, write=not tool.read_only, epoch=charge.epoch, lifecycle=tool.lifecycle
    )
    # Every act is presence: a write marks its acting agent present in its own step (the
    # store's present wrapper); a read, in a step run beside the read's, at the same time
    # (services.presence_beside), so the read waits for nothing more.
    # A read-only credential reads and never writes, presence included: it cannot keep an
    # agent's claims and leases alive by naming it.
    room = room.acted_by(tool.acting(args) if caller.write else None)
    if tool.lifecycle:
        assert isinstance(args, SetRoomStatusInput)
        status_args = args
        room, changed = await _written(
            caller, tool, args, room, lambda r: _status_set(caller, tool, status_args, r)
        )
        # (An archive or a restore has recorded itself: this then records nothing twice.)
        await access.room_status_recorded(
            caller, room, changed["status"], changed["previousStatus"]
        )
        return changed
    if not tool.waits:
        if tool.read_only:
            reader = room.acted_by(None)
            return await presence_services.presence_beside(
                room,
                _keyed(tool.name, args, lambda call: tool.run(reader.keyed_by(call), args)),
            )
        checked, redacted = await redaction.arguments_for_room(room, tool.name, args)
        assert isinstance(checked, RoomInput)
        _, result = await _written(
            caller,
            tool,
            checked,
            room,
            lambda r: _keyed(tool.name, checked, lambda call: tool.run(r.keyed_by(call), checked)),
        )
        if redacted and isinstance(result, dict):
            result = {**result, "redacted": redaction.told(redacted)}
        return result
    async with (
        budgets.slot_hold(caller, "waiters"),
        live.credential_held(caller, room_id=room.room_id) as use,
    ):
        room = room.waiting_up_to(wait_most_ms)
        work = presence_services.presence_waiting(room, tool.run(room.acted_by(None), args))
        return await until_lost(work, use.lost)


async def _keyed(
    tool: str, arguments: ToolInput, work: Callable[[idempotency.KeyedCall | None], Awaitable[T]]
) -> T:
    """Run `work` (one tool's run, given the call its idempotencyKey names, if any): a repeat
    of the same call answers what the first did and changes nothing; the same key on another
    call is refused."""
    key = getattr(arguments, "idempotencyKey", None)
    if key is None:
        return await work(None)
    fields = arguments.model_dump(mode="json", by_alias=True, exclude={"idempotencyKey"})
    call = idempotency.keyed_call(key, tool, fields)
    try:
        return await work(call)
    except engine_store.KeyReused as exc:
        hours = int(settings.IDEMPOTENCY_WINDOW_SECONDS) // 3600
        said = errors.IDEMPOTENCY_KEY_OUTDATED if exc.outdated else errors.IDEMPOTENCY_KEY_REUSED
        raise errors.IdempotencyKeyReusedError(
            said.format(key=key, hours=hours, tool=exc.tool),
            extra={"idempotencyKey": key, "usedBy": exc.tool},
        ) from None


async def _status_set(
    caller: Caller, tool: registry.RoomTool[Any, Any], args: SetRoomStatusInput, room: RoomRef
) -> Any:
    """set_room_status: into or out of the archive (tenants.archives), else the room's own
    status in its one write step."""
    moved = await archives.room_status_move(
        room, status=args.status, actor=caller.actor, by=args.agentId or UNNAMED_AGENT
    )
    if moved is not None:
        return moved
    return await _keyed(tool.name, args, lambda call: tool.run(room.keyed_by(call), args))


async def _written(
    caller: Caller,
    tool: registry.RoomTool[Any, Any],
    args: RoomInput,
    room: RoomRef,
    run: Callable[[RoomRef], Awaitable[Any]],
) -> tuple[RoomRef, Any]:
    """(the room as last checked, `run`'s result) for a write tool. Its step found no room
    in Redis (store.RoomMissing): the room is checked again without any cache, which
    refuses an archived or deleted room, finds an archived one for set_room_status, or puts
    back the owner of a room whose keys Redis lost, and `run` runs once more."""
    try:
        return room, await run(room)
    except engine_store.RoomMissing:
        access.room_forget_cached(caller, room.room_id)
    again = await access.room_access(
        caller, args.roomId, write=True, epoch=None, lifecycle=tool.lifecycle
    )
    try:
        return again, await run(again)
    except engine_store.RoomMissing:
        raise errors.RoomClosedError(errors.ROOM_GONE.format(room_id=room.room_id)) from None


async def until_lost(work: Awaitable[T], lost: Flag) -> T:
    """`work`'s result, unless the credential is lost first: then the work is cancelled and
    the caller is refused (a revoked key's pending wait returns a refusal, not events).
    The loss cancels the calling task itself, as `asyncio.timeout` does: a waiting call
    holds no task for its work and none beside it (docs/scaling.md, what a waiting call
    holds); a caller cancelled by anyone else is not taken for a loss."""
    here = asyncio.current_task()
    assert here is not None
    entered = here.cancelling()
    waiting, by_loss = True, False

    def on_loss(_: object) -> None:
        nonlocal by_loss
        if waiting and not by_loss:
            by_loss = True
            here.cancel()

    gone = lost.future()
    gone.add_done_callback(on_loss)
    try:
        return await work
    except asyncio.CancelledError:
        if by_loss and here.uncancel() <= entered:
            raise errors.CredentialLostError(errors.CREDENTIAL_LOST) from None
        raise
    finally:
        waiting = False
        lost.forget(gone)
