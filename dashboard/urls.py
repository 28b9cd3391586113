from django.urls import path

from dashboard import views

urlpatterns = [
    path("", views.landing, name="landing"),
    path("hooks/roomservice-guard", views.hook_script, name="hook-script"),
    path("signup", views.signup, name="signup"),
    path("login", views.login_view, name="login"),
    path("logout", views.logout_view, name="logout"),
    path("account", views.account, name="account"),
    path("team", views.team, name="team"),
    path("team/switch", views.team_switch, name="team-switch"),
    path("team/members/<int:membership_id>/role", views.member_role, name="member-role"),
    path("team/members/<int:membership_id>/remove", views.member_remove, name="member-remove"),
    path("join/<str:token>", views.join, name="join"),
    path("rooms", views.rooms, name="rooms"),
    path("rooms/<str:room_id>/", views.room, name="room"),
    path("rooms/<str:room_id>/live", views.room_live, name="room-live"),
    path("rooms/<str:room_id>/status", views.room_status, name="room-status"),
    path("rooms/<str:room_id>/context/<str:entry_id>", views.context_entry, name="context"),
    path("rooms/<str:room_id>/connect", views.connect, name="connect"),
    path("rooms/<str:room_id>/report", views.report, name="report"),
    path("rooms/<str:room_id>/report.md", views.report_download, name="report-md"),
    path("rooms/<str:room_id>/invites", views.invites, name="invites"),
    path(
        "rooms/<str:room_id>/invites/<int:invite_id>/revoke",
        views.invite_revoke,
        name="invite-revoke",
    ),
    path("rooms/<str:room_id>/share", views.shares, name="shares"),
    path("rooms/<str:room_id>/share/<int:link_id>/revoke", views.share_revoke, name="share-revoke"),
    path("rooms/<str:room_id>/webhooks", views.room_webhooks, name="webhooks"),
    path(
        "rooms/<str:room_id>/webhooks/<int:webhook_id>/disable",
        views.webhook_disable,
        name="webhook-disable",
    ),
    path("keys", views.keys, name="keys"),
    path("keys/<int:key_id>/revoke", views.key_revoke, name="key-revoke"),
    path("audit", views.audit, name="audit"),
    path("s/<str:token>/", views.shared_room, name="shared"),
    path("s/<str:token>/live", views.shared_room_live, name="shared-live"),
]
