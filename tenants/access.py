"""Who may do what: every check of every door, from the caller's capabilities alone.

- `require(caller, Manage.X)`: managing keys, invites, webhooks, rooms, the team.
- `room_access(caller, room_id, write=...)`: the only maker of `RoomRef`
  (docs/contributing.md, "The type proves the check").
- `actors_bind(caller, tool, args)`: a bound credential acts only as its agent.
- `room_for_caller(caller, room_id)`: a room row for the account API and the dashboard,
  with the same answer for "missing" and "not yours".

The room check. Redis answers the hot path (the room's cached owner); Postgres is the
record. Every other case — Redis does not know the room, another team owns it, the id is
malformed, the room is outside an invite's scope — takes one path: ask the database, then
refuse with the one denial. So, with first-touch claiming off, another team's room, an
unknown id and a malformed one cost the same work and get the same answer
(docs/protocol.md "Tenancy and access"): nothing to learn from the text or the time.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from rooms import clock, errors, registry, store
from rooms.keys import RoomKeys
from rooms.names import is_person_name
from rooms.refs import RoomRef
from rooms.results import RoomRow
from rooms.schemas import ToolInput, room_id_valid
from tenants import archives, selectors, services
from tenants import errors as tenant_errors
from tenants.capabilities import Caller, Manage
from tenants.db import db_run
from tenants.models import Room, Team

ACTIVITY_EVERY_SECONDS = 60
# What a malformed room id is checked as: an id no room can have (it holds "__"), so the
# same Redis step and the same database query run as for any other refused id.
DENIED_PROBE = "denied__probe"


def denied() -> errors.RoomAccessError:
    return errors.RoomAccessError(errors.ROOM_ACCESS_DENIED)


def require(caller: Caller, what: Manage) -> None:
    """Refuse unless the caller may manage `what`."""
    if not caller.may(what):
        raise tenant_errors.NotPermittedError(
            tenant_errors.MANAGE_REFUSED.format(
                what=what.value, who=caller.describe(), how=tenant_errors.MANAGE_HOW[what.value]
            )
        )


async def room_made(caller: Caller, room_id: str) -> None:
    """The room a tool makes for the caller's team (create_room_from_template without a
    roomId), made here whether or not first touch claims rooms: by a writable team
    credential (an invite or share link makes no room), and, where rooms are made only on
    purpose (claiming off), one that may manage rooms. A keyed retry finds it made."""
    require_write(caller)
    if caller.guest or caller.room is not None:
        raise denied()
    if not settings.ROOM_CLAIM_ON_FIRST_TOUCH:
        require(caller, Manage.ROOMS)
    owner = await db_run(services.room_record_of, room_id)
    if owner[0] == caller.team_id:
        return
    if owner[0] is not None:
        raise denied()
    team = await db_run(Team.objects.get, pk=caller.team_id)
    await db_run(services.room_create, team=team, room_id=room_id, actor=caller.actor)


def require_write(caller: Caller) -> None:
    if not caller.write:
        raise errors.ReadOnlyCallerError(tenant_errors.READ_ONLY_REFUSED)


def actors_bind(caller: Caller, tool: registry.Tool, args: ToolInput) -> ToolInput:
    """A bound credential acts only as its agent: every argument naming the actor must be
    its name (a mismatch is refused, naming the bound agent) and is filled in when left
    out. Arguments naming someone else (a task's new owner, a message's `to`) stay free."""
    if not caller.person:
        for name in tool.actors():
            given = getattr(args, name)
            if isinstance(given, str) and is_person_name(given):
                field = type(args).model_fields[name].alias or name
                raise tenant_errors.ActorMismatchError(
                    tenant_errors.ACTOR_PERSON.format(field=field, given=given[:128]),
                    extra={"field": field},
                )
    if caller.agent is None:
        return args
    updates: dict[str, str] = {}
    for name in tool.actors():
        given = getattr(args, name)
        if given is None:
            updates[name] = caller.agent
        elif given != caller.agent:
            field = type(args).model_fields[name].alias or name
            raise tenant_errors.ActorMismatchError(
                tenant_errors.ACTOR_MISMATCH.format(agent=caller.agent, field=field, given=given),
                extra={"boundAgent": caller.agent, "field": field},
            )
    return args.model_copy(update=updates) if updates else args


# (team id, room id) -> (the team's epoch, until ms, the room's status): the team owns the
# room, as this
# process last checked. Trusted only while the epoch read in the same call's budget step is
# the same (a room purge moves it, after dropping the room's Redis owner).
_owned: dict[tuple[int, str], tuple[int, int, str]] = {}
OWNED_MAX = 50_000
OWNED_SECONDS = 60
# room id -> when this process next marks the room's activity (at most once a minute).
_activity_next: dict[str, int] = {}


def caches_clear() -> None:
    _owned.clear()
    _activity_next.clear()


def _ref(caller: Caller, room_id: str, keys: RoomKeys, status: str) -> RoomRef:
    return RoomRef(
        room_id=room_id,
        team_id=str(caller.team_id),
        keys=keys,
        cursor_scope=caller.cursor_scope,
        status=status,
    )


def _writable(room_id: str, status: str) -> None:
    """A paused or completed room answers reads and refuses every write but its status."""
    if status in ("paused", "completed"):
        raise errors.RoomClosedError(
            errors.ROOM_NOT_WRITABLE.format(room_id=room_id, status=status),
            extra={"roomId": room_id, "status": status},
        )
    if status in ("archived", "archiving"):
        raise errors.RoomClosedError(
            (errors.ROOM_ARCHIVED if status == "archived" else errors.ROOM_ARCHIVING).format(
                room_id=room_id
            ),
            extra={"roomId": room_id, "status": status},
        )


async def room_access(
    caller: Caller,
    room_id: str,
    *,
    write: bool,
    epoch: int | None = None,
    lifecycle: bool = False,
) -> RoomRef:
    """The room, if this caller may reach it (and write, when asked: a paused or completed
    room refuses writes, but for `lifecycle`, set_room_status). First touch of an unknown id
    claims it for the caller's team when claiming is on and the caller is a writable team
    credential; invites, share links and read-only callers never claim.

    `epoch`: the caller's team epoch, read in this call's budget step. With it, a room this
    process saw the team own under the same epoch is answered without a round trip (a
    status change moves the epoch)."""
    if write:
        require_write(caller)
    now_ms = clock.now_ms()
    if epoch is not None and (caller.room is None or caller.room == room_id):
        owned = _owned.get((caller.team_id, room_id))
        if owned is not None and owned[0] == epoch and owned[1] > now_ms:
            if write and not lifecycle:
                _writable(room_id, owned[2])
            await _activity_mark(room_id, RoomKeys(room_id), now_ms)
            return _ref(caller, room_id, RoomKeys(room_id), owned[2])
    claiming = bool(settings.ROOM_CLAIM_ON_FIRST_TOUCH)
    well_formed = room_id_valid(room_id)
    if not well_formed and claiming:
        # Claiming on: ids are the protocol's to invent, so say what a valid one is.
        raise errors.ToolArgumentsError(errors.ROOM_ID_INVALID.format(room_id=room_id[:80]))
    reachable = well_formed and (caller.room is None or caller.room == room_id)
    keys = RoomKeys(room_id if well_formed else DENIED_PROBE)
    team = str(caller.team_id)
    now = clock.now_iso()
    found, status = await store.room_access(keys, team_id=team, now_iso=now, claim=False)
    if found != 1 or not reachable:
        owner, recorded = await db_run(services.room_record_of, keys.room_id)
        if owner is None and reachable and claiming and caller.write and not caller.guest:
            await _room_id_checked(caller, room_id)
            owner = await db_run(
                services.room_claim, team_id=caller.team_id, room_id=room_id, actor=caller.actor
            )
        if owner != caller.team_id or not reachable:
            raise denied()
        archived = recorded == Room.Status.ARCHIVED
        if archived and not (write or lifecycle):
            # Reads of an archived room answer from a copy of its archive (False: it was
            # restored meanwhile, and is read as it is).
            archived = await db_run(archives.room_view_load, room_id)
            if archived:
                _, status = await store.room_access(keys, team_id=team, now_iso=now, claim=False)
                status = status or Room.Status.ARCHIVED
        elif archived:
            status = recorded  # writes are refused below; set_room_status may restore it
        if not archived:
            # The database says it is ours (a new claim, an expired or stale Redis entry);
            # a room whose keys Redis lost gets back the status the database records.
            if not await store.room_owner_cache(keys, team, recorded=recorded):
                # An archive of it is under way, or just committed: make nothing.
                raise errors.RoomClosedError(
                    errors.ROOM_ARCHIVING.format(room_id=room_id),
                    extra={"roomId": room_id, "status": "archiving"},
                )
            _, status = await store.room_access(keys, team_id=team, now_iso=now, claim=True)
    if write and not lifecycle:
        _writable(room_id, status)
    if epoch is not None and status not in ("archived", "archiving"):
        if len(_owned) >= OWNED_MAX:
            _owned.pop(next(iter(_owned)))
        _owned[(caller.team_id, room_id)] = (epoch, now_ms + OWNED_SECONDS * 1000, status)
    if status not in ("archived", "archiving"):
        await _activity_mark(room_id, keys, now_ms)
    return _ref(caller, room_id, keys, status)


ROOM_ID_WARNED_SECONDS = 600


async def _room_id_checked(caller: Caller, room_id: str) -> None:
    """A first touch of a new id that looks like one of the team's own rooms (a typo would
    otherwise create an empty room and split the team) is refused once with a warning that
    names it; the same id touched again within ROOM_ID_WARNED_SECONDS is created. Only the
    caller's own team's rooms are compared: nothing about another team shows."""
    near = await db_run(selectors.room_id_near, caller.team_id, room_id)
    if near is None:
        return
    if await store.room_id_warned(caller.team_id, room_id, seconds=ROOM_ID_WARNED_SECONDS):
        return
    raise errors.RoomIdNearError(
        errors.ROOM_ID_NEAR.format(
            room_id=room_id, near=near, minutes=ROOM_ID_WARNED_SECONDS // 60
        ),
        extra={"roomId": room_id, "closest": near},
    )


def room_forget_cached(caller: Caller, room_id: str) -> None:
    """This process's cached answer for the room is wrong (its write step found no room)."""
    _owned.pop((caller.team_id, room_id), None)


