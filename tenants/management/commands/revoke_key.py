"""`manage.py revoke_key <prefix-or-id>`: refused from the next request, on every server."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from tenants.models import ApiKey
from tenants.services import api_key_revoke


class Command(BaseCommand):
    help = "Revoke a team key by its id or display prefix."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", help="the key's id or its display prefix (rs_live_…)")

    def handle(self, *args: Any, **options: Any) -> None:
        ref = options["key"]
        query = Q(prefix=ref) | (Q(pk=int(ref)) if ref.isdigit() else Q())
        keys = list(ApiKey.objects.filter(query).select_related("team"))
        if len(keys) != 1:
            raise CommandError(f"{len(keys)} keys match {ref!r}; give the id instead")
        key = api_key_revoke(key=keys[0], actor="cli")
        self.stdout.write(f"revoked {key.prefix}… ({key.team.slug})")
