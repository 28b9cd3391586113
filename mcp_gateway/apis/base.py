"""What every /api/v1/ view shares: bearer authentication (and how the OpenAPI schema
describes it), the permission that wants a caller, the error mapping (`DomainError`s to
`{message, code, extra}` with their status), `BearerView` (which charges each call to
the caller's budget), and the error responses every endpoint documents."""

from __future__ import annotations

from typing import Any, NoReturn

from django.db import InterfaceError, OperationalError
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from rooms import profiles
from rooms.errors import (
    DATABASE_UNAVAILABLE,
    STORE_UNAVAILABLE,
    DomainError,
    StoreUnavailableError,
)
from rooms.store import connections as connections_store
from rooms.store import engine as engine_store
from tenants import access, budgets, selectors
from tenants.auth import UNAUTHORIZED, bearer_from_header, caller_resolve_sync
from tenants.capabilities import Caller, Manage
from tenants.models import Room, Team


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


class BearerAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """Tells the OpenAPI schema how BearerAuthentication works."""

    target_class = "mcp_gateway.apis.base.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A team key or an invite."}


class HasCaller(BasePermission):
    message = UNAUTHORIZED

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, Caller)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, connections_store.StoreDown):
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
        engine_store.run_sync(budgets.call_charge, self.caller(request))

    def caller(self, request: Request) -> Caller:
        assert isinstance(request.auth, Caller)
        return request.auth

    def managing(self, request: Request, what: Manage) -> Caller:
        """The caller, if it may manage `what` (tenants.access decides; this only asks)."""
        caller = self.caller(request)
        access.require(caller, what)
        return caller

    def managing_room(self, request: Request, what: Manage, room_id: str) -> tuple[Caller, Room]:
        """The caller, if it may manage `what`, and its room `room_id` (one denial for a
        room that is missing and one that is not its own)."""
        caller = self.managing(request, what)
        return caller, access.room_for_caller(caller, room_id)


def team_of(caller: Caller) -> Team:
    team = selectors.team_get(caller.team_id)
    if team is None:  # the team was deleted while this request was on its way
        raise exceptions.AuthenticationFailed(UNAUTHORIZED)
    return team


class Iso(serializers.CharField):
    """A stored time as the protocol writes it (tenants.selectors.iso); a string in the schema."""

    def to_representation(self, value: Any) -> Any:  # a datetime (DRF renders None itself)
        return selectors.iso(value)


def tools_profile_in() -> serializers.ChoiceField:
    """The toolsProfile a new key or invite may be given (the same argument on both)."""
    return serializers.ChoiceField(
        choices=profiles.PROFILES,
        required=False,
        allow_null=True,
        default=None,
        help_text="The tool profile its MCP connections get when their URL names none "
        "(/mcp?tools=...): core, roomd or full; null (the default): every tool.",
    )


def tools_profile_out() -> serializers.ChoiceField:
    """A key's or invite's toolsProfile (the same field on both)."""
    return serializers.ChoiceField(
        source="tools_profile",
        choices=profiles.PROFILES,
        allow_null=True,
        help_text="Its default tool profile; null: none set, every tool.",
    )


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
