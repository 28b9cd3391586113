"""Rooms: list and create them, archive and restore, delete, export and import, and the
room at a glance (GET /room/<roomId>)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from mcp_gateway.apis.base import ERRORS, BearerView, ErrorSerializer, team_of
from rooms.schemas import ROOM_ID_RULE, room_id_valid
from rooms.selectors import context as context_selectors
from rooms.selectors import plan as plan_selectors
from rooms.selectors import presence as presence_selectors
from rooms.store import engine as engine_store
from rooms.store import events as events_store
from tenants import access, archives, imports, selectors, services
from tenants.capabilities import Caller, Manage
from tenants.models import Room


class RoomOut(serializers.Serializer):  # type: ignore[type-arg]
    # Documents tenants.selectors.room_row (rooms.results.RoomRow, the tools' room too).
    roomId = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    project = serializers.CharField(allow_blank=True)
    status = serializers.CharField()
    created_at = serializers.CharField()
    last_active_at = serializers.CharField()


class RoomIn(serializers.Serializer):  # type: ignore[type-arg]
    roomId = serializers.CharField(
        max_length=64, required=False, help_text="Leave out for an unguessable generated id."
    )
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    project = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        default="",
        help_text="A named project of the team: the room starts with the durable decisions "
        "and contracts of the project's earlier rooms.",
    )

    def validate_roomId(self, value: str) -> str:
        if not room_id_valid(value):
            raise serializers.ValidationError(f"a roomId is {ROOM_ID_RULE}")
        return value


class RoomListApi(BearerView):
    @extend_schema(responses={200: RoomOut(many=True), **ERRORS}, summary="The caller's rooms")
    def get(self, request: Request) -> Response:
        return Response(selectors.room_list_for_caller(self.caller(request)))

    @extend_schema(
        request=RoomIn,
        responses={201: RoomOut, 409: ErrorSerializer, **ERRORS},
        summary="Create a room",
    )
    def post(self, request: Request) -> Response:
        caller = self.managing(request, Manage.ROOMS)
        data = RoomIn(data=request.data)
        data.is_valid(raise_exception=True)
        room = services.room_create(
            team=team_of(caller),
            room_id=data.validated_data.get("roomId"),
            name=data.validated_data["name"],
            actor=caller.actor,
            project=data.validated_data["project"].strip(),
        )
        return Response(selectors.room_row(room), status=status.HTTP_201_CREATED)


class RoomStatusMoveOut(serializers.Serializer):  # type: ignore[type-arg]
    roomId = serializers.CharField()
    status = serializers.CharField()
    previousStatus = serializers.CharField()


class RoomStatusMoveApi(BearerView):
    """A move into or out of the archive, by a credential that may manage rooms and write."""

    def moved(self, request: Request, room_id: str, restore: bool) -> Response:
        caller = self.managing(request, Manage.ROOMS)
        access.require_write(caller)
        room = access.room_for_caller(caller, room_id)
        move = archives.room_restore if restore else archives.room_archive
        return Response(move(room.room_id, actor=caller.actor).result())


class RoomArchiveApi(RoomStatusMoveApi):
    """Move a room to the database now; reads answer from the archive until a restore."""

    @extend_schema(
        request=None, responses={200: RoomStatusMoveOut, **ERRORS}, summary="Archive a room"
    )
    def post(self, request: Request, room_id: str) -> Response:
        return self.moved(request, room_id, restore=False)


class RoomRestoreApi(RoomStatusMoveApi):
    """Bring an archived room back exactly (event ids included) and active; idempotent."""

    @extend_schema(
        request=None, responses={200: RoomStatusMoveOut, **ERRORS}, summary="Restore a room"
    )
    def post(self, request: Request, room_id: str) -> Response:
        return self.moved(request, room_id, restore=True)


class RoomDeletedOut(serializers.Serializer):  # type: ignore[type-arg]
    roomId = serializers.CharField()
    deleted = serializers.BooleanField()


class RoomDeleteApi(BearerView):
    """Delete a room for good, by a credential that may manage rooms and write: its plan,
    context, log and credentials go with it (export it first to keep a copy)."""

    @extend_schema(request=None, responses={200: RoomDeletedOut, **ERRORS}, summary="Delete a room")
    def delete(self, request: Request, room_id: str) -> Response:
        caller = self.managing(request, Manage.ROOMS)
        access.require_write(caller)
        room = access.room_for_caller(caller, room_id)
        services.room_delete(room=room, actor=caller.actor)
        return Response({"roomId": room_id, "deleted": True})


class RoomExportApi(BearerView):
    """The room as one signed JSON document (POST /api/rooms/import takes it back): the
    exact bytes the signature covers, so they are handed out as they are, not re-rendered."""

    @extend_schema(
        responses={200: OpenApiResponse(description="the room document"), **ERRORS},
        summary="Export a room",
    )
    def get(self, request: Request, room_id: str) -> HttpResponse:
        _, room = self.managing_room(request, Manage.ROOMS, room_id)
        response = HttpResponse(archives.room_export(room.room_id), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{room.room_id}.room.json"'
        return response


class RoomImportApi(BearerView):
    """A new room of the caller's team from an exported document, under `?roomId=` or the
    document's own id. The body is read here, in chunks, into a bounded spool while its
    signature is checked (tenants.imports): over ROOM_IMPORT_BYTES_MAX it is refused (413)
    as soon as that is passed, and nothing is parsed before the signature matched. One
    import at a time per team (429), ROOM_IMPORTS_PER_PROCESS per process (503)."""

    parser_classes: list[Any] = []

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={201: RoomOut, 413: ErrorSerializer, 429: ErrorSerializer, **ERRORS},
        summary="Import a room",
    )
    def post(self, request: Request) -> Response:
        caller = self.managing(request, Manage.ROOMS)
        access.require_write(caller)
        team = team_of(caller)
        room_id = request.query_params.get("roomId") or None
        with (
            imports.process_slot(),
            imports.team_slot(team.pk),
            imports.spooled(request._request) as body,
        ):
            room = imports.off_loop(
                archives.room_import,
                team=team,
                body=body,
                room_id=room_id,
                actor=caller.actor,
                pace=imports.Pacer(),
            )
        return Response(selectors.room_row(room), status=status.HTTP_201_CREATED)


class RoomSummaryOut(RoomOut):
    tasks = serializers.DictField(child=serializers.IntegerField())
    agents = serializers.ListField(child=serializers.DictField())
    contextEntries = serializers.IntegerField()
    events = serializers.IntegerField()


async def room_summary(caller: Caller, room: Room) -> dict[str, Any]:
    ref = await access.room_access(caller, room.room_id, write=False)
    plan = await plan_selectors.plan_get(ref)
    counts = {"total": len(plan["tasks"])}
    for state in ("pending", "in_progress", "done", "blocked"):
        counts[state] = sum(1 for t in plan["tasks"] if t["status"] == state)
    context = await context_selectors.context_list(ref, type_=None, author=None)
    return {
        **selectors.room_row(room),
        "tasks": counts,
        "agents": await presence_selectors.presence_list(ref),
        "contextEntries": len(context),
        "events": await events_store.event_count(ref.keys),
    }


class RoomSummaryApi(BearerView):
    """The room summary (docs/protocol.md "Tenancy and access"), for a caller with access
    (roomd's is public)."""

    @extend_schema(responses={200: RoomSummaryOut, **ERRORS}, summary="A room at a glance")
    def get(self, request: Request, room_id: str) -> Response:
        caller = self.caller(request)
        room = access.room_for_caller(caller, room_id)
        return Response(engine_store.run_sync(room_summary, caller, room))
