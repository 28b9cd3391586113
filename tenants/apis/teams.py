"""The bearer and its team: who this bearer is and what it may do (/me), and a new team
with its first key (static keys only; docs/protocol.md "Tenancy and access")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from tenants import services
from tenants.apis.base import ERRORS, BearerView, ErrorSerializer
from tenants.apis.keys import MintedKeyOut, key_row
from tenants.capabilities import Manage


class MeOut(serializers.Serializer):  # type: ignore[type-arg]
    team = serializers.CharField()
    teamId = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["static", "key", "invite"])
    roomId = serializers.CharField(allow_null=True)
    agent = serializers.CharField(allow_null=True)
    readOnly = serializers.BooleanField()
    manage = serializers.ListField(child=serializers.CharField())
    toolsProfile = serializers.CharField(
        allow_null=True, help_text="Its default tool profile on /mcp; null: every tool."
    )


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
                "toolsProfile": c.tools_profile,
            }
        )


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
