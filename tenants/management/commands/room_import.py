"""`manage.py room_import <team-slug> <file> [--room-id ID]`: a new room of the team from
a document room_export (or the API) gave."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rooms.errors import DomainError
from tenants import archives
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
        try:
            document = json.loads(Path(options["file"]).read_text(encoding="utf-8"))
            room = archives.room_import(
                team=team, document=document, room_id=options["room_id"], actor="cli"
            )
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from None
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"imported {room.room_id} into {team.slug}")
