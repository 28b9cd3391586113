"""One onboarding story (issue 26, point 2): on a fresh local run, creating an account
claims the demo team the banner printed; nobody anywhere else can claim it; SIGNUP closes
sign-up or lets only invited people in, on the page and against a direct POST alike."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils.html import escape

from dashboard.forms import CLAIM_DEMO_LABEL
from tenants import errors, firstrun, people, services
from tenants.models import MemberInvite, Membership
from tests.dashboard.conftest import PASSWORD, Person
from tests.test_production import ROOT

LOCAL = {"REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "127.0.0.1:8000"}


def first_run() -> firstrun.FirstRun:
    """What `make run` makes on a fresh local run: the demo key, room and operator."""
    services.demo_key_ensure()
    return firstrun.first_run_prepare()


def demo_members() -> set[str]:
    return set(
        Membership.objects.filter(team__slug=services.DEMO_TEAM).values_list(
            "user__username", flat=True
        )
    )


def sign_up(client: Client, email: str, **extra: str) -> Any:
    return client.post("/signup", {"email": email, "password": PASSWORD, **extra})


def test_signing_up_on_a_fresh_local_run_claims_the_demo_team() -> None:
    first = first_run()
    newcomer = Client(**LOCAL)
    page = newcomer.get("/signup").content.decode()
    assert CLAIM_DEMO_LABEL in page and "fresh local run" in page
    assert 'name="claim_demo"' in page and "checked" in page  # offered, ticked

    made = sign_up(newcomer, "me@example.com", claim_demo="on")
    assert made.status_code == 302 and made["Location"] == f"/rooms/{first.room_id}/"
    me = User.objects.get(username="me@example.com")
    mine = Membership.objects.get(user=me)  # the demo team only: no empty team besides
    assert mine.team == first.team and mine.role == Membership.Role.OWNER
    room = newcomer.get(made["Location"])
    assert room.status_code == 200 and "Demo room" in room.content.decode()

    # Claimed: the next person on this machine is not offered it, and gets a team of their own.
    second = Client(**LOCAL)
    assert CLAIM_DEMO_LABEL not in second.get("/signup").content.decode()
    later = sign_up(second, "later@example.com", claim_demo="on")
    assert later["Location"] == "/rooms"
    assert Membership.objects.get(user__username="later@example.com").team != first.team
    assert demo_members() == {firstrun.OPERATOR_EMAIL, "me@example.com"}


def test_unticking_the_box_gives_a_team_of_ones_own() -> None:
    first = first_run()
    made = sign_up(Client(**LOCAL), "own@example.com")  # an unticked box posts nothing
    assert made["Location"] == "/rooms"
    assert Membership.objects.get(user__username="own@example.com").team != first.team
    assert firstrun.demo_team_unclaimed() == first.team


def _stranger(settings: Any) -> Client:
    return Client(REMOTE_ADDR="203.0.113.50", HTTP_HOST="rooms.example.com")


def _through_a_proxy(settings: Any) -> Client:
    # A proxy on the same machine connects from loopback for anyone on the internet.
    return Client(**LOCAL, HTTP_X_FORWARDED_FOR="203.0.113.50")


def _through_a_forwarding_proxy(settings: Any) -> Client:
    return Client(**LOCAL, HTTP_FORWARDED="for=203.0.113.50")


def _dns_rebinding(settings: Any) -> Client:
    # A page of evil.example whose name now points at 127.0.0.1, in the local user's browser.
    return Client(REMOTE_ADDR="127.0.0.1", HTTP_HOST="evil.example:8000")


def _production(settings: Any) -> Client:
    settings.PRODUCTION = True
    return Client(**LOCAL)


def _static_keys(settings: Any) -> Client:
    settings.API_KEYS = "demo:some-static-secret"
    return Client(**LOCAL)


def _invite_only(settings: Any) -> Client:
    settings.SIGNUP = "invite-only"
    return Client(**LOCAL)


@pytest.mark.parametrize(
    "who",
    [
        _stranger,
        _through_a_proxy,
        _through_a_forwarding_proxy,
        _dns_rebinding,
        _production,
        _static_keys,
        _invite_only,
    ],
)
def test_attack_nobody_but_the_local_person_on_a_local_run_can_claim_the_demo_team(
    who: Any, settings: Any
) -> None:
    first_run()
    attacker = who(settings)
    page = attacker.get("/signup").content.decode()
    assert CLAIM_DEMO_LABEL not in page and "claim_demo" not in page
    sign_up(attacker, "mallory@example.com", claim_demo="on")  # posted anyway
    assert demo_members() == {firstrun.OPERATOR_EMAIL}
    mallory = Membership.objects.filter(user__username="mallory@example.com")
    assert all(m.team.slug != services.DEMO_TEAM for m in mallory)


def test_attack_a_claimed_demo_team_cannot_be_claimed_again(ann: Person) -> None:
    first_run()
    assert firstrun.demo_team_claim(user=ann.user) is not None
    bob = User.objects.create_user(username="bob@example.com", password=PASSWORD)
    assert firstrun.demo_team_claim(user=bob) is None  # e.g. the loser of two at once
    assert demo_members() == {firstrun.OPERATOR_EMAIL, "ann@example.com"}


# --- SIGNUP --------------------------------------------------------------------------------


def test_closed_sign_up_says_so_and_refuses_a_direct_post(settings: Any) -> None:
    settings.SIGNUP = "closed"
    first_run()
    visitor = Client(**LOCAL)  # even on this machine
    page = visitor.get("/signup").content.decode()
    assert people.SIGNUP_CLOSED in page and 'name="password"' not in page
    assert 'href="/signup"' not in visitor.get("/").content.decode()
    assert 'href="/signup"' not in visitor.get("/login").content.decode()

    refused = sign_up(visitor, "eve@example.com", claim_demo="on")
    assert refused.status_code == 403 and people.SIGNUP_CLOSED in refused.content.decode()
    assert not User.objects.filter(username="eve@example.com").exists()
    assert demo_members() == {firstrun.OPERATOR_EMAIL}
    with pytest.raises(errors.NotPermittedError):  # no other door makes one either
        people.user_signup(email="eve@example.com", password=PASSWORD)


def invite_for(owner: Person, email: str) -> str:
    minted = people.member_invite_create(
        team=owner.team, email=email, role="member", invited_by=owner.user, link_base=""
    )
    return minted.token


def test_invite_only_sign_up_takes_only_a_live_invitation(ann: Person, settings: Any) -> None:
    settings.SIGNUP = "invite-only"
    page = Client().get("/signup").content.decode()
    assert people.SIGNUP_INVITE_ONLY in page and 'name="password"' not in page
    refused = sign_up(Client(), "eve@example.com")
    assert refused.status_code == 403
    forged = Client().post(
        "/signup?next=/join/rs_join_not-a-real-one",
        {"email": "eve@example.com", "password": PASSWORD},
    )
    assert forged.status_code == 403
    assert not User.objects.filter(username="eve@example.com").exists()

    token = invite_for(ann, "cy@example.com")
    invited = Client()
    page = invited.get(f"/signup?next=/join/{token}").content.decode()
    assert escape(ann.team.name) in page and 'value="cy@example.com"' in page
    made = invited.post(
        f"/signup?next=/join/{token}", {"email": "cy@example.com", "password": PASSWORD}
    )
    assert made.status_code == 302 and made["Location"] == "/rooms"
    cy = Membership.objects.get(user__username="cy@example.com")  # no empty team besides
    assert cy.team == ann.team and cy.role == "member"
    assert MemberInvite.objects.get(email="cy@example.com").accepted_at is not None

    again = Client().post(
        f"/signup?next=/join/{token}", {"email": "dee@example.com", "password": PASSWORD}
    )
    assert again.status_code == 403  # used
    assert not User.objects.filter(username="dee@example.com").exists()


def test_an_open_sign_up_through_an_invitation_joins_that_team(ann: Person) -> None:
    token = invite_for(ann, "cy@example.com")
    made = Client().post(
        f"/signup?next=/join/{token}", {"email": "cy@example.com", "password": PASSWORD}
    )
    assert made["Location"] == "/rooms"
    assert Membership.objects.get(user__username="cy@example.com").team == ann.team


def signup_setting(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = (
        "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE','config.settings');"
        "from django.conf import settings as s; print(s.SIGNUP)"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("SIGNUP", "PRODUCTION")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_signup_setting_is_read_with_a_safe_default() -> None:
    production = {"PRODUCTION": "1", "SECRET_KEY": "s" * 50, "ALLOWED_HOSTS": "r.example.com"}
    assert signup_setting({}).stdout.strip() == "open"  # a local run
    assert signup_setting(production).stdout.strip() == "invite-only"
    assert signup_setting({**production, "SIGNUP": "Open"}).stdout.strip() == "open"
    assert signup_setting({"SIGNUP": "closed"}).stdout.strip() == "closed"
    wrong = signup_setting({"SIGNUP": "yes"})
    assert wrong.returncode != 0 and "SIGNUP must be open, closed or invite-only" in wrong.stderr


def test_with_sign_up_closed_an_invitation_offers_only_signing_in(
    ann: Person, settings: Any
) -> None:
    token = invite_for(ann, "cy@example.com")
    settings.SIGNUP = "closed"
    page = Client().get(f"/join/{token}").content.decode()
    assert "/signup" not in page and "/login?next=" in page
    assert "not open on this server" in page
    settings.SIGNUP = "open"
    assert "/signup?next=" in Client().get(f"/join/{token}").content.decode()
