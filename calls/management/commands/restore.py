"""`manage.py restore <file.tar.gz> [--force]`: a backup's rows into this (empty, migrated)
database and its live rooms into Redis (calls.backups). Stop the web, worker, beat and
relay processes first: they remember rows in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from calls import backups


class Command(BaseCommand):
    help = "Restore a backup made by `manage.py backup` into an empty, migrated database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the archive `manage.py backup` wrote")
        parser.add_argument(
            "--force",
            action="store_true",
            help="restore over a database that holds rows, replacing them",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        try:
            manifest = backups.backup_restore(
                path, force=options["force"], say=lambda line: self.stderr.write(line)
            )
        except backups.BackupError as exc:
            raise CommandError(exc.message) from None
        counts = manifest["counts"]
        self.stdout.write(
            f"restored {path} (taken {manifest['startedAt']} by version "
            f"{manifest['serviceVersion']}): {sum(counts['rows'].values())} rows, "
            f"{counts['liveRooms']} live rooms, {counts['archivedRooms']} archived rooms"
        )
