"""The team's keys: list them, mint one (its secret shown once), revoke one."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from mcp_gateway.apis.base import (
    ERRORS,
    BearerView,
    Iso,
    team_of,
    tools_profile_in,
    tools_profile_out,
)
from tenants import selectors, services
from tenants.capabilities import Manage


class KeyOut(serializers.Serializer):  # type: ignore[type-arg]
    # Renders an ApiKey. (No docstring: the schema would print it.)
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    prefix = serializers.CharField()
    agentName = serializers.CharField(source="agent_name", allow_blank=True)
    readOnly = serializers.BooleanField(source="read_only")
    toolsProfile = tools_profile_out()
    created_at = Iso()
    last_used_at = Iso(allow_null=True)
    revoked_at = Iso(allow_null=True)


class MintedKeyOut(KeyOut):
    # Renders a MintedKey: the key, and its secret.
    secret = serializers.CharField(help_text="Shown once; store it now.")

    def to_representation(self, minted: services.MintedKey) -> dict[str, Any]:
        return {**KeyOut(minted.key).data, "secret": minted.secret}


class KeyIn(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=200)
    agentName = serializers.CharField(max_length=128, required=False, allow_blank=True, default="")
    readOnly = serializers.BooleanField(required=False, default=False)
    toolsProfile = tools_profile_in()


class KeyListApi(BearerView):
    @extend_schema(responses={200: KeyOut(many=True), **ERRORS}, summary="The team's keys")
    def get(self, request: Request) -> Response:
        caller = self.managing(request, Manage.KEYS)
        return Response(KeyOut(selectors.keys_of_team(caller.team_id), many=True).data)

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
            tools_profile=data.validated_data["toolsProfile"],
            actor=caller.actor,
        )
        return Response(MintedKeyOut(minted).data, status=status.HTTP_201_CREATED)


class KeyRevokeApi(BearerView):
    @extend_schema(request=None, responses={200: KeyOut, **ERRORS}, summary="Revoke a key")
    def post(self, request: Request, key_id: int) -> Response:
        caller = self.managing(request, Manage.KEYS)
        key = selectors.access_key_by_id(caller, key_id)
        return Response(KeyOut(services.api_key_revoke(key=key, actor=caller.actor)).data)
