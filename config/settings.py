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


DEBUG = env_bool("DEBUG", False)
PRODUCTION = env_bool("PRODUCTION", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when PRODUCTION=1")
    SECRET_KEY = "dev-only-insecure-secret-key-change-me-in-production"
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "*").split(",") if h]

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
# Failed sign-ins allowed per address and per email in 15 minutes.
LOGIN_FAILURES_ALLOWED = env_int("LOGIN_FAILURES_ALLOWED", 10)
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Roomservice <noreply@localhost>")
# The URL people and agents reach this service at (for links in emails and snippets);
# empty: taken from each request.
PUBLIC_URL = os.environ.get("PUBLIC_URL", "").rstrip("/")
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"

# --- Redis: the hot room state -------------------------------------------------------
# Empty means "the embedded server": whoever starts the process (serve, tests, bench)
# starts it first and exports its URL here.
REDIS_URL = os.environ.get("REDIS_URL", "")
# Every key this deployment writes starts with this prefix; tests use their own.
REDIS_KEY_PREFIX = os.environ.get("REDIS_KEY_PREFIX", "rs")
REDIS_MAX_CONNECTIONS = env_int("REDIS_MAX_CONNECTIONS", 64)

# --- The protocol's knobs -------------------------------------------------------------
ROOM_IDLE_TTL_SECONDS = env_int("ROOM_IDLE_TTL_SECONDS", 30 * 24 * 3600)
ROOM_EVENT_CAP = env_int("ROOM_EVENT_CAP", 100_000)
PRESENCE_ONLINE_SECONDS = env_int("PRESENCE_ONLINE_SECONDS", 120)

# --- Access ---------------------------------------------------------------------------
# The protocol's rule: the first team to touch an unknown room id owns it. Off: rooms are
# created only through the API or the dashboard, and an unknown id answers exactly like
# another team's room (no existence oracle, no squatting; seeds/000 §8.5).
ROOM_CLAIM_ON_FIRST_TOUCH = env_bool("ROOM_CLAIM_ON_FIRST_TOUCH", True)
# Tool calls a minute per team (and per invite), sliding window; 0 turns limiting off.
RATE_LIMIT_PER_MINUTE = env_int("RATE_LIMIT_PER_MINUTE", 600)
RATE_LIMIT_INVITE_PER_MINUTE = env_int("RATE_LIMIT_INVITE_PER_MINUTE", 600)
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
# Static team keys, "team:secret,team2:secret2" (seeds/000 §8.1).
API_KEYS = os.environ.get("API_KEYS", "")
# The largest request body /mcp reads before answering 413.
MCP_MAX_BODY_BYTES = env_int("MCP_MAX_BODY_BYTES", 1_000_000)
# "thin" (our dispatcher on the SDK's types) or "sdk" (the SDK's request handling); see
# `make bench` for why thin is the default.
MCP_DISPATCH = os.environ.get("MCP_DISPATCH", "thin")

# --- Celery ---------------------------------------------------------------------------
# Default: the same Redis (a unix socket URL becomes Celery's redis+socket form).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or (
    "redis+socket://" + REDIS_URL[len("unix://") :]
    if REDIS_URL.startswith("unix://")
    else REDIS_URL
)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    # Redis clean-ups of deleted rows that could not run at the time (tenants.purges).
    "purges-retry": {"task": "purges.retry", "schedule": 60.0},
}

# --- Webhooks ---------------------------------------------------------------------------
# Receivers on private, loopback, link-local (cloud metadata) or reserved addresses are
# refused unless this is on (tests and local development receivers).
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env_bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 6)
# A webhook is disabled after this many deliveries in a row failed for good.
WEBHOOK_DISABLE_AFTER = env_int("WEBHOOK_DISABLE_AFTER", 5)
# How often the relay re-reads which rooms have webhooks (it is also told at once).
RELAY_REFRESH_SECONDS = env_int("RELAY_REFRESH_SECONDS", 30)

REST_FRAMEWORK: dict[str, object] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "tenants.apis.exception_handler",
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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # One line per outgoing request or finished task is noise at this volume.
        "httpx": {"level": "WARNING"},
        "celery.app.trace": {"level": "WARNING"},
        "celery.worker.strategy": {"level": "WARNING"},
    },
}

SESSION_COOKIE_SECURE = env_bool(
    "SESSION_COOKIE_SECURE", not DEBUG and bool(os.environ.get("PRODUCTION"))
)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
