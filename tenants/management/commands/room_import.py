"""`manage.py room_import <team-slug> <file> [--room-id ID]`: a new room of the team from
a document room_export (or the API) gave."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rooms import snapshots
from rooms.errors import DomainError
from tenants import archives, imports
from tenants.models import Team


class Command(BaseCommand):
    help = "Import an exported room into a team."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", help="the team's slug")
        parser.add_argument("file")
        parser.add_argument("--room-id", help="the new room's id (default: the exported one)")

    def handle(self, *args: Any, **options: Any) -> None:
        team = Team.objects.filter(slug=options["team"]).first()
        if team is None:
            raise CommandError(f"no team {options['team']!r}")
        path, room_id = Path(options["file"]), options["room_id"]
        try:
            with path.open("rb") as file:
                head = file.read(200)
            if snapshots.document_is_legacy(head):  # signed before export signed its bytes
                document = json.loads(path.read_text(encoding="utf-8"))
                room = archives.room_import_legacy(
                    team=team, document=document, room_id=room_id, actor="cli"
                )
            else:
                with (
                    path.open("rb") as file,
                    imports.spooled(file, most=path.stat().st_size) as body,
                ):
                    room = archives.room_import(team=team, body=body, room_id=room_id, actor="cli")
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from None
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"imported {room.room_id} into {team.slug}")
