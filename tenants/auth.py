"""A bearer secret becomes a `Caller`, through this one function, for every door.

Order (seeds/000 §8.1): static keys from API_KEYS (constant time over digests, every key
checked), then dynamic keys, then invites. Dynamic keys and invites are answered from a
short Redis cache on the hot path and from the database on a miss; revoking deletes the
cache entry, so every server process refuses the very next request.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

from django.conf import settings
from django.utils import timezone

from rooms import clock, store
from tenants.credentials import (
    INVITE_PREFIX,
    secret_digest,
    static_key_match,
    static_keys_parse,
)
from tenants.db import db_run
from tenants.models import ApiKey, Invite

BEARER_CACHE_SECONDS = 60
# What every door answers (with 401) to a missing or unknown bearer.
UNAUTHORIZED = (
    "Missing or unknown bearer secret. Send 'Authorization: Bearer <team key or invite>'."
)


@dataclass(frozen=True, slots=True)
class Caller:
    team_id: str
    kind: Literal["static", "key", "invite", "user"]
    credential_id: str | None = None
    # An invite reaches one room and never claims (seeds/000 §8.1).
    allowed_room: str | None = None
    bound_agent: str | None = None
    read_only: bool = False
    expires_at_ms: int | None = None

    @property
    def actor(self) -> str:
        """How the audit log names this caller."""
        return f"{self.kind}:{self.credential_id or self.team_id}"

    @property
    def is_team_key(self) -> bool:
        return self.kind in ("static", "key")


@lru_cache(maxsize=4)
def _static_keys(raw: str) -> list[tuple[str, str]]:
    return static_keys_parse(raw)


def _ms(value: datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


def caller_lookup(digest: str) -> Caller | None:
    """The database's answer for a dynamic key or invite digest (the cache's source)."""
    now = timezone.now()
    key = (
        ApiKey.objects.select_related("team").filter(digest=digest, revoked_at__isnull=True).first()
    )
    if key is not None:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return Caller(
            team_id=key.team.slug,
            kind="key",
            credential_id=str(key.pk),
            bound_agent=key.agent_name or None,
            read_only=key.read_only,
        )
    invite = (
        Invite.objects.select_related("team", "room")
        .filter(digest=digest, revoked_at__isnull=True)
        .first()
    )
    if invite is None or (invite.expires_at is not None and invite.expires_at <= now):
        return None
    Invite.objects.filter(pk=invite.pk).update(last_used_at=now)
    return Caller(
        team_id=invite.team.slug,
        kind="invite",
        credential_id=str(invite.pk),
        allowed_room=invite.room.room_id,
        bound_agent=invite.agent_name or None,
        read_only=invite.read_only,
        expires_at_ms=_ms(invite.expires_at),
    )


def _static_caller(digest: str) -> Caller | None:
    team = static_key_match(digest, _static_keys(str(settings.API_KEYS)))
    if team is None:
        return None
    return Caller(team_id=team, kind="static", credential_id=team)


def _from_cache(raw: str) -> Caller | None:
    data: dict[str, Any] = json.loads(raw)
    caller = Caller(**data)
    if caller.expires_at_ms is not None and caller.expires_at_ms <= clock.now_ms():
        return None
    return caller


def _cache_seconds(caller: Caller) -> int:
    if caller.expires_at_ms is None:
        return BEARER_CACHE_SECONDS
    left = (caller.expires_at_ms - clock.now_ms()) // 1000
    return max(1, min(BEARER_CACHE_SECONDS, left))


async def caller_from_bearer(secret: str | None) -> Caller | None:
    """Who is calling, or None (the door answers 401)."""
    if not secret:
        return None
    digest = secret_digest(secret)
    found = _static_caller(digest)
    if found is not None:
        return found
    cached = await store.bearer_cache_get(digest)
    if cached is not None:
        return _from_cache(cached)
    caller = await db_run(caller_lookup, digest)
    if caller is not None:
        await store.bearer_cache_set(
            digest, json.dumps(asdict(caller)), ttl_seconds=_cache_seconds(caller)
        )
    return caller


def caller_for_team_key_digest(digest: str) -> Caller | None:
    """A dashboard session entered with a team key (AUTH_MODE apikey/both) keeps only the
    key's digest and re-checks it on every page, so revoking the key ends the session."""
    found = _static_caller(digest) or caller_lookup(digest)
    return found if found is not None and found.is_team_key else None


def bearer_from_header(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


def looks_like_invite(secret: str) -> bool:
    return secret.startswith(INVITE_PREFIX)
