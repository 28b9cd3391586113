"""The first `make run` leads somewhere (issue 14, point 1; issue 26, point 2): the demo
key's team gets a demo room and a local operator account, and the banner prints a one-time
sign-in link into that team, so a newcomer who follows it sees their agents' first calls on
the room page.

Only for the embedded demo (no API_KEYS, not PRODUCTION): the link is printed to the
console of whoever ran the service, signs in the local operator once (its token is
Django's password-reset kind, bound to the account's last sign-in, with a salt of its own
so no other token of the service can stand for it), and expires after
PASSWORD_RESET_TIMEOUT (three days) unused. `manage.py signin_link` prints another such
link (for the operator, or for any account named by email) without a restart.

The newcomer who creates an account instead claims the demo team, while no person has
(demo_team_claim): only on a local run with SIGNUP open, only from this machine
(looks_local), and only through the sign-up link the banner prints, whose claim token
(demo_claim_token) nobody but the console has. looks_local judges the peer's address and
the Host the door read from the request (dashboard/views/accounts.py request_local), and a
TCP forwarder (ssh -R, socat) connects from loopback and passes on whatever Host a
stranger sends: the token is what keeps the demo team for the person who started the
service; a stranger gets a team of their own like everyone else.

The operator's address is reserved (operator_reserved): nobody signs up as it, and
first_run_prepare hands the demo team only to the account it made (one already in the
demo team), never to another account of that address (first_run_prepare says so instead).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import User
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.db import transaction
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from tenants.models import Membership, Room, Team
from tenants.services import DEMO_TEAM, membership_add, room_create, team_ensure

log = logging.getLogger(__name__)

DEMO_ROOM = "demo"
OPERATOR_EMAIL = "operator@localhost"
OPERATOR_RESERVED = (
    f"{OPERATOR_EMAIL} is reserved for the local operator that `make run` makes: "
    "sign up with an address of your own."
)
OPERATOR_NOT_OURS = (
    f"An account {OPERATOR_EMAIL} exists that `make run` did not make (it is not in the "
    "demo team), so it was not given the demo team and no sign-in link or claim link is "
    "printed. Delete it in /admin/ if it is not yours, or sign in with an account of your "
    "own: .venv/bin/python manage.py create_admin --email you@example.com --team {team}"
)


def operator_reserved(email: str) -> bool:
    """Whether `email`, normalised as sign-up normalises it (stripped, lowercased), is the
    first-run operator's address, which no sign-up may take."""
    return email.strip().lower() == OPERATOR_EMAIL


class SignInTokens(PasswordResetTokenGenerator):
    key_salt = "roomservice.tenants.firstrun.SignInTokens"

    def _make_hash_value(self, user: AbstractBaseUser, timestamp: int) -> str:
        """Django's reset token drops the last sign-in's microseconds, so a link minted in
        the second of a sign-in would still work once more in that second: keep them."""
        last = "" if user.last_login is None else user.last_login.isoformat()
        email = getattr(user, user.get_email_field_name(), "") or ""
        return f"{user.pk}{user.password}{last}{timestamp}{email}{user.is_active}"


sign_in_tokens = SignInTokens()


@dataclass(frozen=True, slots=True)
class FirstRun:
    team: Team
    room_id: str
    operator: str  # "" when an account of its address exists that first run did not make
    sign_in_path: str  # "" then too
    claim_path: str = ""  # the sign-up link that claims the demo team, while it is unclaimed
    notice: str = ""  # what the banner must say instead of a link


def first_run_prepare() -> FirstRun:
    """The demo team's room and operator (made once), a fresh one-time sign-in link, and
    while nobody has claimed the demo team, the sign-up link that claims it.

    The operator is the account this function made: one of OPERATOR_EMAIL that is in the
    demo team (it is made and added in one transaction). An account of that address that is
    not in the demo team was made some other way (a sign-up before the address was
    reserved, the Django admin): it is not made an owner of the demo team nor signed in;
    `notice` says so."""
    team = team_ensure(DEMO_TEAM)
    room = Room.objects.filter(team=team).order_by("created_at").first()
    if room is None:
        taken = Room.objects.filter(room_id=DEMO_ROOM).exists()
        room = room_create(
            team=team,
            room_id=None if taken else DEMO_ROOM,
            name="Demo room",
            actor="system:make-run",
        )
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=OPERATOR_EMAIL).first()
        if user is None:
            user = User(username=OPERATOR_EMAIL, email=OPERATOR_EMAIL)
            user.set_unusable_password()
            user.save()
            membership_add(
                team=team, user=user, role=Membership.Role.OWNER, actor="system:make-run"
            )
        elif not Membership.objects.filter(team=team, user=user).exists():
            notice = OPERATOR_NOT_OURS.format(team=team.slug)
            log.warning("first run: %s", notice)
            return FirstRun(
                team=team, room_id=room.room_id, operator="", sign_in_path="", notice=notice
            )
    token = demo_claim_token()
    return FirstRun(
        team=team,
        room_id=room.room_id,
        operator=OPERATOR_EMAIL,
        sign_in_path=sign_in_path(user),
        claim_path="" if token is None else f"/signup?claim={token}",
    )


