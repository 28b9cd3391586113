"""The console's ways in (issue 26, point 2): `signin_link` prints a fresh one-time link
without a restart, `create_admin` makes the first administrator and says how they sign in;
both refuse bad input with a clear error, and create_admin run twice changes nothing more."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from config.serve import _banner
from tenants import firstrun, services
from tenants.models import Membership, Team

pytestmark = pytest.mark.store


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def link_in(output: str) -> str:
    found = re.search(r"http://127\.0\.0\.1:8000(/signin/\S+)", output)
    assert found, output
    return found.group(1)


def test_signin_link_prints_a_fresh_link_for_the_first_run_operator(settings: Any) -> None:
    settings.PUBLIC_URL = ""
    services.demo_key_ensure()
    first = firstrun.first_run_prepare()
    assert Client().get(first.sign_in_path).status_code == 302  # the banner's, used

    path = link_in(run("signin_link"))
    assert path != first.sign_in_path
    landed = Client().get(path)
    assert landed.status_code == 302 and landed["Location"] == f"/rooms/{first.room_id}/"
    assert Client().get(path).status_code == 400  # once


def test_signin_link_names_an_account_and_refuses_unknown_ones(settings: Any) -> None:
    settings.PUBLIC_URL = "https://rooms.example.com"
    User.objects.create_user(username="ann@example.com", email="ann@example.com")
    output = run("signin_link", "--email", "Ann@Example.com")
    assert "Sign in as ann@example.com" in output
    path = re.search(r"https://rooms\.example\.com(/signin/\S+)", output)
    assert path
    browser = Client()
    assert browser.get(path.group(1)).status_code == 302
    assert browser.session["_auth_user_id"] == str(User.objects.get(username="ann@example.com").pk)

    with pytest.raises(CommandError, match=r"No active account 'nobody@example\.com'"):
        run("signin_link", "--email", "nobody@example.com")
    with pytest.raises(CommandError, match="no first-run operator here"):
        run("signin_link")  # no `make run` made one in this database


def test_attack_a_link_is_for_its_account_only_and_dies_with_the_account(settings: Any) -> None:
    settings.PUBLIC_URL = ""
    ann = User.objects.create_user(username="ann@example.com", email="ann@example.com")
    path = link_in(run("signin_link", "--email", "ann@example.com"))
    uid, token = path.split("/")[2:4]
    bob = User.objects.create_user(username="bob@example.com", email="bob@example.com")
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    bobs_uid = urlsafe_base64_encode(force_bytes(bob.pk))
    assert Client().get(f"/signin/{bobs_uid}/{token}").status_code == 400  # not Bob's
    ann.is_active = False
    ann.save(update_fields=["is_active"])
    assert Client().get(f"/signin/{uid}/{token}").status_code == 400  # deactivated


def test_a_link_works_in_production_too(settings: Any) -> None:
    """Only the console mints one (it needs SECRET_KEY): the first administrator of a
    production service signs in with it."""
    settings.PUBLIC_URL = ""
    settings.PRODUCTION = True
    path = link_in(run("create_admin", "--email", "root@example.com"))
    assert Client().get(path).status_code == 302
    assert Client().get(path.rsplit("/", 1)[0] + "/forged-token").status_code == 400


def test_create_admin_makes_a_superuser_owner_and_says_how_to_sign_in(settings: Any) -> None:
    settings.PUBLIC_URL = ""
    output = run("create_admin", "--email", "Admin@Example.com")
    admin = User.objects.get(username="admin@example.com")
    assert admin.is_superuser and admin.is_staff and not admin.has_usable_password()
    owned = Membership.objects.get(user=admin)
    assert owned.role == Membership.Role.OWNER
    assert "Created: admin@example.com" in output and owned.team.slug in output
    assert "http://127.0.0.1:8000/admin/" in output and "/account" in output

    browser = Client()
    assert browser.get(link_in(output)).status_code == 302
    assert browser.get("/admin/").status_code == 200  # the Django admin, as a superuser
    account = browser.get("/account").content.decode()
    assert "Set a password" in account and "Current password" not in account
    set_it = browser.post("/account", {"new": "a-long-and-good-passphrase"})
    assert "Password set." in set_it.content.decode()
    assert Client().login(username="admin@example.com", password="a-long-and-good-passphrase")

    # Idempotent: the same account and team, a new link, nothing else made.
    again = run("create_admin", "--email", "admin@example.com")
    assert "Already there, kept: admin@example.com" in again and owned.team.slug in again
    assert Membership.objects.filter(user=admin).count() == 1
    assert User.objects.filter(username="admin@example.com").count() == 1
    assert User.objects.get(pk=admin.pk).check_password("a-long-and-good-passphrase")
    assert "/account" not in again.replace("/admin/", "")  # it has a password now


def test_create_admin_owns_the_named_team(settings: Any) -> None:
    member = User.objects.create_user(username="m@example.com", email="m@example.com")
    team = services.team_create(slug="ops", actor="t")
    services.membership_add(team=team, user=member, role="member", actor="t")
    run("create_admin", "--email", "m@example.com", "--team", "ops")
    assert Membership.objects.get(user=member, team=team).role == Membership.Role.OWNER
    run("create_admin", "--email", "m@example.com", "--team", "new-team")
    assert Team.objects.filter(slug="new-team", memberships__user=member).exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--email", "not-an-email"], "'not-an-email' is not an email address"),
        (["--email", ""], "'' is not an email address"),
        (["--email", "a@example.com", "--team", "no spaces!"], "is not a team slug"),
    ],
)
def test_create_admin_refuses_bad_input(args: list[str], said: str) -> None:
    with pytest.raises(CommandError, match=said):
        run("create_admin", *args)
    assert not User.objects.filter(is_superuser=True).exists()


def test_create_admin_refuses_a_deactivated_account() -> None:
    User.objects.create_user(username="gone@example.com", email="gone@example.com", is_active=False)
    with pytest.raises(CommandError, match="deactivated"):
        run("create_admin", "--email", "gone@example.com")
    assert not User.objects.get(username="gone@example.com").is_superuser


def test_the_banner_names_the_command_for_another_link_and_the_claim_link() -> None:
    services.demo_key_ensure()
    first = firstrun.first_run_prepare()
    assert first.claim_path.startswith("/signup?claim=")
    banner = _banner("127.0.0.1", 8000, None, "demo", "/signin/x/y", first.claim_path)
    assert "manage.py signin_link" in banner
    said = banner.split("or create an account there to claim the demo team", 1)
    assert len(said) == 2 and f"http://127.0.0.1:8000{first.claim_path}" in said[1]
    assert "claim" not in _banner("127.0.0.1", 8000, None, "demo", "/signin/x/y")  # claimed


def test_attack_signin_link_never_signs_in_an_operator_address_first_run_did_not_make() -> None:
    """An account of the operator's address made some other way (a sign-up before it was
    reserved) is not the operator: `make run` does not give it the demo team, and
    signin_link without --email prints no link for it."""
    squatter = User.objects.create_user(
        username=firstrun.OPERATOR_EMAIL, email=firstrun.OPERATOR_EMAIL, password="x" * 12
    )
    services.demo_key_ensure()
    first = firstrun.first_run_prepare()
    assert first.sign_in_path == "" and "did not make" in first.notice
    assert not Membership.objects.filter(user=squatter).exists()
    with pytest.raises(CommandError, match="no first-run operator here"):
        run("signin_link")
