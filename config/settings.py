"""Every knob of Roomservice, read from the environment with a safe default.

With nothing set, the service runs on SQLite and the embedded Redis that
`config.embedded_redis` starts (the `serve` command and the test suite start it and
export REDIS_URL before Django reads this module).
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("ROOMSERVICE_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


def env_int_or_none(name: str) -> int | None:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else None


DEBUG = env_bool("DEBUG", False)
PRODUCTION = env_bool("PRODUCTION", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when PRODUCTION=1")
    SECRET_KEY = "dev-only-insecure-secret-key-change-me-in-production"
elif PRODUCTION and ("change-me" in SECRET_KEY or len(SECRET_KEY) < 32):
    # .env.example's placeholder, or a short one, would sign sessions anyone can forge.
    raise ImproperlyConfigured(
        "SECRET_KEY is .env.example's placeholder or shorter than 32 characters; make one: "
        "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )
_hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
if PRODUCTION and (not _hosts or "*" in _hosts):
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS must name the host names this service answers to when PRODUCTION=1 "
        "(e.g. ALLOWED_HOSTS=rooms.example.com); '*' is refused."
    )
ALLOWED_HOSTS = _hosts or ["*"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "rooms",
    "tenants",
    "dashboard",
    "mcp_gateway",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.SecurityHeaders",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'roomservice.sqlite3'}",
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # Writers take the lock when their transaction begins, so a check-then-insert (the
    # per-team room cap) cannot interleave; wait for the lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 30}
    )
    # The test database is a file, not shared-cache memory: threads and the end-to-end
    # servers then see it with ordinary locking.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-roomservice.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files (the stylesheet, htmx, the admin's) are served by config/asgi.py straight
# from the apps' folders: no collectstatic step, no CDN, works offline.
STATIC_ROOT = os.environ.get("STATIC_ROOT") or None

# --- People -------------------------------------------------------------------------
# How operators sign in to the dashboard: "email" (accounts), "apikey" (enter with a team
# key, as roomd-web allows) or "both".
AUTH_MODE = os.environ.get("AUTH_MODE", "email")
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
SIGNUP = os.environ.get("SIGNUP", "").strip().lower() or ("invite-only" if PRODUCTION else "open")
if SIGNUP not in ("open", "closed", "invite-only"):
    raise ImproperlyConfigured(f"SIGNUP must be open, closed or invite-only, not {SIGNUP!r}")
# Every password check (the dashboard's and the Django admin's) passes the throttle.
AUTHENTICATION_BACKENDS = ["tenants.backends.ThrottledModelBackend"]
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Roomservice <noreply@localhost>")
# For EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend (.env.example).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
# The URL people and agents reach this service at (for links in emails and snippets);
# empty: taken from each request.
PUBLIC_URL = os.environ.get("PUBLIC_URL", "").rstrip("/")
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"

# --- Redis: the hot room state -------------------------------------------------------
# Empty means "the embedded server": whoever starts the process (serve, tests, bench)
# starts it first and exports its URL here.
REDIS_URL = os.environ.get("REDIS_URL", "")
# REDIS_URL names a seed node of a Redis Cluster (docs/scaling.md); the embedded Redis is
# one node, the default.
REDIS_CLUSTER = env_bool("REDIS_CLUSTER", False)
# Every key this deployment writes starts with this prefix; tests use their own.
REDIS_KEY_PREFIX = os.environ.get("REDIS_KEY_PREFIX", "rs")
REDIS_MAX_CONNECTIONS = env_int("REDIS_MAX_CONNECTIONS", 64)
# While Redis is away, calls fail within about this long, saying the store is unavailable.
REDIS_CONNECT_TIMEOUT_SECONDS = float(os.environ.get("REDIS_CONNECT_TIMEOUT_SECONDS", "0.5"))
REDIS_SOCKET_TIMEOUT_SECONDS = float(os.environ.get("REDIS_SOCKET_TIMEOUT_SECONDS", "0.8"))

# --- The protocol's knobs -------------------------------------------------------------
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
ROOM_EXPORT_SIGNING_KEY = os.environ.get("ROOM_EXPORT_SIGNING_KEY", "")
if ROOM_EXPORT_SIGNING_KEY and len(ROOM_EXPORT_SIGNING_KEY) < 32:
    raise ImproperlyConfigured("ROOM_EXPORT_SIGNING_KEY must be at least 32 characters")
if PRODUCTION and "change-me" in ROOM_EXPORT_SIGNING_KEY:
    raise ImproperlyConfigured("ROOM_EXPORT_SIGNING_KEY is .env.example's placeholder; make one")
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

# --- Quotas: what one tenant may make the shared store hold ---------------------------------
# Each is enforced in the same atomic step as the write it limits. Logs and histories are
# trimmed oldest first (the newest write always lands); everything else is refused with a
# tool error (429 on REST) that names the quota and the current use.
ROOM_EVENT_CAP = env_int("ROOM_EVENT_CAP", 100_000)  # events kept per room
ROOM_EVENT_BYTES_MAX = env_int("ROOM_EVENT_BYTES_MAX", 16 * 1024 * 1024)  # their bytes
ROOM_TASKS_MAX = env_int("ROOM_TASKS_MAX", 2_000)
TASK_NOTES_KEPT = env_int("TASK_NOTES_KEPT", 20)  # the newest notes kept on a task
ROOM_CONTEXT_MAX = env_int("ROOM_CONTEXT_MAX", 500)
CONTEXT_VERSIONS_KEPT = env_int("CONTEXT_VERSIONS_KEPT", 50)  # superseded versions per entry
EVENT_READS_MAX = env_int("EVENT_READS_MAX", 200)  # read receipts per event
ROOM_VARS_MAX = env_int("ROOM_VARS_MAX", 500)
ROOM_LOCKS_MAX = env_int("ROOM_LOCKS_MAX", 500)  # locks held at once
ROOM_LEASES_MAX = env_int("ROOM_LEASES_MAX", 500)  # live file leases
ROOM_FILE_READS_MAX = env_int("ROOM_FILE_READS_MAX", 5_000)  # (agent, file) hashes noted
ROOM_HANDOFFS_MAX = env_int("ROOM_HANDOFFS_MAX", 500)  # handoffs kept (resolved ones go)
ROOM_MESSAGES_MAX = env_int("ROOM_MESSAGES_MAX", 1_000)  # messages kept (the oldest go)
ROOM_DELIVERIES_MAX = env_int("ROOM_DELIVERIES_MAX", 20_000)  # their deliveries, all told
ROOM_MESSAGE_AGENTS_MAX = env_int("ROOM_MESSAGE_AGENTS_MAX", 6_000)  # agents with counts
ROOM_MESSAGE_BYTES_MAX = env_int("ROOM_MESSAGE_BYTES_MAX", 4 * 1024 * 1024)  # their JSON
CONTEXT_READERS_KEPT = env_int("CONTEXT_READERS_KEPT", 100)  # readers remembered per entry
ROOM_REVIEWS_MAX = env_int("ROOM_REVIEWS_MAX", 1_000)  # reviews, pending and resolved
# idempotencyKey records a room keeps, and their bytes; past either the oldest is forgotten
# first (a retry of a forgotten key runs again). A key is kept for the window at most.
ROOM_IDEMPOTENCY_KEYS_MAX = env_int("ROOM_IDEMPOTENCY_KEYS_MAX", 1_000)
ROOM_IDEMPOTENCY_BYTES_MAX = env_int("ROOM_IDEMPOTENCY_BYTES_MAX", 8 * 1024 * 1024)
IDEMPOTENCY_WINDOW_SECONDS = env_int("IDEMPOTENCY_WINDOW_SECONDS", 24 * 3600)
ROOM_AGENTS_MAX = env_int("ROOM_AGENTS_MAX", 1_000)  # presence (the stalest is forgotten)
# A heartbeat answers with this many agents, the most recently seen, and the total.
HEARTBEAT_PRESENCE_MAX = env_int("HEARTBEAT_PRESENCE_MAX", 100)
ROOM_CURSORS_MAX = env_int("ROOM_CURSORS_MAX", 5_000)  # agents reading the log
TEAM_ROOMS_MAX = env_int("TEAM_ROOMS_MAX", 200)  # a team's own room_cap overrides it
TEAM_KEYS_MAX = env_int("TEAM_KEYS_MAX", 200)  # live keys
ROOM_INVITES_MAX = env_int("ROOM_INVITES_MAX", 100)  # live invites and share links
ROOM_WEBHOOKS_MAX = env_int("ROOM_WEBHOOKS_MAX", 5)
TEAM_WEBHOOKS_MAX = env_int("TEAM_WEBHOOKS_MAX", 50)
# Open streams and waiting calls one server process holds, whoever they belong to.
PROCESS_STREAMS_MAX = env_int("PROCESS_STREAMS_MAX", 2_000)
PROCESS_WAITERS_MAX = env_int("PROCESS_WAITERS_MAX", 5_000)
# Kept for other teams: once a process holds all but this share (percent, rounded down) of
# its streams, or of its waiters, the rest go only to teams that hold fewer than
# PROCESS_RESERVED_PER_TEAM of them there (its guests included), so no team, with any
# number of guests, takes the last ones from another team.
PROCESS_RESERVE_PERCENT = env_int("PROCESS_RESERVE_PERCENT", 10)
PROCESS_RESERVED_PER_TEAM = env_int("PROCESS_RESERVED_PER_TEAM", 2)

# --- Access ---------------------------------------------------------------------------
# The protocol's rule: the first team to touch an unknown room id owns it. Off: rooms are
# created only through the API or the dashboard, and an unknown id answers exactly like
# another team's room (no existence oracle, no squatting; docs/protocol.md "Tenancy and access").
ROOM_CLAIM_ON_FIRST_TOUCH = env_bool("ROOM_CLAIM_ON_FIRST_TOUCH", True)
# Tool calls a minute per team (and per invite), sliding window; 0 turns limiting off.
RATE_LIMIT_PER_MINUTE = env_int("RATE_LIMIT_PER_MINUTE", 600)
RATE_LIMIT_INVITE_PER_MINUTE = env_int("RATE_LIMIT_INVITE_PER_MINUTE", 600)
# A team's guests (invites and share links) together: calls a minute, streams, waiting
# calls. Each guest keeps its own budget too; none counts against the team's own. Unset
# (None): the larger of the team's own and one guest's (RATE_LIMIT_PER_MINUTE and
# RATE_LIMIT_INVITE_PER_MINUTE, ...), read when used; calls, unset, have no ceiling when
# the team's own limit is off.
RATE_LIMIT_GUESTS_PER_MINUTE = env_int_or_none("RATE_LIMIT_GUESTS_PER_MINUTE")
SSE_STREAMS_GUESTS_PER_TEAM = env_int_or_none("SSE_STREAMS_GUESTS_PER_TEAM")
WAITERS_GUESTS_PER_TEAM = env_int_or_none("WAITERS_GUESTS_PER_TEAM")
# The limiter's Redis (default: REDIS_URL). When it fails, requests go through (fail open).
RATE_LIMIT_REDIS_URL = os.environ.get("RATE_LIMIT_REDIS_URL", "")
# Server-sent event streams a team may hold open at once; a guest (an invite, a share
# link) has its own, smaller budget that never counts against its team's.
SSE_STREAMS_PER_TEAM = env_int("SSE_STREAMS_PER_TEAM", 20)
SSE_STREAMS_PER_GUEST = env_int("SSE_STREAMS_PER_GUEST", 2)
# The keep-alive period: also how often every open stream and waiting call re-checks that
# its credential is still live (revocations reach them sooner, through Redis).
SSE_KEEPALIVE_SECONDS = env_int("SSE_KEEPALIVE_SECONDS", 15)
# After this long a stream ends and the client reconnects (and is checked again).
SSE_MAX_LIFETIME_SECONDS = env_int("SSE_MAX_LIFETIME_SECONDS", 900)
# wait_for_events calls waiting at once, per team and per guest.
WAITERS_PER_TEAM = env_int("WAITERS_PER_TEAM", 1000)
WAITERS_PER_GUEST = env_int("WAITERS_PER_GUEST", 5)
# Static team keys, "team:secret,team2:secret2" (docs/protocol.md "Tenancy and access").
API_KEYS = os.environ.get("API_KEYS", "")
# The largest request body /mcp reads before answering 413.
MCP_MAX_BODY_BYTES = env_int("MCP_MAX_BODY_BYTES", 1_000_000)
# Browser origins /mcp answers besides the service's own host names (ALLOWED_HOSTS, or the
# loopback names while that is "*") and CSRF_TRUSTED_ORIGINS: a request with any other
# Origin header is refused with 403 (MCP's guard against DNS rebinding). Comma-separated
# scheme://host[:port], e.g. a browser-based MCP client's.
MCP_ALLOWED_ORIGINS = [
    o.strip().rstrip("/") for o in os.environ.get("MCP_ALLOWED_ORIGINS", "").split(",") if o.strip()
]
# How long a client may keep a tools/list (and server/discover) answer before asking again
# (MCP 2026-07-28 ttlMs); the list changes only when the service is upgraded.
MCP_LIST_TTL_SECONDS = env_int("MCP_LIST_TTL_SECONDS", 3600)
# How long a lease the hooks endpoint makes after an edit lasts (docs/hooks.md, "Claude Code
# over HTTP"); the next edit of the file renews it. Within lease_claim's 10-3600 s.
HOOK_LEASE_SECONDS = env_int("HOOK_LEASE_SECONDS", 900)
if not 10 <= HOOK_LEASE_SECONDS <= 3600:
    raise ImproperlyConfigured("HOOK_LEASE_SECONDS must be between 10 and 3600")

# --- Celery ---------------------------------------------------------------------------
# Default: the same Redis (a unix socket URL becomes Celery's redis+socket form).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or (
    "redis+socket://" + REDIS_URL[len("unix://") :]
    if REDIS_URL.startswith("unix://")
    else REDIS_URL
)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
if REDIS_CLUSTER and not os.environ.get("CELERY_BROKER_URL") and not CELERY_TASK_ALWAYS_EAGER:
    raise ImproperlyConfigured(
        "REDIS_CLUSTER=true: Celery cannot use a Redis Cluster as its broker. Set "
        "CELERY_BROKER_URL to a plain Redis or RabbitMQ (webhook deliveries and the periodic "
        "clean-ups run there), or CELERY_TASK_ALWAYS_EAGER=true to run them in the web process."
    )
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    # Claims whose lease ran out go back to pending (rooms.services.claims_sweep).
    "claims-sweep": {"task": "claims.sweep", "schedule": float(CLAIM_SWEEP_SECONDS)},
    # Idle rooms move to Postgres before Redis would drop them (tenants.archives).
    "archives-sweep": {"task": "archives.sweep", "schedule": float(ROOM_ARCHIVE_SWEEP_SECONDS)},
    # Redis clean-ups of deleted rows that could not run at the time (tenants.purges).
    "purges-retry": {"task": "purges.retry", "schedule": 60.0},
    # Webhook deliveries owed (deferred, or a worker died holding them), and old records.
    "webhooks-resume": {"task": "webhooks.resume", "schedule": 60.0},
    "webhooks-prune": {"task": "webhooks.prune", "schedule": 3600.0},
}

# --- Webhooks ---------------------------------------------------------------------------
# Receivers on private, loopback, link-local (cloud metadata) or reserved addresses are
# refused unless this is on (tests and local development receivers).
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env_bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 5)
WEBHOOK_DNS_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOK_DNS_TIMEOUT_SECONDS", "2"))
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 6)
# After this many failed attempts in a row a webhook's breaker opens: no attempt on it for
# WEBHOOK_BREAKER_SECONDS (a black-holed receiver stops holding workers).
WEBHOOK_BREAKER_FAILURES = env_int("WEBHOOK_BREAKER_FAILURES", 5)
WEBHOOK_BREAKER_SECONDS = env_int("WEBHOOK_BREAKER_SECONDS", 60)
# Deliveries one team may have in flight at once (its slow receivers hold no one else's).
WEBHOOK_TEAM_CONCURRENCY = env_int("WEBHOOK_TEAM_CONCURRENCY", 2)
# Finished delivery records are deleted after this many days.
WEBHOOK_DELIVERY_RETENTION_DAYS = env_int("WEBHOOK_DELIVERY_RETENTION_DAYS", 14)
# A webhook is disabled after this many deliveries in a row failed for good.
WEBHOOK_DISABLE_AFTER = env_int("WEBHOOK_DISABLE_AFTER", 5)
# How often the relay re-reads which rooms have webhooks (it is also told at once).
RELAY_REFRESH_SECONDS = env_int("RELAY_REFRESH_SECONDS", 30)

REST_FRAMEWORK: dict[str, object] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.drf.JsonParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "tenants.apis.base.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Roomservice API",
    "DESCRIPTION": "Teams, keys, rooms and invites for Room Protocol servers. Bearer auth.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # 3.1: JSON Schema proper, so the tools' input schemas (nullable fields) go in as they are.
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "mcp_gateway.openapi.add_tool_paths",
    ],
    "APPEND_COMPONENTS": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "SECURITY": [{"bearer": []}],
}

# Logs: plain lines, or one JSON object per line with LOG_FORMAT=json; both carry the
# request id (config.telemetry).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "config.telemetry.RequestIdFilter"}},
    "formatters": {
        "plain": {
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s%(trace)s] %(message)s"
        },
        "json": {"()": "config.telemetry.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "plain",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # One line per outgoing request or finished task is noise at this volume.
        "httpx": {"level": "WARNING"},
        "celery.app.trace": {"level": "WARNING"},
        "celery.worker.strategy": {"level": "WARNING"},
    },
}

# Who may read /metrics: local (loopback clients), token (Bearer METRICS_TOKEN), open, off.
METRICS_ACCESS = os.environ.get("METRICS_ACCESS", "local")
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
if METRICS_ACCESS not in ("local", "token", "open", "off") or (
    METRICS_ACCESS == "token" and not METRICS_TOKEN
):
    raise ImproperlyConfigured("METRICS_ACCESS is local, token (with METRICS_TOKEN), open or off.")

# --- Behind HTTPS (the production shape: TLS ends at a proxy in front of the web processes)
# SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto:https": the header and value the proxy sets on
# HTTPS requests (the default in production); without it every POST behind HTTPS fails CSRF.
_proxy_ssl = os.environ.get(
    "SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto:https" if PRODUCTION else ""
)
if _proxy_ssl:
    _name, _, _value = _proxy_ssl.partition(":")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _name.strip().upper().replace("-", "_"), _value.strip())
# The origins a form may be posted from (scheme://host[:port]); by default PUBLIC_URL's.
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", PUBLIC_URL).split(",") if o.strip()
]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", PRODUCTION and not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
