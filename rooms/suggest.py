"""Unknown ids answer with the closest existing ones (seeds/002), so an agent can recover."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(
    wanted: str, candidates: Iterable[tuple[str, str]], *, n: int = 3
) -> list[tuple[str, str]]:
    """Up to `n` (id, label) pairs whose id or label looks most like `wanted`."""
    pool = list(candidates)
    if not pool:
        return []
    scored = []
    w = wanted.lower()
    for cid, label in pool:
        score = max(
            difflib.SequenceMatcher(None, w, cid.lower()).ratio(),
            difflib.SequenceMatcher(None, w, label.lower()).ratio() if label else 0.0,
        )
        scored.append((score, cid, label))
    scored.sort(key=lambda s: -s[0])
    return [(cid, label) for _, cid, label in scored[:n]]


def describe(pairs: list[tuple[str, str]]) -> str:
    return ", ".join(f'"{cid}" ({label})' if label else f'"{cid}"' for cid, label in pairs)
