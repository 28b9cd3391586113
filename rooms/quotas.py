"""The quotas: what each one bounds, the setting that sets it, and the refusal an agent or
operator reads when a write would pass it (the limits themselves are in config/settings/quotas.py,
each with an environment knob of the same name)."""

from __future__ import annotations

from django.conf import settings

from rooms.errors import QuotaExceededError

# quota (setting name) -> (what it counts, what to do when it is reached)
QUOTAS: dict[str, tuple[str, str]] = {
    "ROOM_TASKS_MAX": (
        "tasks in this room",
        "Delete tasks that are done or no longer needed, or ask the operator to raise "
        "ROOM_TASKS_MAX.",
    ),
    "ROOM_CONTEXT_MAX": (
        "context entries in this room",
        "Update an existing entry (update_context) instead of writing a new one, or delete "
        "entries no longer needed.",
    ),
    "EVENT_READS_MAX": (
        "read receipts on this event",
        "The event already records as many readers as it can; nothing else to do.",
    ),
    "ROOM_VARS_MAX": (
        "shared variables in this room",
        "Set an existing key instead of a new one, or ask the operator to raise ROOM_VARS_MAX.",
    ),
    "ROOM_LOCKS_MAX": (
        "locks held at once in this room",
        "Release locks you no longer need, or wait for some to expire.",
    ),
    "ROOM_LEASES_MAX": (
        "live file leases in this room",
        "Release the leases you no longer need (lease_release), claim a glob instead of many "
        "files, or wait for some to expire.",
    ),
    "ROOM_FILE_READS_MAX": (
        "file reads noted in this room (agent and path)",
        "Note reads of the files you edit, not of every file you open.",
    ),
    "ROOM_CURSORS_MAX": (
        "agents reading this room's log",
        "Read as an agentId that has read this room before.",
    ),
    "TEAM_ROOMS_MAX": (
        "rooms of this team",
        "Archive or delete a room, or ask the team's owner to raise the team's room cap.",
    ),
    "TEAM_KEYS_MAX": ("live keys of this team", "Revoke keys that are no longer used."),
    "ROOM_INVITES_MAX": (
        "live invites and share links of this room",
        "Revoke invites or share links that are no longer used.",
    ),
    "ROOM_WEBHOOKS_MAX": ("webhooks of this room", "Disable a webhook of this room first."),
    "TEAM_WEBHOOKS_MAX": ("webhooks of this team", "Disable webhooks the team no longer uses."),
}


def quota_limit(quota: str) -> int:
    return int(getattr(settings, quota))


def quota_error(quota: str, used: int, *, limit: int | None = None) -> QuotaExceededError:
    what, how = QUOTAS[quota]
    return QuotaExceededError(
        what=what,
        quota=quota,
        used=used,
        limit=quota_limit(quota) if limit is None else limit,
        how=how,
    )
