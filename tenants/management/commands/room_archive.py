"""`manage.py room_archive <room_id>...`: move rooms to Postgres now (the sweep does it for
idle rooms); `--sweep` archives every room due, as the periodic task does."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants import archives
from tenants.models import Room


class Command(BaseCommand):
    help = "Archive rooms to the database (they are restored with room_restore)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("room_ids", nargs="*", help="rooms to archive")
        parser.add_argument("--sweep", action="store_true", help="every room due, as beat does")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["sweep"]:
            done = archives.archives_sweep()
            self.stdout.write(f"archived {len(done)} idle rooms: {', '.join(done) or '-'}")
        elif not options["room_ids"]:
            raise CommandError("name the rooms to archive, or pass --sweep")
        for room_id in options["room_ids"]:
            try:
                move = archives.room_archive(room_id, actor="cli")
            except Room.DoesNotExist:
                raise CommandError(f"no room {room_id!r}") from None
            self.stdout.write(f"{room_id}: {move.previous} -> {move.status}")
