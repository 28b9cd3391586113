"""`manage.py search_reindex [roomId ...]`: index what rooms held before search existed.

Rooms written since the index came are indexed by their writes; this walks the events
older than that (and every task and context entry) in short steps, so the service keeps
serving while it runs. It is safe to repeat or interrupt: nothing is indexed twice.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from rooms import search
from rooms.keys import RoomKeys
from rooms.store import engine as engine_store
from tenants.models import Room


class Command(BaseCommand):
    help = "Index the rooms' tasks, context entries and events written before search existed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("rooms", nargs="*", help="room ids (default: every room)")

    def handle(self, *args: Any, **options: Any) -> None:
        wanted: list[str] = options["rooms"]
        rooms = Room.objects.order_by("room_id")
        if wanted:
            rooms = rooms.filter(room_id__in=wanted)
        ids = list(rooms.values_list("room_id", flat=True))
        for missing in sorted(set(wanted) - set(ids)):
            self.stderr.write(f"no room {missing!r}")
        for room_id in ids:
            counts = engine_store.run_sync(search.room_reindex, RoomKeys(room_id))
            self.stdout.write(
                f"{room_id}: {counts['events']} events, {counts['tasks']} tasks, "
                f"{counts['context']} context entries indexed"
            )
