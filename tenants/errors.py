"""Tenancy's error vocabulary (all `DomainError`s, so every door maps them the same way)."""

from __future__ import annotations

from typing import Any

from rooms.errors import DomainError


class TenantError(DomainError):
    pass


class RoomCapReachedError(TenantError):
    code = "room_cap_reached"
    status = 403


class RoomIdUnavailableError(TenantError):
    code = "room_id_unavailable"
    status = 409


class NotPermittedError(TenantError):
    code = "not_permitted"
    status = 403


class NotFoundError(TenantError):
    code = "not_found"
    status = 404


class RateLimitedError(TenantError):
    code = "rate_limited"
    status = 429

    def __init__(
        self, message: str, *, retry_after_seconds: int, extra: dict[str, Any] | None = None
    ):
        super().__init__(message, extra={"retryAfter": retry_after_seconds, **(extra or {})})
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_seconds)}


ROOM_CAP_REACHED = (
    "This team already owns its maximum of {cap} rooms. Archive a room or ask the team's "
    "owner to raise the cap."
)
ROOM_ID_UNAVAILABLE = "The room id {room_id!r} is not available; choose another or omit it."
TEAM_KEYS_ONLY = "Only a team key may do this; an invite reaches its one room only."
STATIC_KEYS_ONLY = "Only a static key (API_KEYS) may create a team (seeds/000 §8.4)."
READ_ONLY_KEY = "This key is read-only."
KEY_NOT_FOUND = "No such key in this team."
INVITE_NOT_FOUND = "No such invite for this room."
RATE_LIMITED = (
    "Rate limit reached: {limit} tool calls a minute for this {scope}. Retry after {retry} s."
)
TEAM_EXISTS = "A team with the slug {slug!r} already exists."
LAST_OWNER = "A team keeps at least one owner: make someone else an owner first."
