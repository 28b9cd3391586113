"""The Celery app: webhook deliveries and the retry of pending Redis clean-ups."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("roomservice")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["mcp_gateway"])
