"""One onboarding story (issue 26, point 2): on a fresh local run, creating an account
through the banner's sign-up link (its claim token) claims the demo team the banner
printed; nobody without that token, and nobody anywhere else, can claim it; nobody signs up
as the first-run operator; SIGNUP closes sign-up or lets only invited people in, on the
page and against a direct POST alike."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils.crypto import salted_hmac
from django.utils.html import escape

from config.serve import _banner
from dashboard.forms import CLAIM_DEMO_LABEL
from dashboard.views import accounts
from tenants import errors, firstrun, people, services
from tenants.models import MemberInvite, Membership
from tests.dashboard.conftest import PASSWORD, Person
from tests.test_production import settings_of

pytestmark = pytest.mark.store

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


def sign_up(client: Client, email: str, url: str = "/signup", **extra: str) -> Any:
    return client.post(url, {"email": email, "password": PASSWORD, **extra})


def test_signing_up_on_a_fresh_local_run_claims_the_demo_team() -> None:
    first = first_run()
    assert first.claim_path.startswith("/signup?claim=")  # what the banner prints
    newcomer = Client(**LOCAL)
    page = newcomer.get(first.claim_path).content.decode()
    assert CLAIM_DEMO_LABEL in page and "fresh local run" in page
    assert 'name="claim_demo"' in page and "checked" in page  # offered, ticked

    made = sign_up(newcomer, "me@example.com", first.claim_path, claim_demo="on")
    assert made.status_code == 302 and made["Location"] == f"/rooms/{first.room_id}/"
    me = User.objects.get(username="me@example.com")
    mine = Membership.objects.get(user=me)  # the demo team only: no empty team besides
    assert mine.team == first.team and mine.role == Membership.Role.OWNER
    room = newcomer.get(made["Location"])
    assert room.status_code == 200 and "Demo room" in room.content.decode()

    # Claimed: the next person on this machine is not offered it, and gets a team of their own.
    # Even with the banner's link: the token dies with the claim.
    second = Client(**LOCAL)
    page = second.get(first.claim_path).content.decode()
    assert CLAIM_DEMO_LABEL not in page and "does not claim the demo team" in page
    later = sign_up(second, "later@example.com", first.claim_path, claim_demo="on")
    assert later["Location"] == "/rooms"
    assert Membership.objects.get(user__username="later@example.com").team != first.team
    assert demo_members() == {firstrun.OPERATOR_EMAIL, "me@example.com"}
    assert firstrun.first_run_prepare().claim_path == ""  # the next banner prints none


def test_a_sign_up_without_the_banners_link_gets_a_team_of_its_own() -> None:
    first = first_run()
    visitor = Client(**LOCAL)
    page = visitor.get("/signup").content.decode()
    assert CLAIM_DEMO_LABEL not in page and "claim_demo" not in page
    assert "does not claim" not in page  # no link named, nothing to explain
    made = sign_up(visitor, "own@example.com", claim_demo="on")
    assert made["Location"] == "/rooms"
    assert Membership.objects.get(user__username="own@example.com").team != first.team
    assert firstrun.demo_team_unclaimed() == first.team


def test_unticking_the_box_gives_a_team_of_ones_own() -> None:
    first = first_run()
    # an unticked box posts nothing
    made = sign_up(Client(**LOCAL), "own@example.com", first.claim_path)
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
    first = first_run()
    attacker = who(settings)
    for url in ("/signup", first.claim_path):  # even one who has the banner's link
        page = attacker.get(url).content.decode()
        assert CLAIM_DEMO_LABEL not in page and "claim_demo" not in page
    sign_up(attacker, "mallory@example.com", first.claim_path, claim_demo="on")  # anyway
    assert demo_members() == {firstrun.OPERATOR_EMAIL}
    mallory = Membership.objects.filter(user__username="mallory@example.com")
    assert all(m.team.slug != services.DEMO_TEAM for m in mallory)


# What a stranger behind `ssh -R` or socat sends: the forwarder connects from loopback and
# adds no forwarding header, and the stranger writes the Host header to taste.
FORWARDED_STRANGER = {"REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "localhost"}


def wrong_claim_url(first: firstrun.FirstRun, wrong: str) -> str:
    token = first.claim_path.split("=", 1)[1]
    # What one who read the source could make: the well-known local SECRET_KEY, the team id.
    guessed = salted_hmac(firstrun.CLAIM_SALT, f"{first.team.pk}", algorithm="sha256")
    return {
        "none": "/signup",
        "empty": "/signup?claim=",
        "zeros": "/signup?claim=" + "0" * len(token),
        "longer": first.claim_path + "0",
        "shorter": first.claim_path[:-1],
        "from SECRET_KEY": "/signup?claim=" + guessed.hexdigest()[: len(token)],
    }[wrong]


@pytest.mark.parametrize(
    "wrong", ["none", "empty", "zeros", "longer", "shorter", "from SECRET_KEY"]
)
def test_attack_a_tcp_forwarder_looks_local_but_without_the_token_claims_nothing(
    wrong: str,
) -> None:
    first = first_run()
    url = wrong_claim_url(first, wrong)
    stranger = Client(**FORWARDED_STRANGER)
    page = stranger.get(url)
    assert accounts.request_local(page.wsgi_request)  # it looks local...
    text = page.content.decode()
    assert CLAIM_DEMO_LABEL not in text and "claim_demo" not in text  # ...but no offer
    made = sign_up(stranger, "mallory@example.com", url, claim_demo="on")
    assert made.status_code == 302 and made["Location"] == "/rooms"  # nor a posted claim
    assert Membership.objects.get(user__username="mallory@example.com").team != first.team
    people.user_signup(  # nor any other door
        email="eve@example.com", password=PASSWORD, claim_token=url.partition("=")[2]
    )
    assert demo_members() == {firstrun.OPERATOR_EMAIL}
    assert firstrun.demo_team_unclaimed() == first.team


def test_the_same_forwarded_request_with_the_banners_token_claims_it() -> None:
    first = first_run()
    person = Client(**FORWARDED_STRANGER)
    assert CLAIM_DEMO_LABEL in person.get(first.claim_path).content.decode()
    made = sign_up(person, "me@example.com", first.claim_path, claim_demo="on")
    assert made["Location"] == f"/rooms/{first.room_id}/"
    assert demo_members() == {firstrun.OPERATOR_EMAIL, "me@example.com"}


def test_the_claim_token_is_this_databases_secret_not_only_secret_keys() -> None:
    """A local run's SECRET_KEY is a well-known default: the token must need more."""
    first = first_run()
    token = first.claim_path.split("=", 1)[1]
    assert firstrun.demo_claim_valid(token) and not firstrun.demo_claim_valid("")
    operator = User.objects.get(username=firstrun.OPERATOR_EMAIL)
    operator.set_unusable_password()  # another random secret, same ids and SECRET_KEY
    operator.save(update_fields=["password"])
    assert not firstrun.demo_claim_valid(token)
    assert firstrun.first_run_prepare().claim_path not in ("", first.claim_path)


