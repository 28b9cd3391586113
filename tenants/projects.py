"""A team's named projects: a new room of a project inherits the durable decisions and
contracts of the project's earlier rooms (rooms.memory), whether they are live in Redis or
archived in Postgres."""

from __future__ import annotations

from django.conf import settings

from rooms import memory
from rooms.keys import RoomKeys
from rooms.results import ContextEntry
from rooms.store import engine as engine_store
from tenants.models import Room, RoomArchive


def project_memory_seed(room: Room) -> int:
    """Give `room` its project's memory (the newest PROJECT_ROOMS_MAX earlier rooms of the
    same team and project, newest first). Returns how many entries it inherited."""
    if not room.project:
        return 0
    earlier = (
        Room.objects.filter(team_id=room.team_id, project=room.project)
        .exclude(pk=room.pk)
        .order_by("-created_at", "-pk")[: int(settings.PROJECT_ROOMS_MAX)]
    )
    gathered: list[tuple[str, list[ContextEntry]]] = []
    for other in earlier:
        if other.status == Room.Status.ARCHIVED:
            archive = RoomArchive.objects.filter(room=other).first()
            entries = memory.memory_of_document(archive.document) if archive else []
        else:
            entries = engine_store.run_sync(memory.memory_of_room, RoomKeys(other.room_id))
        gathered.append((other.room_id, entries))
    return engine_store.run_sync(
        memory.memory_seed, RoomKeys(room.room_id), project=room.project, earlier=gathered
    )
