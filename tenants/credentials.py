"""Bearer secrets: generation with a recognisable prefix, digests, constant-time checks."""

from __future__ import annotations

import hashlib
import hmac
import secrets

KEY_PREFIX = "rs_live_"
INVITE_PREFIX = "rs_inv_"
DISPLAY_CHARS = 12


def secret_generate(prefix: str = KEY_PREFIX) -> str:
    return prefix + secrets.token_urlsafe(32)


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secret_display_prefix(secret: str) -> str:
    return secret[:DISPLAY_CHARS]


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
    timing tells nothing about which key was tried (seeds/000 §8.1)."""
    found = None
    for team, digest in keys:
        if hmac.compare_digest(presented_digest, digest) and found is None:
            found = team
    return found
