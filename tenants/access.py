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

from rooms import clock, errors, registry
from rooms.keys import RoomKeys
from rooms.names import is_person_name
from rooms.refs import RoomRef
from rooms.results import RoomRow
from rooms.schemas import ToolInput, room_id_valid
from rooms.store import bearers as bearers_store
from rooms.store import budgets as budgets_store
from rooms.store import room as room_store
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
        _person_names_refused(tool, args)
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


def _person_names_refused(tool: registry.Tool, args: ToolInput) -> None:
    """A credential that is no person's acts under no person's name."""
    for name in tool.actors():
        given = getattr(args, name)
        if isinstance(given, str) and is_person_name(given):
            field = type(args).model_fields[name].alias or name
            raise tenant_errors.ActorMismatchError(
                tenant_errors.ACTOR_PERSON.format(field=field, given=given[:128]),
                extra={"field": field},
            )


# (team id, room id) -> (the team's epoch, until ms, the room's status): the team owns the
# room, as this process last checked. Trusted only while the epoch read in the same call's
# budget step is the same (a room purge moves it, after dropping the room's Redis owner).
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
        reader=(caller.agent or "") if caller.kind == "invite" else None,
    )


ARCHIVE_STATUSES = ("archived", "archiving")


def _writable(room_id: str, status: str) -> None:
    """A paused or completed room answers reads and refuses every write but its status."""
    if status in ("paused", "completed"):
        raise errors.RoomClosedError(
            errors.ROOM_NOT_WRITABLE.format(room_id=room_id, status=status),
            extra={"roomId": room_id, "status": status},
        )
    if status in ARCHIVE_STATUSES:
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
    cached = _owned_status(caller, room_id, epoch, now_ms)
    if cached is not None:
        keys, status = RoomKeys(room_id), cached
    else:
        keys, status = await _room_status(caller, room_id, write=write, lifecycle=lifecycle)
    if write and not lifecycle:
        _writable(room_id, status)
    if cached is None:
        _owned_remember(caller, room_id, epoch, now_ms, status)
    if status not in ARCHIVE_STATUSES:
        await _activity_mark(room_id, keys, now_ms)
    return _ref(caller, room_id, keys, status)


def _in_scope(caller: Caller, room_id: str) -> bool:
    """Whether the credential reaches this id at all (an invite or share link names one)."""
    return caller.room is None or caller.room == room_id


def _owned_status(caller: Caller, room_id: str, epoch: int | None, now_ms: int) -> str | None:
    """The room's status as this process last saw the team own it, while that is trusted
    (the same epoch, not expired); None: ask Redis."""
    if epoch is None or not _in_scope(caller, room_id):
        return None
    owned = _owned.get((caller.team_id, room_id))
    if owned is None or owned[0] != epoch or owned[1] <= now_ms:
        return None
    return owned[2]


def _owned_remember(
    caller: Caller, room_id: str, epoch: int | None, now_ms: int, status: str
) -> None:
    """Trust the team's ownership for OWNED_SECONDS under this epoch (not for a room being
    or been archived: each touch of one asks again)."""
    if epoch is None or status in ARCHIVE_STATUSES:
        return
    if len(_owned) >= OWNED_MAX:
        _owned.pop(next(iter(_owned)))
    _owned[(caller.team_id, room_id)] = (epoch, now_ms + OWNED_SECONDS * 1000, status)


async def _room_status(
    caller: Caller, room_id: str, *, write: bool, lifecycle: bool
) -> tuple[RoomKeys, str]:
    """The room's keys and status when Redis says the team owns it and the id is in the
    caller's scope; every other case (unknown to Redis, another team's, malformed, out of
    scope) is the database's to settle (_recorded_status)."""
    claiming = bool(settings.ROOM_CLAIM_ON_FIRST_TOUCH)
    well_formed = room_id_valid(room_id)
    if not well_formed and claiming:
        # Claiming on: ids are the protocol's to invent, so say what a valid one is.
        raise errors.ToolArgumentsError(errors.ROOM_ID_INVALID.format(room_id=room_id[:80]))
    reachable = well_formed and _in_scope(caller, room_id)
    keys = RoomKeys(room_id if well_formed else DENIED_PROBE)
    now = clock.now_iso()
    found, status = await room_store.room_access(
        keys, team_id=str(caller.team_id), now_iso=now, claim=False
    )
    if found != "ours" or not reachable:
        status = await _recorded_status(
            caller,
            keys,
            now,
            reachable=reachable,
            claiming=claiming,
            reads_archive=not (write or lifecycle),
        )
    return keys, status


