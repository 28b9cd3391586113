"""Writes to account data: teams and keys. Secrets are returned once and never stored."""

from __future__ import annotations

from dataclasses import dataclass

from asgiref.sync import async_to_sync
from django.db import transaction
from django.utils import timezone

from rooms import store
from tenants.credentials import secret_digest, secret_display_prefix, secret_generate
from tenants.models import ApiKey, Team


@dataclass(frozen=True, slots=True)
class MintedKey:
    key: ApiKey
    secret: str  # shown once, never stored


def team_create(*, slug: str, name: str | None = None) -> Team:
    team, _ = Team.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return team


@transaction.atomic
def api_key_create(*, team: Team, name: str) -> MintedKey:
    secret = secret_generate()
    key = ApiKey.objects.create(
        team=team, name=name, prefix=secret_display_prefix(secret), digest=secret_digest(secret)
    )
    return MintedKey(key=key, secret=secret)


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    """Refused from the very next request: the hot-path cache entry goes with it."""
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    async_to_sync(store.bearer_cache_delete)(key.digest)
    return key


DEMO_TEAM = "demo"


def demo_key_ensure() -> MintedKey | None:
    """On a first start with no API_KEYS: a demo team and one key, to print once. None when
    the demo team already has a live key (its secret was shown on the first start)."""
    team = team_create(slug=DEMO_TEAM, name="Demo team")
    if team.api_keys.filter(revoked_at__isnull=True).exists():
        return None
    return api_key_create(team=team, name="demo key (make run)")
