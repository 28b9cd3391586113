"""`manage.py backup <file.tar.gz> [--force]`: the database's rows and a snapshot of every
live room in one archive (calls.backups); the service keeps running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from calls import backups


class Command(BaseCommand):
    help = "Back up the database and every live room's state into one .tar.gz (restore reads it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the archive to write, e.g. roomservice-2030-01-31.tar.gz")
        parser.add_argument("--force", action="store_true", help="replace the file if it exists")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        try:
            manifest = backups.backup_write(path, force=options["force"])
        except backups.BackupError as exc:
            raise CommandError(exc.message) from None
        counts = manifest["counts"]
        rows = sum(counts["rows"].values())
        gone = manifest["rooms"]["gone"]
        self.stdout.write(
            f"wrote {path}: {rows} rows, {counts['liveRooms']} live rooms, "
            f"{counts['archivedRooms']} archived rooms"
            + (f" ({len(gone)} deleted while it ran, left out)" if gone else "")
        )
