from django.urls import path

from dashboard.views import accounts, connect, rooms, shares, team, webhooks

urlpatterns = [
    path("", accounts.landing, name="landing"),
    path("hooks/roomservice-guard", connect.hook_script, name="hook-script"),
    path("connect/<str:client>", connect.setup_script, name="connect-setup"),
    path("signup", accounts.signup, name="signup"),
    path("login", accounts.login_view, name="login"),
    path("signin/<str:uidb64>/<str:token>", accounts.sign_in_once, name="sign-in-once"),
    path("logout", accounts.logout_view, name="logout"),
    path("account", accounts.account, name="account"),
    path(
        "account/connections/<int:connection_id>/disconnect",
        accounts.connection_disconnect,
        name="connection-disconnect",
    ),
    path("team", team.team, name="team"),
    path("team/switch", team.team_switch, name="team-switch"),
    path("team/acting", team.team_acting, name="team-acting"),
    path("team/members/<int:membership_id>/role", team.member_role, name="member-role"),
    path("team/members/<int:membership_id>/remove", team.member_remove, name="member-remove"),
    path("join/<str:token>", team.join, name="join"),
    path("rooms", rooms.rooms, name="rooms"),
    path("rooms/<str:room_id>/", rooms.room, name="room"),
    path("rooms/<str:room_id>/live", rooms.room_live, name="room-live"),
    path("rooms/<str:room_id>/status", rooms.room_status, name="room-status"),
    path("rooms/<str:room_id>/act/<str:action>", rooms.room_act, name="room-act"),
    path("rooms/<str:room_id>/tasks/<str:task_id>", rooms.task_detail, name="task"),
    path("rooms/<str:room_id>/events", rooms.room_events, name="events"),
    path("rooms/<str:room_id>/export", rooms.room_export, name="room-export"),
    path("rooms/<str:room_id>/context/<str:entry_id>", rooms.context_entry, name="context"),
    path("rooms/<str:room_id>/connect", connect.connect, name="connect"),
    path("rooms/<str:room_id>/report", rooms.report, name="report"),
    path("rooms/<str:room_id>/report.md", rooms.report_download, name="report-md"),
    path("rooms/<str:room_id>/invites", connect.invites, name="invites"),
    path(
        "rooms/<str:room_id>/invites/<int:invite_id>/revoke",
        connect.invite_revoke,
        name="invite-revoke",
    ),
    path("rooms/<str:room_id>/share", shares.shares, name="shares"),
    path(
        "rooms/<str:room_id>/share/<int:link_id>/revoke", shares.share_revoke, name="share-revoke"
    ),
    path("rooms/<str:room_id>/webhooks", webhooks.room_webhooks, name="webhooks"),
    path(
        "rooms/<str:room_id>/webhooks/<int:webhook_id>/disable",
        webhooks.webhook_disable,
        name="webhook-disable",
    ),
    path("keys", team.keys, name="keys"),
    path("keys/<int:key_id>/revoke", team.key_revoke, name="key-revoke"),
    path(
        "keys/connections/<int:connection_id>/revoke",
        team.connection_revoke,
        name="connection-revoke",
    ),
    path("audit", team.audit, name="audit"),
    path("s/<str:token>/", shares.shared_room, name="shared"),
    path("s/<str:token>/live", shares.shared_room_live, name="shared-live"),
]
