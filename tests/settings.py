"""The test suite's settings (pyproject.toml's DJANGO_SETTINGS_MODULE for pytest): the
service's own, and what the tests need beside them. The servers the end-to-end tests start
run on the service's settings (config.settings) with their own environment.

What depends on the Redis the suite starts (REDIS_URL, the key prefix, the cluster) is set
by tests/conftest.py once that Redis answers."""

from config.settings import *  # noqa: F403

# Tests share team names across a minute of calls; the limiter's own tests set limits.
RATE_LIMIT_PER_MINUTE = 1_000_000
RATE_LIMIT_INVITE_PER_MINUTE = 1_000_000
SIGNUPS_PER_ADDRESS_PER_HOUR = 1_000_000
OAUTH_REGISTRATIONS_PER_ADDRESS_PER_HOUR = 1_000_000
# Webhook deliveries run in the calling thread, retries included (no worker needed).
CELERY_TASK_ALWAYS_EAGER = True
# A test's password need not cost what a real one must (Argon2 takes 100 MB and tens of ms
# per hash): tests/dashboard/test_pages.py checks the service's own hasher.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A throwaway test database need not reach the disk at every commit (Postgres: the same
    # by synchronous_commit, tests/conftest.py); hundreds of tests flush and refill it.
    DATABASES["default"]["OPTIONS"]["init_command"] = "PRAGMA synchronous=OFF"  # noqa: F405
