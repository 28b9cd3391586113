"""The bearer and its team: who this bearer is and what it may do (/me), and a new team
with its first key (static keys only; docs/protocol.md "Tenancy and access")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from mcp_gateway.apis.base import ERRORS, BearerView, ErrorSerializer
from mcp_gateway.apis.keys import MintedKeyOut
from tenants import services
from tenants.capabilities import Caller, Manage


class MeOut(serializers.Serializer):  # type: ignore[type-arg]
    # Renders a Caller. (No docstring: the schema would print it.)
    team = serializers.CharField(source="team_slug")
    teamId = serializers.IntegerField(source="team_id")
    kind = serializers.ChoiceField(choices=["static", "key", "invite"])
    roomId = serializers.CharField(source="room", allow_null=True)
    agent = serializers.CharField(allow_null=True)
    readOnly = serializers.BooleanField(source="write")  # negated in to_representation
    manage = serializers.ListField(child=serializers.CharField())
    toolsProfile = serializers.CharField(
        source="tools_profile",
        allow_null=True,
        help_text="Its default tool profile on /mcp; null: every tool.",
    )

    def to_representation(self, caller: Caller) -> dict[str, Any]:
        # A read-only caller is one that may not write; its rights in a stable order.
        fields = super().to_representation(caller)
        return {**fields, "readOnly": not caller.write, "manage": sorted(caller.manage)}


class MeApi(BearerView):
    @extend_schema(
        responses={200: MeOut, **ERRORS}, summary="Who this bearer is, and what it may do"
    )
    def get(self, request: Request) -> Response:
        return Response(MeOut(self.caller(request)).data)


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
        made = {"team": team.slug, "name": team.name, "key": minted}
        return Response(TeamOut(made).data, status=status.HTTP_201_CREATED)
