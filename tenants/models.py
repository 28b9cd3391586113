"""Account data: teams, memberships, the credentials (keys, invites, member invites, share
links, webhooks: one abstract model, secrets kept only as SHA-256 digests), room ownership,
the append-only audit log, and the Redis clean-ups still owed for deleted rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models

from rooms.profiles import PROFILES

# A credential's default tool profile (rooms.profiles): what its connections see when their
# URL names none. Empty (null): every tool, as every key made before profiles.
TOOLS_PROFILE_CHOICES = [(p, p) for p in PROFILES]
TOOLS_PROFILE_HELP = "The tools its connections see when their URL names no ?tools=; empty: all."


def tools_profile_field() -> models.CharField[str | None, str | None]:
    """A key's or an invite's default tool profile (the same column on both)."""
    return models.CharField(
        max_length=8,
        null=True,
        blank=True,
        choices=TOOLS_PROFILE_CHOICES,
        help_text=TOOLS_PROFILE_HELP,
    )


class Team(models.Model):
    """The unit of ownership: a team owns rooms; its keys act for it.

    Everything refers to a team by its id, never its slug: room ownership in Redis, cached
    credentials, rate-limit buckets and audit rows. A slug is a name for people; it never
    changes, and a deleted team's slug taken again names a different team.
    """

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    is_static = models.BooleanField(
        default=False, help_text="Created at startup for a static key of API_KEYS."
    )
    room_cap = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most rooms this team may own; empty = no cap."
    )
    people_act_for_agents = models.BooleanField(
        default=False,
        help_text=(
            "People may accept a handoff or resolve a review on an agent's behalf from the "
            "room page (each such action names the person in the log)."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        ADMIN = "admin"
        MEMBER = "member"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="one_membership")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class Credential(models.Model):
    """A secret handed to someone once: only its digest and a display prefix are kept.

    Keys, invites, member invites, share links and webhooks are all minted by one service
    (`tenants.services.credential_mint`) and live or die by the same fields.
    """

    prefix = models.CharField(max_length=24, help_text="The first characters, for recognition.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def is_live(self, at: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > at)


class ApiKey(Credential):
    """A dynamic team key. The secret is shown once at creation; only its digest is kept."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200)
    agent_name = models.CharField(
        max_length=128, blank=True, help_text="When set, every call is attributed to this agent."
    )
    read_only = models.BooleanField(default=False)
    tools_profile = tools_profile_field()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class Room(models.Model):
    """The record of who owns a room id (Redis caches it; the room's state lives there)."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"
        COMPLETED = "completed"
        ARCHIVED = "archived"

    room_id = models.CharField(max_length=64, unique=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="rooms")
    name = models.CharField(max_length=200, blank=True)
    # A named project of the team: a new room of it inherits its earlier rooms' durable
    # decisions and contracts (tenants.projects).
    project = models.CharField(max_length=100, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    last_active_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.room_id


class RoomArchive(models.Model):
    """A room's whole state, kept when it left Redis (rooms.snapshots has the document's
    form). One per room: archiving again replaces it; a restore leaves it, marked."""

    class Reason(models.TextChoices):
        IDLE = "idle"  # the archive sweep, before the idle TTL ran out
        REQUESTED = "requested"  # set_room_status, the API, the dashboard, a command

    room = models.OneToOneField(Room, on_delete=models.CASCADE, related_name="archive")
    document = models.JSONField()
    size_bytes = models.PositiveBigIntegerField(default=0)
    reason = models.CharField(max_length=16, choices=Reason.choices)
    archived_at = models.DateTimeField()
    archived_by = models.CharField(max_length=200, blank=True)
    restored_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"archive of {self.room_id}"


class Invite(Credential):
    """A room-scoped bearer: reaches one room, never claims, expires, can be revoked."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invites")
    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="invites")
    label = models.CharField(max_length=200, blank=True)
    agent_name = models.CharField(max_length=128, blank=True)
    read_only = models.BooleanField(default=False)
    tools_profile = tools_profile_field()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    def __str__(self) -> str:
        return f"{self.label or 'invite'} to {self.room_id} ({self.prefix}…)"


