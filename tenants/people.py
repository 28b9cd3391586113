"""People: sign-up (each person gets a team of their own), account deletion, membership
invitations by email link, share links, and the failed-login throttle."""

from __future__ import annotations

import contextlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from rooms import clock, store
from tenants import services
from tenants.credentials import JOIN_PREFIX, SHARE_PREFIX, secret_digest
from tenants.models import MemberInvite, Membership, Room, ShareLink, Team

MEMBER_INVITE_DAYS = 7


def _team_slug_for(email: str) -> str:
    local = re.sub(r"[^a-z0-9-]+", "-", email.split("@")[0].lower()).strip("-")[:40] or "team"
    return f"{local}-{secrets.token_hex(3)}"


@transaction.atomic
def user_signup(*, email: str, password: str) -> User:
    """A new person and a team of their own, of which they are the owner."""
    email = email.strip().lower()
    user = User.objects.create_user(username=email, email=email, password=password)
    team = Team.objects.create(slug=_team_slug_for(email), name=f"{email.split('@')[0]}'s team")
    services.audit_record(
        team=team,
        actor=f"user:{user.pk}",
        action="team.create",
        object_type="team",
        object_id=team.slug,
    )
    services.membership_add(
        team=team, user=user, role=Membership.Role.OWNER, actor=f"user:{user.pk}"
    )
    return user


def user_delete(*, user: User) -> list[str]:
    """Remove a person's data: their memberships, and every team they are the last owner
    of (its rooms, keys and invites go with it; tenants.purges clears their Redis state and
    ends their live uses). Returns those teams' slugs."""
    removed: list[str] = []
    with transaction.atomic():
        for membership in Membership.objects.filter(user=user).select_related("team"):
            team = membership.team
            owners = team.memberships.filter(role=Membership.Role.OWNER).exclude(user=user)
            if membership.role == Membership.Role.OWNER and not owners.exists():
                removed.append(team.slug)
                team.delete()
            else:
                services.membership_remove(membership=membership, actor=f"user:{user.pk}")
        user.delete()
    return removed


# --- Membership invitations ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MintedMemberInvite:
    invite: MemberInvite
    token: str


def member_invite_create(
    *, team: Team, email: str, role: str, invited_by: User, link_base: str
) -> MintedMemberInvite:
    with transaction.atomic():
        invite, token = services.credential_mint(
            MemberInvite,
            prefix=JOIN_PREFIX,
            team=team,
            email=email.strip().lower(),
            role=role,
            invited_by=invited_by,
            expires_at=timezone.now() + timedelta(days=MEMBER_INVITE_DAYS),
        )
        services.audit_record(
            team=team,
            actor=f"user:{invited_by.pk}",
            action="membership.invite",
            object_type="email",
            object_id=invite.email,
            detail={"role": role},
        )
    link = f"{link_base}/join/{token}"
    send_mail(
        subject=f"You are invited to {team.name} on Roomservice",
        message=(
            f"{invited_by.email} invited you to join the team {team.name} as {role}.\n\n"
            f"Accept within {MEMBER_INVITE_DAYS} days: {link}\n"
        ),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[invite.email],
    )
    return MintedMemberInvite(invite=invite, token=token)


def member_invite_find(token: str) -> MemberInvite | None:
    invite = MemberInvite.objects.select_related("team").filter(digest=secret_digest(token)).first()
    if invite is None or invite.accepted_at or not invite.is_live(timezone.now()):
        return None
    return invite


def member_invite_accept(*, invite: MemberInvite, user: User) -> Membership:
    with transaction.atomic():
        invite.accepted_at = timezone.now()
        invite.save(update_fields=["accepted_at"])
        existing = Membership.objects.filter(team=invite.team, user=user).first()
        if existing is not None:
            return existing
        return services.membership_add(
            team=invite.team, user=user, role=invite.role, actor=f"user:{user.pk}"
        )


# --- Share links --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MintedShareLink:
    link: ShareLink
    token: str


def share_link_create(
    *, room: Room, label: str, expires_at: datetime | None, created_by: User | None, actor: str
) -> MintedShareLink:
    with transaction.atomic():
        link, token = services.credential_mint(
            ShareLink,
            prefix=SHARE_PREFIX,
            room=room,
            label=label,
            created_by=created_by,
            expires_at=expires_at,
        )
        services.audit_record(
            team=room.team,
            actor=actor,
            action="share.create",
            object_type="share_link",
            object_id=link.pk,
            detail={"room": room.room_id, "prefix": link.prefix},
        )
    return MintedShareLink(link=link, token=token)


def share_link_revoke(*, link: ShareLink, actor: str) -> ShareLink:
    services.credential_revoke(
        link,
        ref=f"share:{link.pk}",
        team=link.room.team,
        actor=actor,
        action="share.revoke",
        object_type="share_link",
        detail={"room": link.room.room_id},
    )
    return link


# --- Failed sign-ins ------------------------------------------------------------------------

LOGIN_WINDOW_MS = 15 * 60 * 1000


def _login_buckets(address: str, email: str) -> list[str]:
    return [f"login-ip:{address}", f"login-email:{email.strip().lower()}"]


def login_blocked(*, address: str, email: str) -> bool:
    limit = int(settings.LOGIN_FAILURES_ALLOWED)
    counts = [
        store.run_sync(store.rate_window_count, b, now_ms=clock.now_ms(), window_ms=LOGIN_WINDOW_MS)
        for b in _login_buckets(address, email)
    ]
    return any(c >= limit for c in counts)


def login_failure_record(*, address: str, email: str) -> None:
    for bucket in _login_buckets(address, email):
        with contextlib.suppress(*store.LimiterError):  # fail open, like the rate limiter
            store.run_sync(
                store.rate_window_hit,
                bucket,
                now_ms=clock.now_ms(),
                window_ms=LOGIN_WINDOW_MS,
                limit=10**9,
                member=f"{clock.now_ms()}-{secrets.token_hex(4)}",
            )
