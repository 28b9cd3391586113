"""Writes to account data: teams, memberships, credentials, room ownership, audit.

Secrets are minted by one service (`credential_mint`) and returned once, never stored or
logged; every change that matters to an operator leaves an audit row. A revocation tells
every process at once (tenants.purges), after the transaction commits.
"""

from __future__ import annotations

import contextlib
import secrets
import string
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from rooms import clock, names
from rooms import errors as room_errors
from rooms.keys import RoomKeys
from rooms.profiles import Profile
from rooms.quotas import quota_error, quota_limit
from rooms.store import bearers as bearers_store
from rooms.store import engine as engine_store
from tenants import errors, projects, purges
from tenants.auth import static_slugs
from tenants.capabilities import PERSON_PREFIX
from tenants.credentials import INVITE_PREFIX, KEY_PREFIX, secret_new
from tenants.models import (
    ApiKey,
    AuditEvent,
    Credential,
    Invite,
    Membership,
    Room,
    ShareLink,
    Team,
)

C = TypeVar("C", bound=Credential)


@dataclass(frozen=True, slots=True)
class MintedKey:
    key: ApiKey
    secret: str  # shown once, never stored


@dataclass(frozen=True, slots=True)
class MintedInvite:
    invite: Invite
    secret: str  # shown once, never stored


def audit_record(
    *,
    team: Team | None,
    actor: str,
    action: str,
    object_type: str,
    object_id: str | int,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        team=team,
        actor=actor,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        detail=detail or {},
    )


# --- Credentials: one way to mint, one way to revoke ---------------------------------------------


def credential_mint(
    model: type[C], *, prefix: str, keep_secret: bool = False, **fields: Any
) -> tuple[C, str]:
    """Create a credential row of `model` with a new secret; returns (row, secret). Only the
    digest and a display prefix are stored (and, with `keep_secret`, the secret itself, for
    the one credential the server must use: a webhook's signing key)."""
    minted = secret_new(prefix)
    if keep_secret:
        fields["secret"] = minted.secret
    row = model._default_manager.create(prefix=minted.prefix, digest=minted.digest, **fields)
    return row, minted.secret


def credential_revoke(
    credential: Credential,
    *,
    ref: str,
    team: Team,
    actor: str,
    action: str,
    object_type: str,
    detail: dict[str, Any],
) -> None:
    """Revoke once (a second revoke changes nothing), with its audit row in the same
    transaction; once committed, every process forgets the credential and ends its live
    uses (streams, waiting calls)."""
    if credential.revoked_at is not None:
        return
    with transaction.atomic():
        credential.revoked_at = clock.now()
        credential.save(update_fields=["revoked_at"])
        audit_record(
            team=team,
            actor=actor,
            action=action,
            object_type=object_type,
            object_id=credential.pk,
            detail=detail,
        )
        purges.credential_purge(ref=ref, digest=credential.digest, team_id=team.pk)


# --- Teams and memberships -----------------------------------------------------------------


def team_ensure(slug: str) -> Team:
    """The team of this slug, created on first sight (management commands, the demo)."""
    try:
        team, _ = Team.objects.get_or_create(slug=slug, defaults={"name": slug})
    except IntegrityError:
        team = Team.objects.get(slug=slug)
    return team


def team_create(*, slug: str, name: str | None = None, actor: str = "system") -> Team:
    """A new team. Taken slugs and the slugs of static API_KEYS teams are refused alike."""
    if slug in static_slugs():
        raise errors.TeamUnavailableError(errors.TEAM_EXISTS.format(slug=slug))
    try:
        with transaction.atomic():
            team = Team.objects.create(slug=slug, name=name or slug)
            audit_record(
                team=team, actor=actor, action="team.create", object_type="team", object_id=slug
            )
    except IntegrityError:
        raise errors.TeamUnavailableError(errors.TEAM_EXISTS.format(slug=slug)) from None
    return team


def membership_add(*, team: Team, user: User, role: str, actor: str) -> Membership:
    membership, created = Membership.objects.get_or_create(
        team=team, user=user, defaults={"role": role}
    )
    if created:
        audit_record(
            team=team,
            actor=actor,
            action="membership.add",
            object_type="user",
            object_id=user.pk,
            detail={"role": role},
        )
    return membership


