"""People: how operators sign in to the dashboard, who may sign up, the sign-in throttle,
and the email that carries sign-in links."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_str
from config.settings.base import PRODUCTION

# How operators sign in to the dashboard: "email" (accounts), "apikey" (enter with a team
# key, as roomd-web allows) or "both".
AUTH_MODE = env_str("AUTH_MODE", "email")
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 10},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/login"
LOGIN_REDIRECT_URL = "/rooms"
# Sign-in throttle (tenants/people.py): failures of one account from one address in 15
# minutes before each further try waits twice as long; failures from one address across
# accounts; new accounts from one address in an hour.
LOGIN_FAILURES_ALLOWED = env_int("LOGIN_FAILURES_ALLOWED", 5)
LOGIN_FAILURES_PER_ADDRESS = env_int("LOGIN_FAILURES_PER_ADDRESS", 50)
SIGNUPS_PER_ADDRESS_PER_HOUR = env_int("SIGNUPS_PER_ADDRESS_PER_HOUR", 10)
# Who may create an account on the sign-up page (docs/operations.md "First administrator
# and sign-up"): "open" (anyone), "invite-only" (only with a live team invitation link,
# /join/...) or "closed" (nobody: accounts come from `manage.py create_admin` and /admin/).
# Open on a local run, invite-only with PRODUCTION=1; anything else refuses to start.
SIGNUP = env_str("SIGNUP").strip().lower() or ("invite-only" if PRODUCTION else "open")
if SIGNUP not in ("open", "closed", "invite-only"):
    raise ImproperlyConfigured(f"SIGNUP must be open, closed or invite-only, not {SIGNUP!r}")
# Every password check (the dashboard's and the Django admin's) passes the throttle.
AUTHENTICATION_BACKENDS = ["tenants.backends.ThrottledModelBackend"]
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Roomservice <noreply@localhost>")
# For EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend (.env.example).
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