def test_attack_a_claimed_demo_team_cannot_be_claimed_again(ann: Person) -> None:
    first_run()
    token = firstrun.demo_claim_token()
    assert token is not None
    bob = User.objects.create_user(username="bob@example.com", password=PASSWORD)
    assert firstrun.demo_team_claim(user=bob, token="forged") is None
    assert firstrun.demo_team_claim(user=ann.user, token=token) is not None
    assert firstrun.demo_team_claim(user=bob, token=token) is None  # the loser of two at once
    assert demo_members() == {firstrun.OPERATOR_EMAIL, "ann@example.com"}


# --- The operator's address ------------------------------------------------------------------


@pytest.mark.parametrize("signup", ["open", "invite-only"])
@pytest.mark.parametrize(
    "email", ["operator@localhost", "OPERATOR@localhost", "  Operator@localhost "]
)
def test_attack_nobody_signs_up_as_the_first_run_operator(
    ann: Person, settings: Any, signup: str, email: str
) -> None:
    settings.SIGNUP = signup
    url = "/signup"
    if signup == "invite-only":  # even with a live invitation to that address
        url = f"/signup?next=/join/{invite_for(ann, 'operator@localhost')}"
    visitor = Client(**LOCAL)
    refused = sign_up(visitor, email, url)  # the page's form, or a direct POST: the same
    assert refused.status_code == 200
    assert escape(firstrun.OPERATOR_RESERVED) in refused.content.decode()
    assert not User.objects.filter(username__iexact="operator@localhost").exists()
    # (an upper-case LOCALHOST is no email address to Django's form: refused as such)
    assert "valid email" in sign_up(visitor, "operator@LOCALHOST", url).content.decode()
    invite = None if signup == "open" else MemberInvite.objects.get(email="operator@localhost")
    with pytest.raises(errors.NotPermittedError, match="reserved"):  # nor any other door
        people.user_signup(email=email, password=PASSWORD, invite=invite)
    assert not User.objects.filter(username__iexact="operator@localhost").exists()


def test_attack_first_run_never_hands_the_demo_team_to_an_account_it_did_not_make(
    settings: Any,
) -> None:
    """E.g. one a stranger signed up before the address was reserved, on a service whose
    operator account was deleted: a later `make run` neither makes it the demo team's owner
    nor prints a link that signs in as it."""
    squatter = User.objects.create_user(
        username=firstrun.OPERATOR_EMAIL, email=firstrun.OPERATOR_EMAIL, password=PASSWORD
    )
    people.team_of_own_create(user=squatter)
    first = first_run()
    assert first.sign_in_path == "" and first.claim_path == "" and first.operator == ""
    assert "did not make" in first.notice and first.team.slug in first.notice
    assert not Membership.objects.filter(user=squatter, team=first.team).exists()
    assert firstrun.operator_get() is None  # so signin_link without --email refuses
    assert firstrun.demo_team_unclaimed() is None  # and nobody claims it either
    banner = _banner("127.0.0.1", 8000, None, first.room_id, "", "", first.notice)
    assert "did not make" in banner and "/signin/" not in banner and "claim=" not in banner


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
    return settings_of(env, printed="s.SIGNUP", unset=("SIGNUP",))


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
