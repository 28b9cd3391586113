from django.urls import path

from tenants import apis

urlpatterns = [
    path("me", apis.MeApi.as_view(), name="api-me"),
    path("keys", apis.KeyListApi.as_view(), name="api-keys"),
    path("keys/<int:key_id>/revoke", apis.KeyRevokeApi.as_view(), name="api-key-revoke"),
    path("rooms", apis.RoomListApi.as_view(), name="api-rooms"),
    path("rooms/import", apis.RoomImportApi.as_view(), name="api-room-import"),
    path("rooms/<str:room_id>", apis.RoomDeleteApi.as_view(), name="api-room"),
    path("rooms/<str:room_id>/archive", apis.RoomArchiveApi.as_view(), name="api-room-archive"),
    path("rooms/<str:room_id>/restore", apis.RoomRestoreApi.as_view(), name="api-room-restore"),
    path("rooms/<str:room_id>/export", apis.RoomExportApi.as_view(), name="api-room-export"),
    path("rooms/<str:room_id>/invites", apis.InviteListApi.as_view(), name="api-invites"),
    path(
        "rooms/<str:room_id>/invites/<int:invite_id>/revoke",
        apis.InviteRevokeApi.as_view(),
        name="api-invite-revoke",
    ),
    path("teams", apis.TeamCreateApi.as_view(), name="api-teams"),
    path("rooms/<str:room_id>/webhooks", apis.WebhookListApi.as_view(), name="api-webhooks"),
    path(
        "rooms/<str:room_id>/webhooks/<int:webhook_id>/disable",
        apis.WebhookDisableApi.as_view(),
        name="api-webhook-disable",
    ),
    path(
        "rooms/<str:room_id>/webhooks/<int:webhook_id>/deliveries",
        apis.WebhookDeliveriesApi.as_view(),
        name="api-webhook-deliveries",
    ),
]
