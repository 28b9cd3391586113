"""Sign-in throttles as an attacker meets them: per (account, address), progressive, the
same at the admin's door, and sign-ups throttled per address — while the account's owner,
from their own address, still gets in."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from rooms import clock
from tests.clock import clock_at
from tests.dashboard.conftest import PASSWORD, Person


def attempt(client: Client, email: str, password: str) -> str:
    return client.post("/login", {"email": email, "password": password}).content.decode()


def test_an_attacker_elsewhere_cannot_lock_the_owner_out(ann: Person, settings: Any) -> None:
    settings.LOGIN_FAILURES_ALLOWED = 3
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    with clock_at(clock.now()):  # a slow machine's seconds must not end the wait
        for _ in range(10):
            attempt(attacker, "ann@example.com", "guess")
        assert "Too many failed attempts" in attempt(attacker, "ann@example.com", PASSWORD)
        assert "_auth_user_id" not in attacker.session
        # Ann, from her own address, signs in at once.
        own = Client(REMOTE_ADDR="198.51.100.7")
        response = own.post("/login", {"email": "ann@example.com", "password": PASSWORD})
        assert response.status_code == 302 and "_auth_user_id" in own.session


def test_each_failure_past_the_free_ones_waits_twice_as_long(ann: Person, settings: Any) -> None:
    settings.LOGIN_FAILURES_ALLOWED = 2
    from datetime import timedelta

    from tenants import people

    attacker = Client(REMOTE_ADDR="203.0.113.10")
    waits = []
    with clock_at(clock.now()) as now:
        start = now[0]
        for i in range(5):
            now[0] = start + timedelta(minutes=i)  # past the last delay
            attempt(attacker, "ann@example.com", "guess")
            waits.append(people.login_wait(account="ann@example.com", address="203.0.113.10"))
    assert waits == [0, 1, 2, 4, 8]


def test_the_admin_login_is_throttled_like_the_dashboards(settings: Any) -> None:
    settings.LOGIN_FAILURES_ALLOWED = 3
    User.objects.create_superuser("support", "support@example.com", "pw-123456789-right")
    attacker = Client(REMOTE_ADDR="203.0.113.11")
    with clock_at(clock.now()):  # a slow machine's seconds must not end the wait
        for _ in range(15):
            attacker.post("/admin/login/", {"username": "support", "password": "wrong"})
        attacker.post("/admin/login/", {"username": "support", "password": "pw-123456789-right"})
        assert "_auth_user_id" not in attacker.session  # the right password, but still waiting
        staff = Client(REMOTE_ADDR="198.51.100.8")
        staff.post("/admin/login/", {"username": "support", "password": "pw-123456789-right"})
        assert "_auth_user_id" in staff.session


def test_sign_ups_are_throttled_per_address(settings: Any) -> None:
    settings.SIGNUPS_PER_ADDRESS_PER_HOUR = 2
    farm = Client(REMOTE_ADDR="203.0.113.12")
    for n in range(2):
        made = farm.post("/signup", {"email": f"bot{n}@example.com", "password": PASSWORD})
        assert made.status_code == 302
        farm.post("/logout")
    refused = farm.post("/signup", {"email": "bot9@example.com", "password": PASSWORD})
    assert refused.status_code == 200 and "Too many new accounts" in refused.content.decode()
    assert not User.objects.filter(email="bot9@example.com").exists()
    elsewhere = Client(REMOTE_ADDR="198.51.100.9")
    assert (
        elsewhere.post("/signup", {"email": "person@example.com", "password": PASSWORD}).status_code
        == 302
    )
