"""A room's invites (one room, one guest agent): list them, mint one (its secret shown
once), revoke one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from rooms import clock, profiles
from tenants import access, selectors, services
from tenants.apis.base import ERRORS, TOOLS_PROFILE_OUT, BearerView, tools_profile_in
from tenants.capabilities import Caller, Manage
from tenants.models import Invite, Room


class InviteOut(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    roomId = serializers.CharField()
    label = serializers.CharField(allow_blank=True)  # type: ignore[assignment]  # the wire name
    prefix = serializers.CharField()
    agentName = serializers.CharField(allow_blank=True)
    readOnly = serializers.BooleanField()
    toolsProfile = serializers.ChoiceField(
        choices=profiles.PROFILES,
        allow_null=True,
        help_text=TOOLS_PROFILE_OUT,
    )
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
    toolsProfile = tools_profile_in()


def invite_row(invite: Invite) -> dict[str, Any]:
    return {
        "id": invite.pk,
        "roomId": invite.room.room_id,
        "label": invite.label,
        "prefix": invite.prefix,
        "agentName": invite.agent_name,
        "readOnly": invite.read_only,
        "toolsProfile": invite.tools_profile,
        "expires_at": selectors.iso(invite.expires_at),
        "created_at": selectors.iso(invite.created_at),
        "last_used_at": selectors.iso(invite.last_used_at),
        "revoked_at": selectors.iso(invite.revoked_at),
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
            tools_profile=data.validated_data["toolsProfile"],
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