async def _activity_mark(room_id: str, keys: RoomKeys, now_ms: int) -> None:
    """Record the room's last activity at most once a minute: once per process by this
    process's own clock, once for all processes by the shared mark."""
    if _activity_next.get(room_id, 0) > now_ms:
        return
    if len(_activity_next) >= OWNED_MAX:
        _activity_next.pop(next(iter(_activity_next)))
    _activity_next[room_id] = now_ms + ACTIVITY_EVERY_SECONDS * 1000
    if await store.room_activity_due(keys, every_seconds=ACTIVITY_EVERY_SECONDS):
        await db_run(services.room_touch_activity, room_id)


@dataclass(frozen=True, slots=True)
class CallerRooms:
    """A caller's scope for tools that name no room (rooms.registry.CallerScope)."""

    caller: Caller

    async def rooms(self) -> list[RoomRow]:
        return await db_run(selectors.room_list_for_caller, self.caller)


def room_for_caller(caller: Caller, room_id: str) -> Room:
    """The caller's room row, or the one denial (the same for "missing" and "not yours")."""
    if caller.room is not None and caller.room != room_id:
        raise denied()
    room = selectors.rooms_of_team(caller.team_id).filter(room_id=room_id).first()
    if room is None:
        raise denied()
    return room


async def room_status_recorded(caller: Caller, room: RoomRef, status: str, previous: str) -> None:
    """After set_room_status changed a room: the room's record says so (list_rooms, the
    dashboard), the audit log too, and the team's epoch moves so no process keeps serving
    the old status from its cache."""
    if status == previous:
        return
    await db_run(
        services.room_status_record,
        room_id=room.room_id,
        status=status,
        previous=previous,
        actor=caller.actor,
    )
    await store.team_epoch_bump(caller.team_id)
    _owned.pop((caller.team_id, room.room_id), None)
