"""Django itself: the apps, middleware, templates, static files, DRF and the OpenAPI schema;
DEBUG, PRODUCTION and where a local run keeps its data (VAR_DIR)."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_holding, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("ROOMSERVICE_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
PRODUCTION = env_bool("PRODUCTION", False)
# What .env.example holds until it is filled in (tests.test_production reads the file): a
# production process refuses to start while any environment variable carries one.
PLACEHOLDERS = ("change-me", "rooms.example.com")
if PRODUCTION and (_unfilled := env_holding(PLACEHOLDERS)):
    raise ImproperlyConfigured(
        f"{', '.join(_unfilled)}: still .env.example's placeholder; fill in your own "
        "(a secret: python3 -c 'import secrets; print(secrets.token_urlsafe(50))')"
    )

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "oauth2_provider",
    "rooms",
    "tenants",
    "calls",
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

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files (the stylesheet, htmx, the admin's) are served by config/asgi.py straight
# from the apps' folders: no collectstatic step, no CDN, works offline.
STATIC_ROOT = env_str("STATIC_ROOT") or None

REST_FRAMEWORK: dict[str, object] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.drf.JsonParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "mcp_gateway.apis.base.exception_handler",
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