class OAuthConnection(models.Model):
    """A person's consent for one OAuth client (the OAuth door, mcp_gateway.oauth): the team,
    one room or all, the agent the client acts as, read-only, the tools profile. The client's
    tokens for this person (django-oauth-toolkit's rows, kept as digests) act by it; one per
    person and client, so connecting again replaces the consent and ends the old tokens."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_connections"
    )
    application = models.ForeignKey(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="oauth_connections")
    room = models.ForeignKey(Room, null=True, blank=True, on_delete=models.CASCADE)
    agent_name = models.CharField(max_length=128)
    read_only = models.BooleanField(default=False)
    tools_profile = tools_profile_field()
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "application"], name="one_connection_per_client"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_name} for {self.user_id} in {self.team_id}"


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def update(self, **kwargs: Any) -> int:
        raise TypeError("the audit log is append-only")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise TypeError("the audit log is append-only")


class AuditEvent(models.Model):
    """Append-only: who did what to which object, when. Rows are never changed."""

    team = models.ForeignKey(Team, null=True, on_delete=models.SET_NULL, related_name="audit")
    actor = models.CharField(max_length=200, help_text='"user:<id>", "key:<id>", "static:<team>"…')
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=128)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise TypeError("the audit log is append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise TypeError("the audit log is append-only")

    def __str__(self) -> str:
        when = f"{self.created_at:%Y-%m-%d %H:%M}"
        return f"{when} {self.actor} {self.action} {self.object_type}:{self.object_id}"


class MemberInvite(Credential):
    """An emailed link that makes its recipient a member of a team (token stored as digest)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="member_invites")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Membership.Role.choices, default="member")
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    accepted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.email} -> {self.team} ({self.role})"


class ShareLink(Credential):
    """A read-only, unguessable, revocable link to a room's live page (token as digest)."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="share_links")
    label = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    def __str__(self) -> str:
        return f"share {self.prefix}… of {self.room_id}"


class Webhook(Credential):
    """A room's wake-up URL: every matching event is POSTed there, signed (docs/webhooks.md).

    Its credential is the signing secret: minted like every other secret, but also kept
    readable (`secret`), because the server signs with it; it is shown to the operator once.
    """

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    agent_filter = models.CharField(
        max_length=128, blank=True, help_text='Only events to this agent (or to "all").'
    )
    event_types = models.JSONField(default=list, blank=True, help_text="Empty = every type.")
    # The HMAC key must be readable to sign with; it is shown to the operator only once.
    secret = models.CharField(max_length=128)
    active = models.BooleanField(default=True)
    consecutive_failures = models.PositiveIntegerField(default=0)  # deliveries failed for good
    failed_attempts = models.PositiveIntegerField(default=0)  # attempts failed in a row
    breaker_until = models.DateTimeField(null=True, blank=True)  # no attempts before then
    disabled_reason = models.CharField(max_length=300, blank=True)
    # The last event considered (stream id as two integers, so "newer" is a comparison).
    cursor_ms = models.BigIntegerField(default=0)
    cursor_seq = models.BigIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    def __str__(self) -> str:
        return f"webhook {self.pk} of {self.room_id} -> {self.url}"


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.CharField(max_length=48)
    event = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # The trace context of the call that wrote the event (rooms.traces), sent on as the
    # delivery's `traceparent` header; "" when the call carried none.
    traceparent = models.CharField(max_length=55, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["webhook", "event_id"], name="one_delivery_per_event")
        ]
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.status})"


class PendingPurge(models.Model):
    """Redis state still to remove for a row that is gone (a team, room or credential).

    Written in the same transaction as the deletion, removed once the purge succeeded, so
    a Redis outage at that moment delays the clean-up instead of losing it (a periodic
    task retries what is left).
    """

    class Kind(models.TextChoices):
        ROOM = "room"
        CREDENTIAL = "credential"
        TEAM = "team"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    value = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)

    def __str__(self) -> str:
        return f"purge {self.kind} {self.value}"
