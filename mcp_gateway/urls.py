from django.urls import path

from mcp_gateway.apis import invites, keys, rooms, teams, webhooks

urlpatterns = [
    path("me", teams.MeApi.as_view(), name="api-me"),
    path("keys", keys.KeyListApi.as_view(), name="api-keys"),
    path("keys/<int:key_id>/revoke", keys.KeyRevokeApi.as_view(), name="api-key-revoke"),
    path("rooms", rooms.RoomListApi.as_view(), name="api-rooms"),
    path("rooms/import", rooms.RoomImportApi.as_view(), name="api-room-import"),
    path("rooms/<str:room_id>", rooms.RoomDeleteApi.as_view(), name="api-room"),
    path("rooms/<str:room_id>/archive", rooms.RoomArchiveApi.as_view(), name="api-room-archive"),
    path("rooms/<str:room_id>/restore", rooms.RoomRestoreApi.as_view(), name="api-room-restore"),
    path("rooms/<str:room_id>/export", rooms.RoomExportApi.as_view(), name="api-room-export"),
    path("rooms/<str:room_id>/invites", invites.InviteListApi.as_view(), name="api-invites"),
    path(
        "rooms/<str:room_id>/invites/<int:invite_id>/revoke",
        invites.InviteRevokeApi.as_view(),
        name="api-invite-revoke",
    ),
    path("teams", teams.TeamCreateApi.as_view(), name="api-teams"),
    path("rooms/<str:room_id>/webhooks", webhooks.WebhookListApi.as_view(), name="api-webhooks"),
    path(
        "rooms/<str:room_id>/webhooks/<int:webhook_id>/disable",
        webhooks.WebhookDisableApi.as_view(),
        name="api-webhook-disable",
    ),
    path(
        "rooms/<str:room_id>/webhooks/<int:webhook_id>/deliveries",
        webhooks.WebhookDeliveriesApi.as_view(),
        name="api-webhook-deliveries",
    ),
]
