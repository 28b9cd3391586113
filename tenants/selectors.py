"""Reads of account data, always scoped: a query without a team is a bug (PostHog's habit)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from rooms import clock
from tenants import errors
from tenants.auth import Caller
from tenants.models import ApiKey, AuditEvent, Invite, Room, Team


def team_get(slug: str) -> Team | None:
    return Team.objects.filter(slug=slug).first()


def rooms_for_team(team_slug: str) -> QuerySet[Room]:
    return Room.objects.filter(team__slug=team_slug).select_related("team").order_by("-created_at")


def iso(value: datetime | None) -> str | None:
    """The protocol's timestamp format (ISO-8601 UTC, milliseconds, Z)."""
    return clock.iso_from_ms(int(value.timestamp() * 1000)) if value is not None else None


def room_row(room: Room) -> dict[str, Any]:
    return {
        "roomId": room.room_id,
        "name": room.name,
        "status": room.status,
        "created_at": iso(room.created_at),
        "last_active_at": iso(room.last_active_at),
    }


def room_list_for_caller(caller: Caller) -> list[dict[str, Any]]:
    rooms = rooms_for_team(caller.team_id)
    if caller.allowed_room is not None:
        rooms = rooms.filter(room_id=caller.allowed_room)
    return [room_row(r) for r in rooms]


def access_room_by_id(caller: Caller, room_id: str) -> Room:
    """The caller's room, or NotFound — the same answer for "missing" and "not yours"."""
    if caller.allowed_room is not None and caller.allowed_room != room_id:
        raise errors.NotFoundError("Room not found or access denied.")
    room = rooms_for_team(caller.team_id).filter(room_id=room_id).first()
    if room is None:
        raise errors.NotFoundError("Room not found or access denied.")
    return room


def access_key_by_id(caller: Caller, key_id: int) -> ApiKey:
    key = ApiKey.objects.filter(team__slug=caller.team_id, pk=key_id).select_related("team").first()
    if key is None:
        raise errors.NotFoundError(errors.KEY_NOT_FOUND)
    return key


def keys_for_team(team_slug: str) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(team__slug=team_slug).order_by("-created_at")


def invites_for_room(room: Room) -> QuerySet[Invite]:
    return Invite.objects.filter(room=room, team=room.team).order_by("-created_at")


def access_invite_by_id(room: Room, invite_id: int) -> Invite:
    invite = invites_for_room(room).filter(pk=invite_id).select_related("room", "team").first()
    if invite is None:
        raise errors.NotFoundError(errors.INVITE_NOT_FOUND)
    return invite


def audit_for_team(team_slug: str) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(team__slug=team_slug)


def teams_for_user(user_id: int) -> list[tuple[Team, str]]:
    from tenants.models import Membership

    rows = Membership.objects.filter(user_id=user_id).select_related("team").order_by("team__name")
    return [(m.team, m.role) for m in rows]


def members_of(team: Team) -> list[Any]:
    from tenants.models import Membership

    return list(Membership.objects.filter(team=team).select_related("user").order_by("user__email"))


def access_membership_by_id(team: Team, membership_id: int) -> Any:
    from tenants.models import Membership

    found = (
        Membership.objects.filter(team=team, pk=membership_id)
        .select_related("user", "team")
        .first()
    )
    if found is None:
        raise errors.NotFoundError("No such member in this team.")
    return found


def share_links_for_room(room: Room) -> QuerySet[Any]:
    from tenants.models import ShareLink

    return ShareLink.objects.filter(room=room).order_by("-created_at")


def access_share_link_by_id(room: Room, link_id: int) -> Any:
    found = (
        share_links_for_room(room).filter(pk=link_id).select_related("room", "room__team").first()
    )
    if found is None:
        raise errors.NotFoundError("No such share link for this room.")
    return found


def webhooks_for_room(room: Room) -> QuerySet[Any]:
    from tenants.models import Webhook

    return Webhook.objects.filter(room=room).select_related("room").order_by("-created_at")


def access_webhook_by_id(room: Room, webhook_id: int) -> Any:
    found = webhooks_for_room(room).filter(pk=webhook_id).select_related("room__team").first()
    if found is None:
        raise errors.NotFoundError("No such webhook for this room.")
    return found