def sign_in_path(user: User) -> str:
    """A one-time sign-in link's path for `user`: good until it is used (signing in moves
    the account's last sign-in, which the token is bound to) or PASSWORD_RESET_TIMEOUT
    passes. Only the console prints one (the banner, manage.py signin_link/create_admin)."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return f"/signin/{uid}/{sign_in_tokens.make_token(user)}"


def first_run_landing(user: User) -> tuple[Team, str] | None:
    """Where the operator's link lands: the demo team and its first room."""
    membership = (
        Membership.objects.filter(user=user, team__slug=DEMO_TEAM).select_related("team").first()
    )
    if membership is None:
        return None
    room = Room.objects.filter(team=membership.team).order_by("created_at").first()
    return None if room is None else (membership.team, room.room_id)


def sign_in_user(uidb64: str, token: str) -> User | None:
    """The account a link signs in, if it is still good (unused, unexpired, active)."""
    try:
        user = User.objects.get(pk=int(force_str(urlsafe_base64_decode(uidb64))))
    except (ValueError, TypeError, OverflowError, User.DoesNotExist):
        return None
    if not user.is_active or not sign_in_tokens.check_token(user, token):
        return None
    return user


def link_base() -> str:
    """Where the console's links point: PUBLIC_URL, else the address `make run` serves on
    by default (its PORT, when this shell has one), as its banner prints it."""
    return settings.PUBLIC_URL or f"http://127.0.0.1:{os.environ.get('PORT') or '8000'}"


def operator_get() -> User | None:
    """The first run's local operator, when `make run` has made one here: the account of
    OPERATOR_EMAIL in the demo team (one of that address outside it is not the operator:
    first_run_prepare)."""
    return User.objects.filter(username=OPERATOR_EMAIL, memberships__team__slug=DEMO_TEAM).first()


# --- Claiming the demo team by signing up ---------------------------------------------------

LOOPBACK_ADDRESSES = ("127.0.0.1", "::1")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


def looks_local(*, peer: str, host: str, forwarded: bool) -> bool:
    """Whether a request looks sent from this machine: from a loopback `peer` address, to
    a loopback `host` name without its port (a page of another site that a DNS rebinding
    points at us names its own host), and not `forwarded` by a proxy that says so (which
    would connect from loopback for anyone). Not proof: the Host is the client's to write,
    and a TCP forwarder (ssh -R, socat) connects from loopback adding no header; the claim
    token (demo_claim_valid) is what proves it."""
    return peer in LOOPBACK_ADDRESSES and not forwarded and host in LOOPBACK_HOSTS


CLAIM_SALT = "roomservice.tenants.firstrun.demo_claim_token"


def demo_claim_token() -> str | None:
    """The token of the banner's sign-up link that claims the demo team; None while the
    demo team is not to be had (demo_team_unclaimed) or has no operator.

    Derived, not stored: an HMAC keyed with SECRET_KEY (salted_hmac, a salt of its own) of
    the demo team's id and the operator's id and password field. Two secrets, each kept
    where only the account that ran the service reads it (config/serve.py: the data folder
    is its owner's alone): a local run's SECRET_KEY, made on its first start
    (config.kept_secret), and the operator's password field, Django's unusable password,
    "!" and 40 random characters made with the account (or the hash of one the operator
    set), as for Django's own password-reset tokens. So only the console that printed it
    has it; it stays the same across restarts, and dies with the claim (the team is not to
    be had then), the operator or a password the operator sets."""
    team = demo_team_unclaimed()
    operator = operator_get()
    if team is None or operator is None:
        return None
    value = f"{team.pk}:{operator.pk}:{operator.password}"
    return salted_hmac(CLAIM_SALT, value, algorithm="sha256").hexdigest()[:40]


def demo_claim_valid(token: str) -> bool:
    """Whether `token` is the demo team's claim token (compared in constant time)."""
    expected = demo_claim_token()
    return bool(token) and expected is not None and constant_time_compare(token, expected)


def demo_team_unclaimed() -> Team | None:
    """The first run's demo team while no person but the local operator is in it, on a
    local run with open sign-up; None anywhere else (a production or API_KEYS service has
    no demo team to give away, and closed sign-up makes nobody)."""
    if settings.PRODUCTION or settings.API_KEYS or settings.SIGNUP != "open":
        return None
    team = Team.objects.filter(slug=DEMO_TEAM).first()
    if team is None:
        return None
    members = set(team.memberships.values_list("user__username", flat=True))
    return team if members == {OPERATOR_EMAIL} else None


def demo_team_claim(*, user: User, token: str) -> Team | None:
    """Make `user` an owner of the unclaimed demo team, if `token` is its claim token (the
    caller has checked too, and that the person looks local: looks_local). Checked again
    under the team row's lock, so of two sign-ups at once only one claims it; None when it
    is not to be had."""
    with transaction.atomic():
        team = demo_team_unclaimed()
        if team is None:
            return None
        Team.objects.select_for_update().get(pk=team.pk)
        if demo_team_unclaimed() is None or not demo_claim_valid(token):
            return None
        membership_add(team=team, user=user, role=Membership.Role.OWNER, actor=f"user:{user.pk}")
    return team
