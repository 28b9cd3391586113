"""Reads of account data, always scoped: a query without a team is a bug (PostHog's habit).
Teams are found by id; a slug is only ever shown."""

from __future__ import annotations

import difflib
import re
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from rooms import clock
from rooms.results import RoomRow
from tenants import errors
from tenants.capabilities import Caller
from tenants.models import (
    ApiKey,
    AuditEvent,
    Invite,
    Membership,
    Room,
    RoomArchive,
    ShareLink,
    Team,
    Webhook,
)


def team_get(team_id: int) -> Team | None:
    return Team.objects.filter(pk=team_id).first()


def rooms_of_team(team_id: int) -> QuerySet[Room]:
    return Room.objects.filter(team_id=team_id).select_related("team").order_by("-created_at")


def iso(value: datetime | None) -> str | None:
    """The protocol's timestamp format (ISO-8601 UTC, milliseconds, Z)."""
    return clock.iso_from_ms(int(value.timestamp() * 1000)) if value is not None else None


def room_row(room: Room) -> RoomRow:
    return {
        "roomId": room.room_id,
        "name": room.name,
        "project": room.project,
        "status": room.status,
        "created_at": iso(room.created_at),
        "last_active_at": iso(room.last_active_at),
    }


def room_id_near(team_id: int, room_id: str) -> str | None:
    """The team's room whose id `room_id` looks like a typo of, if any: at most two edits
    away (one for ids under 8 characters), found among difflib's closest, with as many
    words (a word added, `api-v2` after `api`, is meant); never a sibling that differs only
    in its number (`sprint-2` after `sprint-1` is meant)."""
    ids = list(
        Room.objects.filter(team_id=team_id)
        .order_by("-last_active_at")
        .values_list("room_id", flat=True)[:1000]
    )
    most = 1 if len(room_id) < 8 else 2
    stem = room_id.rstrip("0123456789")
    if room_id in ids:
        return None  # made meanwhile (a claim at the same moment): it is that room
    for near in difflib.get_close_matches(room_id, ids, n=5, cutoff=0.7):
        if stem != room_id and near.rstrip("0123456789") == stem:
            continue
        if len(re.split(r"[-_]", near)) != len(re.split(r"[-_]", room_id)):
            continue
        if _edits(room_id, near, most) <= most:
            return near
    return None


def _edits(a: str, b: str, most: int) -> int:
    """Levenshtein distance with adjacent swaps counted once, stopping past `most`."""
    if abs(len(a) - len(b)) > most:
        return most + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > most:
            return most + 1
        before, row = row, current
    return row[-1]


def room_list_for_caller(caller: Caller) -> list[RoomRow]:
    rooms = rooms_of_team(caller.team_id)
    if caller.room is not None:
        rooms = rooms.filter(room_id=caller.room)
    return [room_row(r) for r in rooms]


def keys_of_team(team_id: int) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(team_id=team_id).order_by("-created_at")


def access_key_by_id(caller: Caller, key_id: int) -> ApiKey:
    key = ApiKey.objects.filter(team_id=caller.team_id, pk=key_id).select_related("team").first()
    if key is None:
        raise errors.NotFoundError(errors.KEY_NOT_FOUND)
    return key


def invites_for_room(room: Room) -> QuerySet[Invite]:
    return (
        Invite.objects.filter(room=room, team_id=room.team_id)
        .select_related("room")
        .order_by("-created_at")
    )


def access_invite_by_id(room: Room, invite_id: int) -> Invite:
    invite = invites_for_room(room).filter(pk=invite_id).select_related("room", "team").first()
    if invite is None:
        raise errors.NotFoundError(errors.INVITE_NOT_FOUND)
    return invite


def audit_of_team(team_id: int) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(team_id=team_id)


def teams_for_user(user_id: int) -> list[tuple[Team, str]]:
    rows = (
        Membership.objects.filter(user_id=user_id)
        .select_related("team")
        .order_by("team__name", "team_id")
    )
    return [(m.team, m.role) for m in rows]


def members_of(team: Team) -> list[Membership]:
    return list(Membership.objects.filter(team=team).select_related("user").order_by("user__email"))


def access_membership_by_id(team: Team, membership_id: int) -> Membership:
    found = (
        Membership.objects.filter(team=team, pk=membership_id)
        .select_related("user", "team")
        .first()
    )
    if found is None:
        raise errors.NotFoundError("No such member in this team.")
    return found


def share_links_for_room(room: Room) -> QuerySet[ShareLink]:
    return ShareLink.objects.filter(room=room).order_by("-created_at")


def access_share_link_by_id(room: Room, link_id: int) -> ShareLink:
    found = (
        share_links_for_room(room).filter(pk=link_id).select_related("room", "room__team").first()
    )
    if found is None:
        raise errors.NotFoundError("No such share link for this room.")
    return found


def webhooks_for_room(room: Room) -> QuerySet[Webhook]:
    return Webhook.objects.filter(room=room).select_related("room").order_by("-created_at")


def access_webhook_by_id(room: Room, webhook_id: int) -> Webhook:
    found = webhooks_for_room(room).filter(pk=webhook_id).select_related("room__team").first()
    if found is None:
        raise errors.NotFoundError("No such webhook for this room.")
    return found


def room_archive_info(room: Room) -> dict[str, Any] | None:
    """When and why the room was last archived, without its (large) document."""
    found = (
        RoomArchive.objects.filter(room=room)
        .values("archived_at", "reason", "size_bytes", "restored_at", "archived_by")
        .first()
    )
    return dict(found) if found is not None else None
