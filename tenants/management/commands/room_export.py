"""`manage.py room_export <room_id> [-o file]`: the room as one signed JSON document."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants import archives
from tenants.models import Room


class Command(BaseCommand):
    help = "Export a room (live or archived) as JSON; room_import takes it back."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("room_id")
        parser.add_argument("-o", "--output", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            document = archives.room_export(options["room_id"])
        except Room.DoesNotExist:
            raise CommandError(f"no room {options['room_id']!r}") from None
        if options["output"]:
            Path(options["output"]).write_bytes(document)
        else:
            sys.stdout.buffer.write(document)
