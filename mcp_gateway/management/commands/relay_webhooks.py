"""`manage.py relay_webhooks`: the webhook relay as a long-running process (mcp_gateway/relay)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from django.core.management.base import BaseCommand

from mcp_gateway.relay import Relay


class Command(BaseCommand):
    help = "Relay room events to webhooks, woken by each room's writes. Runs until stopped."

    def handle(self, *args: Any, **options: Any) -> None:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(Relay().run())
