"""The REST API under /api/v1/ (DRF), bearer-authenticated like /mcp.

Thin doors: each view parses input, resolves the caller (BearerAuthentication), calls one
service or selector, and formats the result. Errors are `DomainError`s mapped by
`exception_handler` to `{message, code, extra}` with their status.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, NoReturn

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from rooms import clock, store
from rooms import selectors as room_selectors
from rooms.errors import (
    DATABASE_UNAVAILABLE,
    STORE_UNAVAILABLE,
    DomainError,
    StoreUnavailableError,
)
from rooms.schemas import ROOM_ID_RULE, room_id_valid
from tenants import access, archives, budgets, imports, selectors, services, webhooks
from tenants.auth import UNAUTHORIZED, bearer_from_header, caller_resolve_sync
from tenants.capabilities import Caller, Manage
from tenants.models import ApiKey, Invite, Room, Team, Webhook, WebhookDelivery

# --- Authentication and errors ---------------------------------------------------------------


class BearerAuthentication(BaseAuthentication):
    """`Authorization: Bearer <secret>` -> a Caller, through tenants.auth like every door."""

    def authenticate(self, request: Request) -> tuple[Any, Caller] | None:
        header = request.META.get("HTTP_AUTHORIZATION")
        if not header:
            return None
        caller = caller_resolve_sync(bearer_from_header(header))
        if caller is None:
            raise exceptions.AuthenticationFailed(UNAUTHORIZED)
        return (None, caller)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="roomservice"'


class HasCaller(BasePermission):
    message = UNAUTHORIZED

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, Caller)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, store.StoreDown):
        exc = StoreUnavailableError(STORE_UNAVAILABLE)
    elif isinstance(exc, OperationalError | InterfaceError):
        exc = StoreUnavailableError(DATABASE_UNAVAILABLE)
    if isinstance(exc, DomainError):
        return Response(exc.body(), status=exc.status, headers=exc.headers())
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        detail = response.data.pop("detail")
        response.data = {
            "message": str(detail),
            "code": getattr(detail, "code", "error"),
            "extra": response.data,
        }
    elif response is not None:
        response.data = {"message": "Invalid input.", "code": "invalid", "extra": response.data}
    return response


class BearerView(APIView):
    authentication_classes = [BearerAuthentication]
    permission_classes = [HasCaller]

    def permission_denied(
        self, request: Request, message: str | None = None, code: str | None = None
    ) -> NoReturn:
        # No Authorization header at all: say what to send, as every other door does
        # (DRF's own text would be "Authentication credentials were not provided.").
        if request.authenticators and not request.successful_authenticator:
            raise exceptions.NotAuthenticated(UNAUTHORIZED)
        super().permission_denied(request, message, code)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # Every API call counts against the caller's budget, like a tool call.
        store.run_sync(budgets.call_charge, self.caller(request))

    def caller(self, request: Request) -> Caller:
        assert isinstance(request.auth, Caller)
        return request.auth

    def managing(self, request: Request, what: Manage) -> Caller:
        """The caller, if it may manage `what` (tenants.access decides; this only asks)."""
        caller = self.caller(request)
        access.require(caller, what)
        return caller


def team_of(caller: Caller) -> Team:
    team = selectors.team_get(caller.team_id)
    if team is None:  # the team was deleted while this request was on its way
        raise exceptions.AuthenticationFailed(UNAUTHORIZED)
    return team


_iso = selectors.iso


ErrorSerializer = inline_serializer(
    "Error",
    {
        "message": serializers.CharField(),
        "code": serializers.CharField(),
        "extra": serializers.DictField(),
    },
)
ERRORS = {
    401: OpenApiResponse(ErrorSerializer, "missing or unknown bearer"),
    403: OpenApiResponse(ErrorSerializer, "not permitted for this key"),
    404: OpenApiResponse(ErrorSerializer, "not found (or not yours: the same answer)"),
}


# --- /me -------------------------------------------------------------------------------------


class MeOut(serializers.Serializer):  # type: ignore[type-arg]
    team = serializers.CharField()
    teamId = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["static", "key", "invite"])
    roomId = serializers.CharField(allow_null=True)
    agent = serializers.CharField(allow_null=True)
    readOnly = serializers.BooleanField()
    manage = serializers.ListField(child=serializers.CharField())


class MeApi(BearerView):
    @extend_schema(
        responses={200: MeOut, **ERRORS}, summary="Who this bearer is, and what it may do"
    )
    def get(self, request: Request) -> Response:
        c = self.caller(request)
        return Response(
            {
                "team": c.team_slug,
                "teamId": c.team_id,
                "kind": c.kind,
                "roomId": c.room,
                "agent": c.agent,
                "readOnly": not c.write,
                "manage": sorted(c.manage),
            }
        )


# --- Keys ------------------------------------------------------------------------------------


class KeyOut(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    agentName = serializers.CharField(allow_blank=True)
    readOnly = serializers.BooleanField()
    created_at = serializers.CharField()
    last_used_at = serializers.CharField(allow_null=True)
    revoked_at = serializers.CharField(allow_null=True)


class MintedKeyOut(KeyOut):
    secret = serializers.CharField(help_text="Shown once; store it now.")


class KeyIn(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=200)
    agentName = serializers.CharField(max_length=128, required=False, allow_blank=True, default="")
    readOnly = serializers.BooleanField(required=False, default=False)


def key_row(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.pk,
        "name": key.name,
        "prefix": key.prefix,
        "agentName": key.agent_name,
        "readOnly": key.read_only,
        "created_at": _iso(key.created_at),
        "last_used_at": _iso(key.last_used_at),
        "revoked_at": _iso(key.revoked_at),
    }


class KeyListApi(BearerView):
    @extend_schema(responses={200: KeyOut(many=True), **ERRORS}, summary="The team's keys")
    def get(self, request: Request) -> Response:
        caller = self.managing(request, Manage.KEYS)
        return Response([key_row(k) for k in selectors.keys_of_team(caller.team_id)])

    @extend_schema(request=KeyIn, responses={201: MintedKeyOut, **ERRORS}, summary="Mint a key")
    def post(self, request: Request) -> Response:
        caller = self.managing(request, Manage.KEYS)
        data = KeyIn(data=request.data)
        data.is_valid(raise_exception=True)
        minted = services.api_key_create(
            team=team_of(caller),
            name=data.validated_data["name"],
            agent_name=data.validated_data["agentName"],
            read_only=data.validated_data["readOnly"],
            actor=caller.actor,
        )
        return Response(
            {**key_row(minted.key), "secret": minted.secret}, status=status.HTTP_201_CREATED
        )


class KeyRevokeApi(BearerView):
    @extend_schema(request=None, responses={200: KeyOut, **ERRORS}, summary="Revoke a key")
    def post(self, request: Request, key_id: int) -> Response:
        caller = self.managing(request, Manage.KEYS)
        key = selectors.access_key_by_id(caller, key_id)
        return Response(key_row(services.api_key_revoke(key=key, actor=caller.actor)))


# --- Rooms -----------------------------------------------------------------------------------


class RoomOut(serializers.Serializer):  # type: ignore[type-arg]
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
        caller = self.managing(request, Manage.ROOMS)
        room = access.room_for_caller(caller, room_id)
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


# --- Invites ---------------------------------------------------------------------------------


class InviteOut(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    roomId = serializers.CharField()
    label = serializers.CharField(allow_blank=True)  # type: ignore[assignment]  # the wire name
    prefix = serializers.CharField()
    agentName = serializers.CharField(allow_blank=True)
    readOnly = serializers.BooleanField()
    expires_at = serializers.CharField(allow_null=True)
    created_at = serializers.CharField()
    last_used_at = serializers.CharField(allow_null=True)
    revoked_at = serializers.CharField(allow_null=True)


class MintedInviteOut(InviteOut):
    secret = serializers.CharField(help_text="Shown once; hand it to the guest agent.")


class InviteIn(serializers.Serializer):  # type: ignore[type-arg]
    label = serializers.CharField(  # type: ignore[assignment]  # the wire name
        max_length=200, required=False, allow_blank=True, default=""
    )
    expiresInSeconds = serializers.IntegerField(
        min_value=60, max_value=365 * 24 * 3600, required=False, allow_null=True, default=None
    )
    agentName = serializers.CharField(max_length=128, required=False, allow_blank=True, default="")
    readOnly = serializers.BooleanField(required=False, default=False)


def invite_row(invite: Invite) -> dict[str, Any]:
    return {
        "id": invite.pk,
        "roomId": invite.room.room_id,
        "label": invite.label,
        "prefix": invite.prefix,
        "agentName": invite.agent_name,
        "readOnly": invite.read_only,
        "expires_at": _iso(invite.expires_at),
        "created_at": _iso(invite.created_at),
        "last_used_at": _iso(invite.last_used_at),
        "revoked_at": _iso(invite.revoked_at),
    }


class InviteListApi(BearerView):
    def _room(self, request: Request, room_id: str) -> tuple[Caller, Room]:
        caller = self.managing(request, Manage.INVITES)
        return caller, access.room_for_caller(caller, room_id)

    @extend_schema(responses={200: InviteOut(many=True), **ERRORS}, summary="A room's invites")
    def get(self, request: Request, room_id: str) -> Response:
        _, room = self._room(request, room_id)
        return Response([invite_row(i) for i in selectors.invites_for_room(room)])

    @extend_schema(
        request=InviteIn, responses={201: MintedInviteOut, **ERRORS}, summary="Invite to a room"
    )
    def post(self, request: Request, room_id: str) -> Response:
        caller, room = self._room(request, room_id)
        data = InviteIn(data=request.data)
        data.is_valid(raise_exception=True)
        seconds = data.validated_data["expiresInSeconds"]
        minted = services.invite_create(
            room=room,
            label=data.validated_data["label"],
            expires_at=clock.now() + timedelta(seconds=seconds) if seconds else None,
            agent_name=data.validated_data["agentName"],
            read_only=data.validated_data["readOnly"],
            actor=caller.actor,
        )
        return Response(
            {**invite_row(minted.invite), "secret": minted.secret}, status=status.HTTP_201_CREATED
        )


class InviteRevokeApi(BearerView):
    @extend_schema(request=None, responses={200: InviteOut, **ERRORS}, summary="Revoke an invite")
    def post(self, request: Request, room_id: str, invite_id: int) -> Response:
        caller = self.managing(request, Manage.INVITES)
        room = access.room_for_caller(caller, room_id)
        invite = selectors.access_invite_by_id(room, invite_id)
        return Response(invite_row(services.invite_revoke(invite=invite, actor=caller.actor)))


# --- Team bootstrap (docs/protocol.md "Tenancy and access") ----------------------------------


class TeamIn(serializers.Serializer):  # type: ignore[type-arg]
    slug = serializers.SlugField(max_length=64)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    keyName = serializers.CharField(max_length=200, required=False, default="first key")


class TeamOut(serializers.Serializer):  # type: ignore[type-arg]
    team = serializers.CharField()
    name = serializers.CharField()
    key = MintedKeyOut()


class TeamCreateApi(BearerView):
    @extend_schema(
        request=TeamIn,
        responses={201: TeamOut, 409: ErrorSerializer, **ERRORS},
        summary="Create a team and its first key (static keys only)",
    )
    def post(self, request: Request) -> Response:
        caller = self.managing(request, Manage.TEAMS)
        data = TeamIn(data=request.data)
        data.is_valid(raise_exception=True)
        team = services.team_create(
            slug=data.validated_data["slug"],
            name=data.validated_data["name"] or None,
            actor=caller.actor,
        )
        minted = services.api_key_create(
            team=team, name=data.validated_data["keyName"], actor=caller.actor
        )
        return Response(
            {
                "team": team.slug,
                "name": team.name,
                "key": {**key_row(minted.key), "secret": minted.secret},
            },
            status=status.HTTP_201_CREATED,
        )


# --- GET /room/<roomId> ------------------------------------------------------------------------


class RoomSummaryOut(serializers.Serializer):  # type: ignore[type-arg]
    roomId = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    project = serializers.CharField(allow_blank=True)
    status = serializers.CharField()
    created_at = serializers.CharField()
    last_active_at = serializers.CharField()
    tasks = serializers.DictField(child=serializers.IntegerField())
    agents = serializers.ListField(child=serializers.DictField())
    contextEntries = serializers.IntegerField()
    events = serializers.IntegerField()


async def room_summary(caller: Caller, room: Room) -> dict[str, Any]:
    ref = await access.room_access(caller, room.room_id, write=False)
    plan = await room_selectors.plan_get(ref)
    counts = {"total": len(plan["tasks"])}
    for state in ("pending", "in_progress", "done", "blocked"):
        counts[state] = sum(1 for t in plan["tasks"] if t["status"] == state)
    context = await room_selectors.context_list(ref, type_=None, author=None)
    return {
        **selectors.room_row(room),
        "tasks": counts,
        "agents": await room_selectors.presence_list(ref),
        "contextEntries": len(context),
        "events": await store.event_count(ref.keys),
    }


class RoomSummaryApi(BearerView):
    """The room summary (docs/protocol.md "Tenancy and access"), for a caller with access
    (roomd's is public)."""

    @extend_schema(responses={200: RoomSummaryOut, **ERRORS}, summary="A room at a glance")
    def get(self, request: Request, room_id: str) -> Response:
        caller = self.caller(request)
        room = access.room_for_caller(caller, room_id)
        return Response(store.run_sync(room_summary, caller, room))


class BearerAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """Tells the OpenAPI schema how BearerAuthentication works."""

    target_class = "tenants.apis.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A team key or an invite."}


