"""A room's webhooks: list them, register one (its signing secret shown once), disable
one, and read a webhook's delivery log."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from tenants import access, selectors, webhooks
from tenants.apis.base import ERRORS, BearerView
from tenants.capabilities import Manage
from tenants.models import Webhook, WebhookDelivery


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
        "created_at": selectors.iso(hook.created_at),
    }


def delivery_row(d: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": d.pk,
        "eventId": d.event_id,
        "status": d.status,
        "attempts": d.attempts,
        "lastError": d.last_error,
        "responseStatus": d.response_status,
        "created_at": selectors.iso(d.created_at),
        "delivered_at": selectors.iso(d.delivered_at),
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
