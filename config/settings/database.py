"""The accounts' database: DATABASE_URL (Postgres in production), else SQLite under
VAR_DIR."""

from __future__ import annotations

import dj_database_url

from config.env import env_int, env_str
from config.settings.base import VAR_DIR

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'roomservice.sqlite3'}",
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Writers take the lock when their transaction begins, so a check-then-insert (the
    # per-team room cap) cannot interleave; wait for the lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 30}
    )
    # The test database is a file, not shared-cache memory: threads and the end-to-end
    # servers then see it with ordinary locking.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-roomservice.sqlite3")}
