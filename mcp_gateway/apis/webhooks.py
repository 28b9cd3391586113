"""A room's webhooks: list them, register one (its signing secret shown once), disable
one, and read a webhook's delivery log."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from mcp_gateway.apis.base import ERRORS, BearerView, Iso
from tenants import selectors, webhooks
from tenants.capabilities import Manage


class WebhookOut(serializers.Serializer):  # type: ignore[type-arg]
    # Renders a Webhook. (No docstring: the schema would print it.)
    id = serializers.IntegerField(source="pk")
    roomId = serializers.CharField(source="room.room_id")
    url = serializers.CharField()
    agentFilter = serializers.CharField(source="agent_filter", allow_blank=True)
    eventTypes = serializers.ListField(source="event_types", child=serializers.CharField())
    active = serializers.BooleanField()
    disabledReason = serializers.CharField(source="disabled_reason", allow_blank=True)
    consecutiveFailures = serializers.IntegerField(source="consecutive_failures")
    created_at = Iso()


class MintedWebhookOut(WebhookOut):
    # Renders a MintedWebhook: the webhook, and its signing secret.
    secret = serializers.CharField(help_text="The HMAC signing secret; shown once.")

    def to_representation(self, minted: webhooks.MintedWebhook) -> dict[str, Any]:
        return {**WebhookOut(minted.webhook).data, "secret": minted.secret}


class WebhookIn(serializers.Serializer):  # type: ignore[type-arg]
    url = serializers.URLField(max_length=2000)
    agentFilter = serializers.CharField(
        max_length=128, required=False, allow_blank=True, default=""
    )
    eventTypes = serializers.ListField(
        child=serializers.CharField(max_length=128), required=False, default=list, max_length=50
    )


class DeliveryOut(serializers.Serializer):  # type: ignore[type-arg]
    # Renders a WebhookDelivery.
    id = serializers.IntegerField(source="pk")
    eventId = serializers.CharField(source="event_id")
    status = serializers.CharField()
    attempts = serializers.IntegerField()
    lastError = serializers.CharField(source="last_error", allow_blank=True)
    responseStatus = serializers.IntegerField(source="response_status", allow_null=True)
    created_at = Iso()
    delivered_at = Iso(allow_null=True)


class WebhookListApi(BearerView):
    @extend_schema(responses={200: WebhookOut(many=True), **ERRORS}, summary="A room's webhooks")
    def get(self, request: Request, room_id: str) -> Response:
        _, room = self.managing_room(request, Manage.WEBHOOKS, room_id)
        return Response(WebhookOut(selectors.webhooks_for_room(room), many=True).data)

    @extend_schema(
        request=WebhookIn, responses={201: MintedWebhookOut, **ERRORS}, summary="Register a webhook"
    )
    def post(self, request: Request, room_id: str) -> Response:
        caller, room = self.managing_room(request, Manage.WEBHOOKS, room_id)
        data = WebhookIn(data=request.data)
        data.is_valid(raise_exception=True)
        minted = webhooks.webhook_create(
            room=room,
            url=data.validated_data["url"],
            agent_filter=data.validated_data["agentFilter"],
            event_types=data.validated_data["eventTypes"],
            actor=caller.actor,
        )
        return Response(MintedWebhookOut(minted).data, status=status.HTTP_201_CREATED)


class WebhookDisableApi(BearerView):
    @extend_schema(request=None, responses={200: WebhookOut, **ERRORS}, summary="Disable a webhook")
    def post(self, request: Request, room_id: str, webhook_id: int) -> Response:
        caller, room = self.managing_room(request, Manage.WEBHOOKS, room_id)
        hook = selectors.access_webhook_by_id(room, webhook_id)
        hook = webhooks.webhook_disable(
            hook=hook, reason="disabled by the team", actor=caller.actor
        )
        return Response(WebhookOut(hook).data)


class WebhookDeliveriesApi(BearerView):
    @extend_schema(
        responses={200: DeliveryOut(many=True), **ERRORS}, summary="A webhook's delivery log"
    )
    def get(self, request: Request, room_id: str, webhook_id: int) -> Response:
        _, room = self.managing_room(request, Manage.WEBHOOKS, room_id)
        hook = selectors.access_webhook_by_id(room, webhook_id)
        return Response(DeliveryOut(hook.deliveries.all()[:200], many=True).data)
