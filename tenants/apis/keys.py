"""The team's keys: list them, mint one (its secret shown once), revoke one."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from rooms import profiles
from tenants import selectors, services
from tenants.apis.base import ERRORS, TOOLS_PROFILE_OUT, BearerView, team_of, tools_profile_in
from tenants.capabilities import Manage
from tenants.models import ApiKey


class KeyOut(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    agentName = serializers.CharField(allow_blank=True)
    readOnly = serializers.BooleanField()
    toolsProfile = serializers.ChoiceField(
        choices=profiles.PROFILES,
        allow_null=True,
        help_text=TOOLS_PROFILE_OUT,
    )
    created_at = serializers.CharField()
    last_used_at = serializers.CharField(allow_null=True)
    revoked_at = serializers.CharField(allow_null=True)


class MintedKeyOut(KeyOut):
    secret = serializers.CharField(help_text="Shown once; store it now.")


class KeyIn(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=200)
    agentName = serializers.CharField(max_length=128, required=False, allow_blank=True, default="")
    readOnly = serializers.BooleanField(required=False, default=False)
    toolsProfile = tools_profile_in()


def key_row(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.pk,
        "name": key.name,
        "prefix": key.prefix,
        "agentName": key.agent_name,
        "readOnly": key.read_only,
        "toolsProfile": key.tools_profile,
        "created_at": selectors.iso(key.created_at),
        "last_used_at": selectors.iso(key.last_used_at),
        "revoked_at": selectors.iso(key.revoked_at),
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
            tools_profile=data.validated_data["toolsProfile"],
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
