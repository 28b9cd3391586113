"""Logs (plain lines, or one JSON object per line; both carry the request id) and who may
read /metrics (config/telemetry.py)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.env import env_str

LOG_FORMAT = env_str("LOG_FORMAT", "plain")
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
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # One line per outgoing request or finished task is noise at this volume.
        "httpx": {"level": "WARNING"},
        "celery.app.trace": {"level": "WARNING"},
        "celery.worker.strategy": {"level": "WARNING"},
    },
}

# Who may read /metrics: local (loopback clients), token (Bearer METRICS_TOKEN), open, off.
METRICS_ACCESS = env_str("METRICS_ACCESS", "local")
METRICS_TOKEN = env_str("METRICS_TOKEN")
if METRICS_ACCESS not in ("local", "token", "open", "off") or (
    METRICS_ACCESS == "token" and not METRICS_TOKEN
):
    raise ImproperlyConfigured("METRICS_ACCESS is local, token (with METRICS_TOKEN), open or off.")
