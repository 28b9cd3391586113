"""Tenancy's error vocabulary (all `DomainError`s, so every door maps them the same way)."""

from __future__ import annotations

from typing import Any

from rooms.errors import DomainError


class TenantError(DomainError):
    pass


class TeamUnavailableError(TenantError):
    code = "team_unavailable"
    status = 409


class NotPermittedError(TenantError):
    code = "not_permitted"
    status = 403


class ActorMismatchError(TenantError):
    code = "actor_mismatch"
    status = 403


class NotFoundError(TenantError):
    code = "not_found"
    status = 404


class TooManyError(TenantError):
    """A budget of concurrent things (streams, waiting calls) is used up."""

    code = "too_many"
    status = 429

    def __init__(self, message: str, *, retry_after_seconds: int) -> None:
        super().__init__(message, extra={"retryAfter": retry_after_seconds})
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_seconds)}


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


MANAGE_REFUSED = "This credential may not manage {what}: it is {who}. {how}"
MANAGE_HOW = {
    "keys": "Managing keys takes a team key that is neither bound to an agent nor read-only, "
    "or a dashboard owner or admin.",
    "invites": "Managing invites takes a team key that is neither bound to an agent nor "
    "read-only, or a dashboard owner or admin.",
    "webhooks": "Managing webhooks takes a team key that is neither bound to an agent nor "
    "read-only, or a dashboard owner or admin.",
    "rooms": "Creating rooms and setting their mode takes a team key that is neither bound "
    "to an agent nor read-only, or a dashboard owner or admin.",
    "team": "Managing members and reading the audit log takes a team owner.",
    "teams": "Only a static key (API_KEYS) may create a team.",
}
ACTOR_PERSON = (
    '{field} "{given}" is a person\'s name: names starting with "person:" are for people '
    "acting from the dashboard. Use your agent's own name."
)
AGENT_NAME_PERSON = (
    'A credential cannot be bound to "{given}": names starting with "person:" are for people '
    "acting from the dashboard."
)
ACTOR_MISMATCH = (
    'This credential is bound to agent "{agent}": {field} must be "{agent}" (or left out), '
    'not "{given}".'
)
READ_ONLY_REFUSED = (
    "This credential is read-only: it may call reading tools only (read_plan, list_context, "
    "read_events, ...). Ask the team for a key that may write."
)
KEY_NOT_FOUND = "No such key in this team."
INVITE_NOT_FOUND = "No such invite for this room."
RATE_LIMITED = "Rate limit reached: {limit} calls a minute for this {scope}. Retry after {retry} s."
TOO_MANY = (
    "{what}: this {scope} already has {cap} open at once (the most it may). Close one and retry."
)
TOO_MANY_HERE = (
    "{what}: this server already holds its most ({cap}) at once. Retry in a few seconds "
    "(another server may take it)."
)
TEAM_EXISTS = "The team slug {slug!r} is not available; choose another."
LAST_OWNER = "A team keeps at least one owner: make someone else an owner first."
LAST_OWNER_LEAVING = (
    "You are the last owner of {teams}, which other people still belong to and no admin could "
    "take over. Make one of them an owner (or admin) first, then delete your account."
)
