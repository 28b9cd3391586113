"""`manage.py room_restore <room_id>...`: bring archived rooms back, exactly, and active."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants import archives
from tenants.models import Room


class Command(BaseCommand):
    help = "Restore archived rooms (a room that is not archived is left as it is)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("room_ids", nargs="+", help="rooms to restore")

    def handle(self, *args: Any, **options: Any) -> None:
        for room_id in options["room_ids"]:
            try:
                move = archives.room_restore(room_id, actor="cli")
            except Room.DoesNotExist:
                raise CommandError(f"no room {room_id!r}") from None
            self.stdout.write(f"{room_id}: {move.previous} -> {move.status}")
