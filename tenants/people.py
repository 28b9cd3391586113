"""People: sign-up (a person gets a team of their own, the team that invited them, or on a
fresh local run the demo team), the first administrator, account deletion, membership
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

from rooms import clock
from rooms.store import budgets as budgets_store
from rooms.store import engine as engine_store
from tenants import errors, firstrun, services
from tenants.credentials import JOIN_PREFIX, SHARE_PREFIX, secret_digest
from tenants.models import MemberInvite, Membership, Room, ShareLink, Team

MEMBER_INVITE_DAYS = 7


def _team_slug_for(email: str) -> str:
    local = re.sub(r"[^a-z0-9-]+", "-", email.split("@")[0].lower()).strip("-")[:40] or "team"
    return f"{local}-{secrets.token_hex(3)}"


SIGNUP_CLOSED = "Sign-up is closed on this service: ask its administrator for an account."
SIGNUP_INVITE_ONLY = (
    "Sign-up on this service is by invitation: open the link of your invitation email "
    "(or ask a team owner for one)."
)


def signup_refusal(*, invite: MemberInvite | None) -> str | None:
    """Why SIGNUP refuses a new account (None: it may be made): closed makes none,
    invite-only only one that comes with a live invitation."""
    if settings.SIGNUP == "closed":
        return SIGNUP_CLOSED
    if settings.SIGNUP == "invite-only" and invite is None:
        return SIGNUP_INVITE_ONLY
    return None


@transaction.atomic
def user_signup(
    *, email: str, password: str, invite: MemberInvite | None = None, claim_token: str = ""
) -> User:
    """A new person, in one team: the team of the invitation they came with (accepted
    here), else the first run's demo team when `claim_token` is its claim token (the one
    the banner's sign-up link carries; the caller checked that they look local too) and it
    is still unclaimed, else a new team of their own, which they own. SIGNUP is enforced
    here too, and the first-run operator's address is refused, so no door can make an
    account they forbid."""
    refused = signup_refusal(invite=invite)
    if refused is not None:
        raise errors.NotPermittedError(refused)
    email = email.strip().lower()
    if firstrun.operator_reserved(email):
        raise errors.NotPermittedError(firstrun.OPERATOR_RESERVED)
    user = User.objects.create_user(username=email, email=email, password=password)
    if invite is not None:
        locked = MemberInvite.objects.select_for_update().filter(pk=invite.pk).first()
        if locked is None or locked.accepted_at or not locked.is_live(clock.now()):
            raise errors.NotPermittedError(INVITE_GONE)
        member_invite_accept(invite=locked, user=user)
        return user
    if claim_token and firstrun.demo_team_claim(user=user, token=claim_token) is not None:
        return user
    team_of_own_create(user=user)
    return user


def team_of_own_create(*, user: User) -> Team:
    """A new team named after the person, of which they are the owner."""
    email = user.email or user.username
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
    return team


@dataclass(frozen=True, slots=True)
class Admin:
    user: User
    team: Team
    created: bool


@transaction.atomic
def admin_ensure(*, email: str, team_slug: str | None = None) -> Admin:
    """The first administrator (manage.py create_admin): the account of `email`, made if
    missing (with no password: it signs in with a one-time link and sets one), a Django
    superuser and an owner of a team — `team_slug`'s (made if missing), else the first
    team they own, else a new team of their own. Running it again changes nothing more."""
    email = email.strip().lower()
    user, created = User.objects.get_or_create(username=email, defaults={"email": email})
    if created:
        user.set_unusable_password()
    elif not user.is_active:
        raise errors.NotPermittedError(ADMIN_INACTIVE.format(email=email))
    user.is_staff = user.is_superuser = True
    user.save()
    actor = "system:create-admin"
    if team_slug is not None:
        team = Team.objects.filter(slug=team_slug).first() or services.team_create(
            slug=team_slug, actor=actor
        )
        membership = services.membership_add(
            team=team, user=user, role=Membership.Role.OWNER, actor=actor
        )
        if membership.role != Membership.Role.OWNER:
            services.membership_change_role(
                membership=membership, role=Membership.Role.OWNER, actor=actor
            )
        return Admin(user=user, team=team, created=created)
    owned = (
        Membership.objects.filter(user=user, role=Membership.Role.OWNER)
        .select_related("team")
        .order_by("created_at", "pk")
        .first()
    )
    team = owned.team if owned is not None else team_of_own_create(user=user)
    return Admin(user=user, team=team, created=created)


INVITE_GONE = "This invitation was used or has expired: ask for a new one."
ADMIN_INACTIVE = "The account {email} is deactivated: reactivate it in /admin/ first."


def user_delete(*, user: User) -> list[str]:
    """Remove a person. A team they are the last owner of is handed to its longest-standing
    admin; a team with other members but no admin is not deleted under them — the deletion
    is refused, saying so. A team they are alone in is deleted (its rooms, keys and invites
    with it; tenants.purges clears their Redis state and ends their live uses). Returns the
    slugs of the teams deleted."""
    removed: list[str] = []
    with transaction.atomic():
        stuck: list[str] = []
        for membership in Membership.objects.filter(user=user).select_related("team"):
            team = membership.team
            Team.objects.select_for_update().get(pk=team.pk)
            others = team.memberships.exclude(user=user)
            owners = others.filter(role=Membership.Role.OWNER)
            if membership.role != Membership.Role.OWNER or owners.exists():
                services.membership_remove(membership=membership, actor=f"user:{user.pk}")
            elif not others.exists():
                removed.append(team.slug)
                team.delete()
            else:
                heir = (
                    others.filter(role=Membership.Role.ADMIN).order_by("created_at", "pk").first()
                )
                if heir is None:
                    stuck.append(team.name)
                    continue
                services.membership_change_role(
                    membership=heir, role=Membership.Role.OWNER, actor=f"user:{user.pk}"
                )
                services.membership_remove(membership=membership, actor=f"user:{user.pk}")
        if stuck:
            raise errors.NotPermittedError(
                errors.LAST_OWNER_LEAVING.format(teams=", ".join(sorted(stuck)))
            )
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
            expires_at=clock.now() + timedelta(days=MEMBER_INVITE_DAYS),
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
    if invite is None or invite.accepted_at or not invite.is_live(clock.now()):
        return None
    return invite


def member_invite_accept(*, invite: MemberInvite, user: User) -> Membership:
    with transaction.atomic():
        invite.accepted_at = clock.now()
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
        services.room_guests_check(room)
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


# --- Sign-in and sign-up throttles ---------------------------------------------------------
#
# Failed sign-ins are counted per (account, client address): after LOGIN_FAILURES_ALLOWED
# failures in LOGIN_WINDOW, each further try from that address waits twice as long as the
# one before (up to LOGIN_MAX_DELAY_SECONDS). Someone guessing from elsewhere slows down
# only themselves: the account's owner, from their own address, is never locked out. An
# address failing for many accounts (LOGIN_FAILURES_PER_ADDRESS) is slowed for all of them.
# Every throttle fails open, like the rate limiter: a Redis outage must not lock people out.

LOGIN_WINDOW_MS = 15 * 60 * 1000
LOGIN_MAX_DELAY_SECONDS = 300
SIGNUP_WINDOW_MS = 60 * 60 * 1000


def _pair(account: str, address: str) -> str:
    return f"login:{account.strip().lower()}|{address}"


def _stats(bucket: str, window_ms: int) -> tuple[int, int]:
    try:
        return engine_store.run_sync(
            budgets_store.rate_window_stats, bucket, now_ms=clock.now_ms(), window_ms=window_ms
        )
    except budgets_store.LimiterError:
        return 0, 0


def _hit(bucket: str, window_ms: int) -> None:
    with contextlib.suppress(*budgets_store.LimiterError):
        engine_store.run_sync(
            budgets_store.rate_window_hit,
            bucket,
            now_ms=clock.now_ms(),
            window_ms=window_ms,
            limit=10**9,
            member=f"{clock.now_ms()}-{secrets.token_hex(4)}",
        )


def _delay_ms(count: int, newest_ms: int, free: int) -> int:
    if count < free:
        return 0
    delay: int = min(2 ** (count - free), LOGIN_MAX_DELAY_SECONDS) * 1000
    return max(0, newest_ms + delay - clock.now_ms())


def login_wait(*, account: str, address: str) -> int:
    """Seconds before `account` may be tried again from `address` (0: now)."""
    free = int(settings.LOGIN_FAILURES_ALLOWED)
    wait = _delay_ms(*_stats(_pair(account, address), LOGIN_WINDOW_MS), free)
    per_address = _stats(f"login-address:{address}", LOGIN_WINDOW_MS)
    wait = max(wait, _delay_ms(*per_address, int(settings.LOGIN_FAILURES_PER_ADDRESS)))
    return int(-(-wait // 1000))


def login_failure_record(*, account: str, address: str) -> None:
    _hit(_pair(account, address), LOGIN_WINDOW_MS)
    _hit(f"login-address:{address}", LOGIN_WINDOW_MS)


def login_success_record(*, account: str, address: str) -> None:
    """A right password from this address: its count starts over."""
    with contextlib.suppress(*budgets_store.LimiterError):
        engine_store.run_sync(budgets_store.rate_window_clear, _pair(account, address))


def signup_allowed(*, address: str) -> bool:
    """At most SIGNUPS_PER_ADDRESS_PER_HOUR new accounts from one address."""
    count, _ = _stats(f"signup:{address}", SIGNUP_WINDOW_MS)
    return count < int(settings.SIGNUPS_PER_ADDRESS_PER_HOUR)


def signup_record(*, address: str) -> None:
    _hit(f"signup:{address}", SIGNUP_WINDOW_MS)


def client_registration_allowed(*, address: str) -> bool:
    """At most OAUTH_REGISTRATIONS_PER_ADDRESS_PER_HOUR OAuth clients registered from one
    address (mcp_gateway.oauth.RegistrationAdmitted)."""
    count, _ = _stats(f"oauth-client:{address}", SIGNUP_WINDOW_MS)
    return count < int(settings.OAUTH_REGISTRATIONS_PER_ADDRESS_PER_HOUR)


def client_registration_record(*, address: str) -> None:
    _hit(f"oauth-client:{address}", SIGNUP_WINDOW_MS)
