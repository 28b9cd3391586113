"""A room's invites (one room, one guest agent): list them, mint one (its secret shown
once), revoke one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from mcp_gateway.apis.base import ERRORS, BearerView, Iso, tools_profile_in, tools_profile_out
from rooms import clock
from tenants import selectors, services
from tenants.capabilities import Manage


class InviteOut(serializers.Serializer):  # type: ignore[type-arg]
    # Renders an Invite. (No docstring: the schema would print it.)
    id = serializers.IntegerField(source="pk")
    roomId = serializers.CharField(source="room.room_id")
    label = serializers.CharField(allow_blank=True)  # type: ignore[assignment]  # the wire name
    prefix = serializers.CharField()
    agentName = serializers.CharField(source="agent_name", allow_blank=True)
    readOnly = serializers.BooleanField(source="read_only")
    toolsProfile = tools_profile_out()
    expires_at = Iso(allow_null=True)
    created_at = Iso()
    last_used_at = Iso(allow_null=True)
    revoked_at = Iso(allow_null=True)


class MintedInviteOut(InviteOut):
    # Renders a MintedInvite: the invite, and its secret.
    secret = serializers.CharField(help_text="Shown once; hand it to the guest agent.")

    def to_representation(self, minted: services.MintedInvite) -> dict[str, Any]:
        return {**InviteOut(minted.invite).data, "secret": minted.secret}


class InviteIn(serializers.Serializer):  # type: ignore[type-arg]
    label = serializers.CharField(  # type: ignore[assignment]  # the wire name
        max_length=200, required=False, allow_blank=True, default=""
    )
    expiresInSeconds = serializers.IntegerField(
        min_value=60, max_value=365 * 24 * 3600, required=False, allow_null=True, default=None
    )
    agentName = serializers.CharField(max_length=128, required=False, allow_blank=True, default="")
    readOnly = serializers.BooleanField(required=False, default=False)
    toolsProfile = tools_profile_in()


class InviteListApi(BearerView):
    @extend_schema(responses={200: InviteOut(many=True), **ERRORS}, summary="A room's invites")
    def get(self, request: Request, room_id: str) -> Response:
        _, room = self.managing_room(request, Manage.INVITES, room_id)
        return Response(InviteOut(selectors.invites_for_room(room), many=True).data)

    @extend_schema(
        request=InviteIn, responses={201: MintedInviteOut, **ERRORS}, summary="Invite to a room"
    )
    def post(self, request: Request, room_id: str) -> Response:
        caller, room = self.managing_room(request, Manage.INVITES, room_id)
        data = InviteIn(data=request.data)
        data.is_valid(raise_exception=True)
        seconds = data.validated_data["expiresInSeconds"]
        minted = services.invite_create(
            room=room,
            label=data.validated_data["label"],
            expires_at=clock.now() + timedelta(seconds=seconds) if seconds else None,
            agent_name=data.validated_data["agentName"],
            read_only=data.validated_data["readOnly"],
            tools_profile=data.validated_data["toolsProfile"],
            actor=caller.actor,
        )
        return Response(MintedInviteOut(minted).data, status=status.HTTP_201_CREATED)


class InviteRevokeApi(BearerView):
    @extend_schema(request=None, responses={200: InviteOut, **ERRORS}, summary="Revoke an invite")
    def post(self, request: Request, room_id: str, invite_id: int) -> Response:
        caller, room = self.managing_room(request, Manage.INVITES, room_id)
        invite = selectors.access_invite_by_id(room, invite_id)
        return Response(InviteOut(services.invite_revoke(invite=invite, actor=caller.actor)).data)