# --- Webhooks ------------------------------------------------------------------------------------


class WebhookOut(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    roomId = serializers.CharField()
    url = serializers.CharField()
    agentFilter = serializers.CharField(allow_blank=True)
    eventTypes = serializers.ListField(child=serializers.CharField())
    active = serializers.BooleanField()
    disabledReason = serializers.CharField(allow_blank=True)
    consecutiveFailures = serializers.IntegerField()
    created_at = serializers.CharField()


class MintedWebhookOut(WebhookOut):
    secret = serializers.CharField(help_text="The HMAC signing secret; shown once.")


class WebhookIn(serializers.Serializer):  # type: ignore[type-arg]
    url = serializers.URLField(max_length=2000)
    agentFilter = serializers.CharField(
        max_length=128, required=False, allow_blank=True, default=""
    )
    eventTypes = serializers.ListField(
        child=serializers.CharField(max_length=128), required=False, default=list, max_length=50
    )


class DeliveryOut(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    eventId = serializers.CharField()
    status = serializers.CharField()
    attempts = serializers.IntegerField()
    lastError = serializers.CharField(allow_blank=True)
    responseStatus = serializers.IntegerField(allow_null=True)
    created_at = serializers.CharField()
    delivered_at = serializers.CharField(allow_null=True)


def webhook_row(hook: Webhook) -> dict[str, Any]:
    return {
        "id": hook.pk,
        "roomId": hook.room.room_id,
        "url": hook.url,
        "agentFilter": hook.agent_filter,
        "eventTypes": list(hook.event_types or []),
        "active": hook.active,
        "disabledReason": hook.disabled_reason,
        "consecutiveFailures": hook.consecutive_failures,
        "created_at": _iso(hook.created_at),
    }


def delivery_row(d: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": d.pk,
        "eventId": d.event_id,
        "status": d.status,
        "attempts": d.attempts,
        "lastError": d.last_error,
        "responseStatus": d.response_status,
        "created_at": _iso(d.created_at),
        "delivered_at": _iso(d.delivered_at),
    }


class WebhookListApi(BearerView):
    @extend_schema(responses={200: WebhookOut(many=True), **ERRORS}, summary="A room's webhooks")
    def get(self, request: Request, room_id: str) -> Response:
        caller = self.managing(request, Manage.WEBHOOKS)
        room = access.room_for_caller(caller, room_id)
        return Response([webhook_row(h) for h in selectors.webhooks_for_room(room)])

    @extend_schema(
        request=WebhookIn, responses={201: MintedWebhookOut, **ERRORS}, summary="Register a webhook"
    )
    def post(self, request: Request, room_id: str) -> Response:
        caller = self.managing(request, Manage.WEBHOOKS)
        room = access.room_for_caller(caller, room_id)
        data = WebhookIn(data=request.data)
        data.is_valid(raise_exception=True)
        minted = webhooks.webhook_create(
            room=room,
            url=data.validated_data["url"],
            agent_filter=data.validated_data["agentFilter"],
            event_types=data.validated_data["eventTypes"],
            actor=caller.actor,
        )
        return Response(
            {**webhook_row(minted.webhook), "secret": minted.secret}, status=status.HTTP_201_CREATED
        )


class WebhookDisableApi(BearerView):
    @extend_schema(request=None, responses={200: WebhookOut, **ERRORS}, summary="Disable a webhook")
    def post(self, request: Request, room_id: str, webhook_id: int) -> Response:
        caller = self.managing(request, Manage.WEBHOOKS)
        room = access.room_for_caller(caller, room_id)
        hook = selectors.access_webhook_by_id(room, webhook_id)
        return Response(
            webhook_row(
                webhooks.webhook_disable(
                    hook=hook, reason="disabled by the team", actor=caller.actor
                )
            )
        )


class WebhookDeliveriesApi(BearerView):
    @extend_schema(
        responses={200: DeliveryOut(many=True), **ERRORS}, summary="A webhook's delivery log"
    )
    def get(self, request: Request, room_id: str, webhook_id: int) -> Response:
        caller = self.managing(request, Manage.WEBHOOKS)
        room = access.room_for_caller(caller, room_id)
        hook = selectors.access_webhook_by_id(room, webhook_id)
        return Response([delivery_row(d) for d in hook.deliveries.all()[:200]])
