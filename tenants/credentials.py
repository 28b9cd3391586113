"""Secrets: generation with a recognisable prefix, digests, constant-time checks."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

KEY_PREFIX = "rs_live_"
INVITE_PREFIX = "rs_inv_"
SHARE_PREFIX = "rs_share_"
JOIN_PREFIX = "rs_join_"
WEBHOOK_PREFIX = "whsec_"
DISPLAY_CHARS = 12


@dataclass(frozen=True, slots=True)
class Secret:
    secret: str  # shown once, never stored (a webhook's excepted: it signs with it)
    prefix: str  # the first characters, for recognition
    digest: str  # what is stored and looked up


def secret_new(prefix: str) -> Secret:
    secret = prefix + secrets.token_urlsafe(32)
    return Secret(secret=secret, prefix=secret[:DISPLAY_CHARS], digest=secret_digest(secret))


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def static_keys_parse(raw: str) -> list[tuple[str, str]]:
    """`API_KEYS=team:secret,team2:secret2` -> [(team, digest)]. Malformed entries are an
    error at startup, not a silently missing key."""
    out = []
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        team, sep, secret = item.partition(":")
        if not sep or not team.strip() or not secret:
            raise ValueError(f"API_KEYS entry {item.split(':')[0]!r}… is not team:secret")
        out.append((team.strip(), secret_digest(secret)))
    return out


def static_key_match(presented_digest: str, keys: list[tuple[str, str]]) -> str | None:
    """The team whose static key matches. Every key is compared (in constant time), so the
    timing tells nothing about which key was tried (docs/protocol.md "Tenancy and access")."""
    found = None
    for team, digest in keys:
        if hmac.compare_digest(presented_digest, digest) and found is None:
            found = team
    return found
