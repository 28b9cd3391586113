"""The room access check: the only maker of `RoomRef` (STYLE.md "the type proves the check").

Redis answers the hot path (the room's cached owner); Postgres is the record and is asked
only when Redis does not know the room. Another team's room, an unknown room when
first-touch claiming is off, and a room outside an invite's scope all get the same error
text and shape, whatever the room holds (seeds/000 §8.2, §8.5).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from rooms import clock, errors, registry, store
from rooms.keys import RoomKeys
from rooms.refs import RoomRef
from tenants import selectors, services
from tenants.auth import Caller
from tenants.db import db_run
from tenants.ratelimit import rate_limit_check
from tenants.webhooks import room_has_webhooks

log = logging.getLogger(__name__)
READ_ONLY_REFUSED = (
    "This key is read-only: it may call reading tools only (read_plan, list_context, "
    "read_events, ...). Ask the team for a key that may write."
)
ACTIVITY_EVERY_SECONDS = 60


def _denied() -> errors.RoomAccessError:
    return errors.RoomAccessError(errors.ROOM_ACCESS_DENIED)


async def room_access(caller: Caller, room_id: str, write: bool) -> RoomRef:
    if write and caller.read_only:
        raise errors.ReadOnlyCallerError(READ_ONLY_REFUSED)
    if caller.allowed_room is not None and caller.allowed_room != room_id:
        raise _denied()
    keys = RoomKeys(room_id)
    now = clock.now_iso()
    found = await store.room_access(keys, team_id=caller.team_id, now_iso=now, claim=False)
    if found.code == 0:
        # Redis does not know this room: the database decides, claiming it on first touch
        # when that is allowed (team keys only; invites never claim).
        may_claim = caller.allowed_room is None and bool(settings.ROOM_CLAIM_ON_FIRST_TOUCH)
        owner: str | None
        if may_claim:
            owner = await db_run(
                services.room_claim, team_slug=caller.team_id, room_id=room_id, actor=caller.actor
            )
        else:
            owner = await db_run(services.room_owner_get, room_id)
        if owner != caller.team_id:
            raise _denied()
        found = await store.room_access(keys, team_id=caller.team_id, now_iso=now, claim=True)
        if found.code == 1 and await db_run(room_has_webhooks, room_id):
            # Redis had forgotten the room (idle expiry): restore its webhook flag too.
            await store.room_hooked_set(keys, True)
            found = store.RoomAccess(code=1, hooked=True)
    if found.code != 1:
        raise _denied()
    if await store.room_activity_due(keys, every_seconds=ACTIVITY_EVERY_SECONDS):
        await db_run(services.room_touch_activity, room_id)
    return RoomRef(
        room_id=room_id,
        team_id=caller.team_id,
        keys=keys,
        bound_agent=caller.bound_agent,
        read_only=caller.read_only,
        hooked=found.hooked,
    )


async def room_list(caller: Caller) -> list[dict[str, Any]]:
    """The caller's rooms: the team's, or an invite's one room."""
    return await db_run(selectors.room_list_for_caller, caller)


@dataclass(slots=True)
class CallerAccess:
    """The registry's view of one caller (rooms.registry.Access)."""

    caller: Caller
    reached: RoomRef | None = None

    async def room(self, room_id: str, write: bool) -> RoomRef:
        self.reached = await room_access(self.caller, room_id, write)
        return self.reached

    async def rooms(self) -> list[dict[str, Any]]:
        return await room_list(self.caller)


async def tool_run(caller: Caller, name: str, arguments: Any) -> Any:
    """One tool call for `caller`, as every door runs it: counted against the rate limit,
    validated, access-checked, run. Raises DomainError for anything the caller can fix."""
    tool = registry.tool_get(name)
    await rate_limit_check(caller)
    access = CallerAccess(caller)
    result = await registry.tool_invoke(name, arguments, access)
    if not tool.read_only and access.reached is not None and access.reached.hooked:
        await webhooks_nudge(access.reached.room_id)
    return result


async def webhooks_nudge(room_id: str) -> None:
    """Ask the relay to deliver the room's new events (a Celery task; it reads the stream
    itself, so a lost nudge only delays delivery until the next write)."""
    from tenants.tasks import webhook_relay

    try:
        await db_run(webhook_relay.delay, room_id)
    except Exception:
        log.exception("could not queue the webhook relay for %s", room_id)
