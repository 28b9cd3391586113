"""The protocol's knobs: how long an idle room lives and when it is archived, what a new
room inherits, exports and imports, presence tiers, claim leases."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.env import env_int, env_str

ROOM_IDLE_TTL_SECONDS = env_int("ROOM_IDLE_TTL_SECONDS", 30 * 24 * 3600)
# Before a room's idle time runs out, the archive sweep (every ROOM_ARCHIVE_SWEEP_SECONDS)
# moves it to Postgres: rooms idle for longer than the TTL less ROOM_ARCHIVE_AHEAD_SECONDS.
ROOM_ARCHIVE_AHEAD_SECONDS = env_int("ROOM_ARCHIVE_AHEAD_SECONDS", 2 * 24 * 3600)
ROOM_ARCHIVE_SWEEP_SECONDS = env_int("ROOM_ARCHIVE_SWEEP_SECONDS", 3600)
if not 0 < ROOM_ARCHIVE_SWEEP_SECONDS < ROOM_ARCHIVE_AHEAD_SECONDS < ROOM_IDLE_TTL_SECONDS:
    raise ImproperlyConfigured(
        "The archive sweep must run more often than ROOM_ARCHIVE_AHEAD_SECONDS, which must "
        "be shorter than ROOM_IDLE_TTL_SECONDS: otherwise a room could expire unarchived."
    )
# A new room of a project inherits the durable decisions and contracts of the project's
# newest PROJECT_ROOMS_MAX rooms, at most ROOM_INHERITED_MAX entries and _BYTES_MAX bytes.
PROJECT_ROOMS_MAX = env_int("PROJECT_ROOMS_MAX", 20)
ROOM_INHERITED_MAX = env_int("ROOM_INHERITED_MAX", 200)
ROOM_INHERITED_BYTES_MAX = env_int("ROOM_INHERITED_BYTES_MAX", 2 * 1024 * 1024)
# Reads of an archived room answer from a copy loaded for this long (it is never written).
ROOM_ARCHIVE_VIEW_SECONDS = env_int("ROOM_ARCHIVE_VIEW_SECONDS", 300)
# What signs exported rooms (import takes only signed documents). Used when set and DEBUG is
# off; otherwise a random key made once per deployment, kept in VAR_DIR (tenants.imports).
# Web processes on several hosts, or without a lasting VAR_DIR, must set it.
ROOM_EXPORT_SIGNING_KEY = env_str("ROOM_EXPORT_SIGNING_KEY")
if ROOM_EXPORT_SIGNING_KEY and len(ROOM_EXPORT_SIGNING_KEY) < 32:
    raise ImproperlyConfigured("ROOM_EXPORT_SIGNING_KEY must be at least 32 characters")
# The largest room document import takes (a room within its quotas is far smaller); imports
# run one at a time per team and ROOM_IMPORTS_PER_PROCESS at a time per web process.
ROOM_IMPORT_BYTES_MAX = env_int("ROOM_IMPORT_BYTES_MAX", 64 * 1024 * 1024)
ROOM_IMPORTS_PER_PROCESS = env_int("ROOM_IMPORTS_PER_PROCESS", 1)
PRESENCE_ONLINE_SECONDS = env_int("PRESENCE_ONLINE_SECONDS", 120)
# Presence tiers (issue 24), from an agent's last act (any call naming it): working within
# PRESENCE_WORKING_SECONDS, idle after that (or once its session said it ended) up to
# PRESENCE_IDLE_SECONDS, gone past it.
PRESENCE_WORKING_SECONDS = env_int("PRESENCE_WORKING_SECONDS", PRESENCE_ONLINE_SECONDS)
PRESENCE_IDLE_SECONDS = env_int("PRESENCE_IDLE_SECONDS", 1800)
# claim_task's leaseSeconds may not be shorter than this (it would lapse between two
# heartbeats); the sweeper lapses claims whose lease ran out every CLAIM_SWEEP_SECONDS.
CLAIM_LEASE_MIN_SECONDS = env_int("CLAIM_LEASE_MIN_SECONDS", 60)
CLAIM_SWEEP_SECONDS = env_int("CLAIM_SWEEP_SECONDS", 5)
