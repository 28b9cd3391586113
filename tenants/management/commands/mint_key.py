"""`manage.py mint_key <team> [--name N] [--agent A] [--read-only]`: printed once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tenants.services import api_key_create, team_ensure


class Command(BaseCommand):
    help = "Mint a team key (the team is created if new). The secret is printed once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", help="team slug")
        parser.add_argument("--name", default="cli key")
        parser.add_argument("--agent", default="", help="attribute every call to this agent")
        parser.add_argument("--read-only", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        minted = api_key_create(
            team=team_ensure(options["team"]),
            name=options["name"],
            agent_name=options["agent"],
            read_only=options["read_only"],
            actor="cli",
        )
        self.stdout.write(minted.secret)
