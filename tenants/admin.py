"""Django admin for support staff: teams, memberships, keys (never a digest), invites,
rooms, and the audit log (read-only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin

from tenants.models import ApiKey, AuditEvent, Invite, Membership, Room, Team

if TYPE_CHECKING:  # the admin is Django's own door; tenants/ imports no HTTP at run time
    from django.http import HttpRequest


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """A team's slug never changes once it exists (everything refers to the team's id, and a
    slug must not start naming someone else). Deleting a team here removes its Redis state
    and cached credentials too (tenants.purges)."""

    list_display = ["slug", "name", "is_static", "room_cap", "people_act_for_agents", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["slug", "is_static", "created_at"] if obj is not None else ["is_static"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__username", "user__email", "team__slug"]
    autocomplete_fields = ["user", "team"]


class SecretFreeAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Keys and invites: prefix, name, dates — the digest is never shown or editable, and
    new secrets are minted through the API, the dashboard or `mint_key` (shown once)."""

    exclude = ["digest"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ApiKey)
class ApiKeyAdmin(SecretFreeAdmin):
    list_display = [
        "name",
        "prefix",
        "team",
        "agent_name",
        "read_only",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["read_only", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "team__slug"]
    readonly_fields = ["prefix", "team", "created_by", "created_at", "last_used_at"]


@admin.register(Invite)
class InviteAdmin(SecretFreeAdmin):
    list_display = ["label", "prefix", "room", "team", "expires_at", "created_at", "revoked_at"]
    list_filter = ["read_only", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["label", "prefix", "room__room_id", "team__slug"]
    readonly_fields = ["prefix", "team", "room", "created_by", "created_at", "last_used_at"]


@admin.register(Room)
class RoomAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["room_id", "name", "team", "status", "created_at", "last_active_at"]
    list_filter = ["status"]
    search_fields = ["room_id", "name", "team__slug"]
    readonly_fields = ["room_id", "team", "created_at", "last_active_at"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["created_at", "team", "actor", "action", "object_type", "object_id"]
    list_filter = ["action", "object_type"]
    search_fields = ["actor", "object_id", "team__slug"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
