"""`manage.py create_team <slug> [--name N] [--room-cap N]`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rooms.errors import DomainError
from tenants.services import team_create


class Command(BaseCommand):
    help = "Create a team."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default=None)
        parser.add_argument("--room-cap", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            team = team_create(slug=options["slug"], name=options["name"], actor="cli")
        except DomainError as exc:
            raise CommandError(exc.message) from None
        if options["room_cap"] is not None:
            team.room_cap = options["room_cap"]
            team.save(update_fields=["room_cap"])
        self.stdout.write(team.slug)