def _last_owner(membership: Membership) -> bool:
    """Whether this membership is its team's only owner (read under the team row's lock by
    the callers, so two owners demoting each other at once cannot both succeed)."""
    return (
        membership.role == Membership.Role.OWNER
        and not Membership.objects.filter(team_id=membership.team_id, role=Membership.Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )


def membership_change_role(*, membership: Membership, role: str, actor: str) -> Membership:
    """Change a member's role; a team always keeps at least one owner."""
    previous = membership.role
    with transaction.atomic():
        Team.objects.select_for_update().get(pk=membership.team_id)
        membership.refresh_from_db()
        if role != Membership.Role.OWNER and _last_owner(membership):
            raise errors.NotPermittedError(errors.LAST_OWNER)
        membership.role = role
        membership.save(update_fields=["role"])
        audit_record(
            team=membership.team,
            actor=actor,
            action="membership.role",
            object_type="user",
            object_id=membership.user_id,
            detail={"from": previous, "to": role},
        )
        purges.signal_after_commit([f"user:{membership.user_id}"])
    return membership


def membership_remove(*, membership: Membership, actor: str) -> None:
    """Remove a member; a team always keeps at least one owner. The person's open streams
    in the team end (tenants.purges signals the removal)."""
    team, user_id = membership.team, membership.user_id
    with transaction.atomic():
        Team.objects.select_for_update().get(pk=membership.team_id)
        if _last_owner(membership):
            raise errors.NotPermittedError(errors.LAST_OWNER)
        membership.delete()
        audit_record(
            team=team,
            actor=actor,
            action="membership.remove",
            object_type="user",
            object_id=user_id,
        )


# --- Keys ----------------------------------------------------------------------------------


def agent_name_check(agent_name: str) -> None:
    """A credential is bound to a name by rooms.names's rule (no control, invisible or bidi
    character, NFKC, refused rather than rewritten), and never to a person's name in any
    spelling (tenants.capabilities.PERSON_PREFIX)."""
    if not agent_name:
        return
    refused = names.chars_problem(agent_name, "The agent name")
    if refused is not None:
        raise refused
    if names.is_person_name(agent_name) or agent_name.startswith(PERSON_PREFIX):
        raise errors.NotPermittedError(errors.AGENT_NAME_PERSON.format(given=agent_name[:128]))
    names.name_check(agent_name, "The agent name")


def api_key_create(
    *,
    team: Team,
    name: str,
    actor: str = "system",
    created_by: User | None = None,
    agent_name: str = "",
    read_only: bool = False,
    tools_profile: Profile | None = None,
) -> MintedKey:
    """A team key; `tools_profile` is the tool profile its connections get when their URL
    names none (None: every tool)."""
    agent_name_check(agent_name)
    with transaction.atomic():
        live = team_locked(team.pk).api_keys.filter(revoked_at__isnull=True).count()
        if live >= quota_limit("TEAM_KEYS_MAX"):
            raise quota_error("TEAM_KEYS_MAX", live)
        key, secret = credential_mint(
            ApiKey,
            prefix=KEY_PREFIX,
            team=team,
            name=name,
            agent_name=agent_name,
            read_only=read_only,
            tools_profile=tools_profile,
            created_by=created_by,
        )
        audit_record(
            team=team,
            actor=actor,
            action="key.create",
            object_type="api_key",
            object_id=key.pk,
            detail={
                "name": name,
                "prefix": key.prefix,
                "agent": agent_name,
                "readOnly": read_only,
                "toolsProfile": tools_profile,
            },
        )
    return MintedKey(key=key, secret=secret)


def api_key_revoke(*, key: ApiKey, actor: str = "system") -> ApiKey:
    """Refused from the very next request on every process; its streams and waits end."""
    credential_revoke(
        key,
        ref=f"key:{key.pk}",
        team=key.team,
        actor=actor,
        action="key.revoke",
        object_type="api_key",
        detail={"prefix": key.prefix},
    )
    return key


# --- Rooms ---------------------------------------------------------------------------------

_ROOM_ALPHABET = string.ascii_lowercase + string.digits


def room_id_generate() -> str:
    """An unguessable room id: one that cannot be enumerated or squatted (docs/protocol.md
    "Tenancy and access")."""
    return "r-" + "".join(secrets.choice(_ROOM_ALPHABET) for _ in range(20))


def room_owner_id(room_id: str) -> int | None:
    """The id of the team owning `room_id`, or None."""
    return Room.objects.filter(room_id=room_id).values_list("team_id", flat=True).first()


def room_record_of(room_id: str) -> tuple[int | None, str]:
    """(the id of the team owning `room_id` or None, the room's recorded status)."""
    found = Room.objects.filter(room_id=room_id).values_list("team_id", "status").first()
    return (None, "") if found is None else (int(found[0]), str(found[1]))


def team_locked(team_id: int) -> Team:
    """The team's row, locked until the transaction ends: every per-team quota is checked
    and the new row inserted under it, so concurrent creations cannot overshoot."""
    return Team.objects.select_for_update().get(pk=team_id)


def room_insert(
    *, team_id: int, room_id: str, name: str, actor: str, how: str, project: str = ""
) -> Room:
    """One transaction: the cap check (under the team row's lock) and the insert."""
    with transaction.atomic():
        locked = team_locked(team_id)
        cap = locked.room_cap if locked.room_cap is not None else quota_limit("TEAM_ROOMS_MAX")
        used = locked.rooms.count()
        if used >= cap:
            raise quota_error("TEAM_ROOMS_MAX", used, limit=cap)
        room = Room.objects.create(room_id=room_id, team=locked, name=name, project=project)
        audit_record(
            team=locked,
            actor=actor,
            action="room.claim",
            object_type="room",
            object_id=room_id,
            detail={"how": how, "project": project} if project else {"how": how},
        )
    return room


def room_claim(*, team_id: int, room_id: str, actor: str) -> int:
    """First touch: the owner's team id after the attempt (the caller's, or whoever won)."""
    existing = room_owner_id(room_id)
    if existing is not None:
        return existing
    # Another call may claim it between our read and our insert: then it is the record.
    with contextlib.suppress(IntegrityError):
        room_insert(team_id=team_id, room_id=room_id, name="", actor=actor, how="first_touch")
    owner = room_owner_id(room_id)
    assert owner is not None
    return owner


def room_create(
    *, team: Team, room_id: str | None, name: str = "", actor: str, project: str = ""
) -> Room:
    """Explicit creation (API, dashboard): a chosen id, or a generated unguessable one. A
    taken id gets the one room denial, like any room the caller may not touch. A room of a
    `project` starts with the project's memory (tenants.projects)."""
    chosen = room_id or room_id_generate()
    try:
        room = room_insert(
            team_id=team.pk, room_id=chosen, name=name, actor=actor, how="created", project=project
        )
    except IntegrityError:
        raise room_errors.RoomAccessError(room_errors.ROOM_ACCESS_DENIED) from None
    engine_store.run_sync(bearers_store.room_owner_cache, RoomKeys(chosen), str(team.pk))
    projects.project_memory_seed(room)
    return room


def room_delete(*, room: Room, actor: str) -> None:
    """The room and everything in it gone: its row (invites, webhooks, archives with it),
    and after the commit its Redis keys and every cache of it (tenants.purges). Audited."""
    with transaction.atomic():
        locked = Room.objects.select_for_update().select_related("team").get(pk=room.pk)
        audit_record(
            team=locked.team,
            actor=actor,
            action="room.delete",
            object_type="room",
            object_id=locked.room_id,
            detail={"status": locked.status},
        )
        locked.delete()


def room_touch_activity(room_id: str) -> None:
    Room.objects.filter(room_id=room_id).update(last_active_at=clock.now())


def room_status_record(*, room_id: str, status: str, previous: str, actor: str) -> None:
    """The room's record follows its status in Redis (set_room_status), audited."""
    room = Room.objects.filter(room_id=room_id).first()
    if room is None or room.status == status:
        return  # a keyed retry of the same change records nothing twice
    room.status = status
    room.save(update_fields=["status"])
    audit_record(
        team=room.team,
        actor=actor,
        action="room.status",
        object_type="room",
        object_id=room.room_id,
        detail={"status": status, "previous": previous},
    )


# --- Invites -------------------------------------------------------------------------------


def invite_create(
    *,
    room: Room,
    label: str = "",
    expires_at: datetime | None = None,
    agent_name: str = "",
    read_only: bool = False,
    tools_profile: Profile | None = None,
    actor: str = "system",
    created_by: User | None = None,
) -> MintedInvite:
    """An invite to `room`; `tools_profile` as for api_key_create."""
    agent_name_check(agent_name)
    with transaction.atomic():
        room_guests_check(room)
        invite, secret = credential_mint(
            Invite,
            prefix=INVITE_PREFIX,
            team_id=room.team_id,
            room=room,
            label=label,
            agent_name=agent_name,
            read_only=read_only,
            tools_profile=tools_profile,
            expires_at=expires_at,
            created_by=created_by,
        )
        audit_record(
            team=room.team,
            actor=actor,
            action="invite.create",
            object_type="invite",
            object_id=invite.pk,
            detail={
                "room": room.room_id,
                "label": label,
                "prefix": invite.prefix,
                "expiresAt": expires_at.isoformat() if expires_at else None,
                "toolsProfile": tools_profile,
            },
        )
    return MintedInvite(invite=invite, secret=secret)


def invite_revoke(*, invite: Invite, actor: str = "system") -> Invite:
    credential_revoke(
        invite,
        ref=f"invite:{invite.pk}",
        team=invite.team,
        actor=actor,
        action="invite.revoke",
        object_type="invite",
        detail={"room": invite.room.room_id, "prefix": invite.prefix},
    )
    return invite


def room_guests_check(room: Room) -> None:
    """Refuse past ROOM_INVITES_MAX live invites and share links on one room (call inside a
    transaction: the team's row stays locked until it ends)."""
    team_locked(room.team_id)
    now = clock.now()
    live = sum(
        model.objects.filter(room=room, revoked_at__isnull=True)
        .exclude(expires_at__lte=now)
        .count()
        for model in (Invite, ShareLink)
    )
    if live >= quota_limit("ROOM_INVITES_MAX"):
        raise quota_error("ROOM_INVITES_MAX", live)


# --- The first start -----------------------------------------------------------------------

DEMO_TEAM = "demo"


def demo_key_ensure() -> MintedKey | None:
    """On a first start with no API_KEYS: a demo team and one key, to print once. None when
    the demo team already has a live key (its secret was shown on the first start)."""
    team = team_ensure(DEMO_TEAM)
    if team.api_keys.filter(revoked_at__isnull=True).exists():
        return None
    return api_key_create(team=team, name="demo key (make run)", actor="system")
