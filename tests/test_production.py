"""The documented production shape works: behind an HTTPS proxy the dashboard's POSTs pass
CSRF, cookies are secure, HSTS is sent, and a configuration that would answer any host
is refused at startup."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, override_settings

from tests.dashboard.conftest import PASSWORD, person

ROOT = Path(__file__).resolve().parents[1]


PROXY_SETTINGS = (
    "s.SECURE_PROXY_SSL_HEADER, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE,"
    " s.CSRF_TRUSTED_ORIGINS, s.ALLOWED_HOSTS"
)


def settings_of(
    env: dict[str, str], printed: str = PROXY_SETTINGS, unset: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Import config.settings in a fresh interpreter with this environment (without this
    one's ALLOWED_HOSTS, PRODUCTION and `unset`), printing `printed` (settings as `s`)."""
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings';"
        f"from django.conf import settings as s; s.ALLOWED_HOSTS; print({printed})"
    )
    dropped = ("ALLOWED_HOSTS", "PRODUCTION", *unset)
    clean = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_production_refuses_to_answer_any_host() -> None:
    for hosts in ("", "*", "rooms.example.net,*"):
        result = settings_of({"PRODUCTION": "1", "SECRET_KEY": "s" * 50, "ALLOWED_HOSTS": hosts})
        assert result.returncode != 0
        assert "ALLOWED_HOSTS must name the host names" in result.stderr


def test_production_defaults_are_the_https_ones() -> None:
    result = settings_of(
        {
            "PRODUCTION": "1",
            "SECRET_KEY": "s" * 50,
            "ALLOWED_HOSTS": "rooms.example.net",
            "PUBLIC_URL": "https://rooms.example.net",
        }
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == (
        "('HTTP_X_FORWARDED_PROTO', 'https') 31536000 True ['https://rooms.example.net'] "
        "['rooms.example.net']"
    )


@pytest.mark.django_db(transaction=True)
def test_a_dashboard_post_over_https_behind_the_proxy_passes_csrf() -> None:
    ann = person("ann@example.com")
    with override_settings(
        SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
        CSRF_TRUSTED_ORIGINS=["https://rooms.example.net"],
        ALLOWED_HOSTS=["rooms.example.net"],
    ):
        browser = Client(enforce_csrf_checks=True, HTTP_HOST="rooms.example.net")
        proxied = {"HTTP_X_FORWARDED_PROTO": "https", "HTTP_ORIGIN": "https://rooms.example.net"}
        browser.get("/login", **proxied)
        token = browser.cookies["csrftoken"].value
        signed_in = browser.post(
            "/login",
            {"email": ann.user.email, "password": PASSWORD, "csrfmiddlewaretoken": token},
            **proxied,
        )
        assert signed_in.status_code == 302, signed_in.content[:300]
        # The same form from an origin the service does not trust is refused.
        forged = Client(enforce_csrf_checks=True, HTTP_HOST="rooms.example.net")
        forged.get("/login", **proxied)
        refused = forged.post(
            "/login",
            {
                "email": ann.user.email,
                "password": PASSWORD,
                "csrfmiddlewaretoken": forged.cookies["csrftoken"].value,
            },
            HTTP_X_FORWARDED_PROTO="https",
            HTTP_ORIGIN="https://evil.example.net",
        )
        assert refused.status_code == 403
