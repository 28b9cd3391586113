"""`manage.py mint_invite <roomId> [--label L] [--expires-in SECONDS] [--agent A] [--read-only]`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rooms import clock
from tenants.models import Room
from tenants.services import invite_create


class Command(BaseCommand):
    help = "Mint an invite to one existing room. The secret is printed once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("room_id")
        parser.add_argument("--label", default="")
        parser.add_argument("--expires-in", type=int, default=None, help="seconds")
        parser.add_argument("--agent", default="")
        parser.add_argument("--read-only", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        room = Room.objects.select_related("team").filter(room_id=options["room_id"]).first()
        if room is None:
            raise CommandError(f"no room {options['room_id']!r}")
        seconds = options["expires_in"]
        minted = invite_create(
            room=room,
            label=options["label"],
            expires_at=clock.now() + timedelta(seconds=seconds) if seconds else None,
            agent_name=options["agent"],
            read_only=options["read_only"],
            actor="cli",
        )
        self.stdout.write(minted.secret)
