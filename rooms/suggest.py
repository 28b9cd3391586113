"""Unknown ids answer with the closest existing ones (docs/protocol.md "Conventions"), so
an agent can recover — at a bounded cost: a miss is compared with a sample of at most
HINT_SAMPLE of the room's newest ids and short labels (never every task, never a payload),
with a scorer of plain string operations, so a storm of misses in a huge room cannot stall
the event loop for anyone else."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

HINT_SAMPLE = 100
LABEL_CHARS = 80  # how much of a title or summary an unknown-id hint compares against


@dataclass(frozen=True, slots=True)
class Closest:
    pairs: list[tuple[str, str]]  # (id, label), best first
    examined: int  # how many candidates were compared (tests hold it to HINT_SAMPLE)


def _score(wanted: str, wanted_words: set[str], cid: str, label: str) -> float:
    """How much `wanted` looks like this id or its label, 0..1: a shared beginning or end
    of the id (a cut or mistyped id), or the words of a title (an agent passing a title)."""
    candidate = cid.lower()
    longest = max(len(wanted), len(candidate)) or 1
    # Character by character is the point: a shared beginning of two ids.
    by_id = len(os.path.commonprefix((wanted, candidate))) / longest  # noqa: RUF071
    if candidate.endswith(wanted) or wanted.endswith(candidate):
        by_id = max(by_id, min(len(wanted), len(candidate)) / longest)
    text = label.lower()
    if not text:
        return by_id
    if wanted in text:
        return max(by_id, 0.9)
    words = set(text.split())
    if not words or not wanted_words:
        return by_id
    return max(by_id, len(wanted_words & words) / len(wanted_words | words))


def closest(wanted: str, candidates: Iterable[tuple[str, str]], *, n: int = 3) -> Closest:
    """Up to `n` (id, label) pairs of the (already bounded) `candidates` that look most like
    `wanted`; candidates that share nothing with it are not suggested."""
    w = wanted.lower()[:128]
    w_words = set(w.replace("_", " ").replace("-", " ").split())
    scored: list[tuple[float, int, str, str]] = []
    examined = 0
    for order, (cid, label) in enumerate(candidates):
        examined += 1
        score = _score(w, w_words, cid, label)
        if score > 0:
            scored.append((score, -order, cid, label))
    scored.sort(reverse=True)
    return Closest(pairs=[(cid, label) for _, _, cid, label in scored[:n]], examined=examined)


def describe(pairs: list[tuple[str, str]]) -> str:
    return ", ".join(f'"{cid}" ({label})' if label else f'"{cid}"' for cid, label in pairs)


@dataclass(frozen=True, slots=True)
class UnknownId:
    """What an "unknown id" error says: the hint sentence, the closest ids, how many ids
    were compared."""

    hint: str
    closest: list[str]
    examined: int


def unknown_id(
    wanted: str,
    sample: Iterable[tuple[str, str]],
    *,
    closest_hint: str,
    none_close_hint: str,
    empty_hint: str,
    fallback: bool = False,
) -> UnknownId:
    """The one way an unknown id is answered: the closest of the (bounded) `sample` named
    with `closest_hint` ({closest}); none close: `none_close_hint` (or, with `fallback`, the
    first few of the sample all the same); an empty sample: `empty_hint`."""
    pairs = list(sample)
    found = closest(wanted, pairs)
    named = found.pairs or (pairs[:3] if fallback else [])
    if named:
        hint = closest_hint.format(closest=describe(named))
    elif found.examined:
        hint = none_close_hint
    else:
        hint = empty_hint
    return UnknownId(hint, [cid for cid, _ in found.pairs], found.examined)
