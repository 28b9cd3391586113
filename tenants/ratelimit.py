"""Per-team (and per-invite) tool-call limits: a sliding window in Redis that fails open.

When the limiter's Redis does not answer, requests go through and the failure is logged
(seeds/000 §8.3: availability over perfect abuse protection; roomd itself fails closed).
"""

from __future__ import annotations

import logging
import secrets

from django.conf import settings

from rooms import clock, store
from tenants import errors
from tenants.auth import Caller

log = logging.getLogger(__name__)
WINDOW_MS = 60_000


async def _hit(bucket: str, limit: int, scope: str) -> None:
    allowed, value = await store.rate_window_hit(
        bucket,
        now_ms=clock.now_ms(),
        window_ms=WINDOW_MS,
        limit=limit,
        member=f"{clock.now_ms()}-{secrets.token_hex(4)}",
    )
    if not allowed:
        retry = max(1, -(-value // 1000))
        raise errors.RateLimitedError(
            errors.RATE_LIMITED.format(limit=limit, scope=scope, retry=retry),
            retry_after_seconds=retry,
        )


async def rate_limit_check(caller: Caller) -> None:
    """Count one tool call; raises RateLimitedError over the limit."""
    team_limit = int(settings.RATE_LIMIT_PER_MINUTE)
    invite_limit = int(settings.RATE_LIMIT_INVITE_PER_MINUTE)
    try:
        if caller.kind == "invite" and invite_limit > 0:
            await _hit(f"invite:{caller.credential_id}", invite_limit, "invite")
        if team_limit > 0:
            await _hit(f"team:{caller.team_id}", team_limit, "team")
    except store.LimiterError as exc:
        log.warning("rate limiter unavailable, letting the call through: %s", exc)
