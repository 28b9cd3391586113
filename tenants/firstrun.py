"""The first `make run` leads somewhere (issue 14, point 1): the demo key's team gets a demo
room and a local operator account, and the banner prints a one-time sign-in link into that
team, so a newcomer who follows it sees their agents' first calls on the room page.

Only for the embedded demo (no API_KEYS, not PRODUCTION): the link is printed to the
console of whoever ran the service, signs in the local operator once (its token is
Django's password-reset kind, bound to the account's last sign-in, with a salt of its own
so no other token of the service can stand for it), and expires after
PASSWORD_RESET_TIMEOUT (three days) unused.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from tenants.models import Membership, Room, Team
from tenants.services import DEMO_TEAM, membership_add, room_create, team_ensure

DEMO_ROOM = "demo"
OPERATOR_EMAIL = "operator@localhost"


class SignInTokens(PasswordResetTokenGenerator):
    key_salt = "roomservice.tenants.firstrun.SignInTokens"


sign_in_tokens = SignInTokens()


@dataclass(frozen=True, slots=True)
class FirstRun:
    team: Team
    room_id: str
    operator: str
    sign_in_path: str


def first_run_prepare() -> FirstRun:
    """The demo team's room and operator (made once), and a fresh one-time sign-in link."""
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
    user, created = User.objects.get_or_create(
        username=OPERATOR_EMAIL, defaults={"email": OPERATOR_EMAIL}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    membership_add(team=team, user=user, role=Membership.Role.OWNER, actor="system:make-run")
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return FirstRun(
        team=team,
        room_id=room.room_id,
        operator=OPERATOR_EMAIL,
        sign_in_path=f"/signin/{uid}/{sign_in_tokens.make_token(user)}",
    )


def first_run_landing(user: User) -> tuple[Team, str] | None:
    """Where the operator's link lands: the demo team and its first room."""
    membership = (
        Membership.objects.filter(user=user, team__slug=DEMO_TEAM).select_related("team").first()
    )
    if membership is None:
        return None
    room = Room.objects.filter(team=membership.team).order_by("created_at").first()
    return None if room is None else (membership.team, room.room_id)


def first_run_user(uidb64: str, token: str) -> User | None:
    """The operator a link signs in, if it is still good (unused, unexpired)."""
    try:
        user = User.objects.get(pk=int(force_str(urlsafe_base64_decode(uidb64))))
    except (ValueError, TypeError, OverflowError, User.DoesNotExist):
        return None
    if user.username != OPERATOR_EMAIL or not sign_in_tokens.check_token(user, token):
        return None
    return user
