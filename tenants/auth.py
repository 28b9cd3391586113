"""A bearer secret becomes a `Caller`, through this one function, for every door."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone

from rooms import store
from tenants.credentials import secret_digest, static_key_match, static_keys_parse
from tenants.models import ApiKey

BEARER_CACHE_SECONDS = 60


@dataclass(frozen=True, slots=True)
class Caller:
    team_id: str
    kind: Literal["static", "key", "invite"]
    credential_id: str | None = None
    # An invite reaches one room and never claims (seeds/000 §8.1).
    allowed_room: str | None = None
    bound_agent: str | None = None
    read_only: bool = False


@lru_cache(maxsize=4)
def _static_keys(raw: str) -> list[tuple[str, str]]:
    return static_keys_parse(raw)


def _api_key_lookup(digest: str) -> Caller | None:
    key = (
        ApiKey.objects.select_related("team").filter(digest=digest, revoked_at__isnull=True).first()
    )
    if key is None:
        return None
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
    return Caller(team_id=key.team.slug, kind="key", credential_id=str(key.pk))


async def caller_from_bearer(secret: str | None) -> Caller | None:
    """Static keys first (in memory, constant time over all), then dynamic keys (Redis
    cache, the database on a miss). None means 401."""
    if not secret:
        return None
    digest = secret_digest(secret)
    team = static_key_match(digest, _static_keys(str(settings.API_KEYS)))
    if team is not None:
        return Caller(team_id=team, kind="static", credential_id=f"static:{team}")
    cached = await store.bearer_cache_get(digest)
    if cached is not None:
        return Caller(**json.loads(cached))
    caller = await sync_to_async(_api_key_lookup, thread_sensitive=False)(digest)
    if caller is not None:
        await store.bearer_cache_set(
            digest,
            json.dumps(
                {
                    "team_id": caller.team_id,
                    "kind": caller.kind,
                    "credential_id": caller.credential_id,
                }
            ),
            ttl_seconds=BEARER_CACHE_SECONDS,
        )
    return caller


def bearer_from_header(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None
