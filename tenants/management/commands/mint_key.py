"""`manage.py mint_key <team> [--name N]`: a new team key, printed once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tenants.services import api_key_create, team_create


class Command(BaseCommand):
    help = "Mint a dynamic API key for a team (created if new). The secret is printed once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", help="team slug")
        parser.add_argument("--name", default="cli key")

    def handle(self, *args: Any, **options: Any) -> None:
        team = team_create(slug=options["team"])
        minted = api_key_create(team=team, name=options["name"])
        self.stdout.write(minted.secret)