async def _recorded_status(
    caller: Caller,
    keys: RoomKeys,
    now: str,
    *,
    reachable: bool,
    claiming: bool,
    reads_archive: bool,
) -> str:
    """The database decides: the room is the caller's team's (claimed now, on a first touch
    that claims) or the one denial. Then its status: an archived room's (the record's for a
    write, its archive copy's for a read: _archive_view_status), else the one Redis gets
    back with the owner (_owner_recached)."""
    owner, recorded = await db_run(services.room_record_of, keys.room_id)
    if owner is None and reachable and _claims(caller, claiming):
        await _room_id_checked(caller, keys.room_id)
        owner = await db_run(
            services.room_claim, team_id=caller.team_id, room_id=keys.room_id, actor=caller.actor
        )
    if owner != caller.team_id or not reachable:
        raise denied()
    if recorded == Room.Status.ARCHIVED:
        if not reads_archive:
            return recorded  # writes are refused later; set_room_status may restore it
        status = await _archive_view_status(caller, keys, now)
        if status is not None:
            return status
    return await _owner_recached(caller, keys, now, recorded)


def _claims(caller: Caller, claiming: bool) -> bool:
    """Whether this caller's first touch of an unowned id claims it: with claiming on, a
    writable team credential (never an invite's guest or a read-only key)."""
    return claiming and caller.write and not caller.guest


async def _archive_view_status(caller: Caller, keys: RoomKeys, now: str) -> str | None:
    """A read of a room the database records archived answers from a copy of its archive:
    its status there. None: it was restored meanwhile, and is read as it is."""
    if not await db_run(archives.room_view_load, keys.room_id):
        return None
    _, status = await room_store.room_access(
        keys, team_id=str(caller.team_id), now_iso=now, claim=False
    )
    return status or Room.Status.ARCHIVED


async def _owner_recached(caller: Caller, keys: RoomKeys, now: str, recorded: str) -> str:
    """The database says it is ours (a new claim, an expired or stale Redis entry): Redis
    learns the owner again, and a room whose keys Redis lost gets back the status the
    database records. Refused while an archive of it is under way or just committed."""
    team = str(caller.team_id)
    if not await bearers_store.room_owner_cache(keys, team, recorded=recorded):
        # An archive of it is under way, or just committed: make nothing.
        raise errors.RoomClosedError(
            errors.ROOM_ARCHIVING.format(room_id=keys.room_id),
            extra={"roomId": keys.room_id, "status": "archiving"},
        )
    _, status = await room_store.room_access(keys, team_id=team, now_iso=now, claim=True)
    return status


ROOM_ID_WARNED_SECONDS = 600


async def _room_id_checked(caller: Caller, room_id: str) -> None:
    """A first touch of a new id that looks like one of the team's own rooms (a typo would
    otherwise create an empty room and split the team) is refused once with a warning that
    names it; the same id touched again within ROOM_ID_WARNED_SECONDS is created. Only the
    caller's own team's rooms are compared: nothing about another team shows."""
    near = await db_run(selectors.room_id_near, caller.team_id, room_id)
    if near is None:
        return
    if await bearers_store.room_id_warned(caller.team_id, room_id, seconds=ROOM_ID_WARNED_SECONDS):
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
    if await bearers_store.room_activity_due(keys, every_seconds=ACTIVITY_EVERY_SECONDS):
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
    await budgets_store.team_epoch_bump(caller.team_id)
    _owned.pop((caller.team_id, room.room_id), None)
