"""Secrets in what is written into a room: found, replaced by a marker, and reported by place.

Every text a writer puts into a room (task titles, notes, context payloads, events, messages,
vars) passes through `secrets_redacted` before it is stored. The aim is two-sided: a
credential in its real format is redacted wherever it sits in a string, and what agents
write *about* secrets (field names, type names, placeholders, environment references,
hashes, ids, UUIDs, git SHAs, example values, JSON schema types) comes back byte for byte.
tests/rooms/redaction_corpus.py holds both sides as data; tests and `make bench` measure
them. Three kinds of detector run (the list is DETECTORS):

- this service's own credentials: the key formats tenants/credentials.py mints (`rs_live_`,
  `rs_inv_`, `rs_share_`, `rs_join_`, `whsec_` then `secrets.token_urlsafe(32)`), anywhere
  in a string, even glued to a word (then the tail must look random, so
  `users_live_dashboard_widgets` is not a key), also spelled with escapes (URL-encoded
  `rs%5Flive%5F...`, JSON-escaped `rs\\u005flive...`: decoded, then looked for), and the
  deployment's static keys (the secrets of settings.API_KEYS, matched exactly);
- credential formats, each a regex that starts with the format's fixed prefix (`ghp_`,
  `sk-ant-api03-`, `AIza`, `AKIA`, `-----BEGIN ... PRIVATE KEY`, `eyJ...` JWTs ...) and is
  gated by that literal, and then checked: random-looking (two character classes, no run
  of six of one character as in `sk_live_xxxx...`, not marked as an example or elided:
  `your`, `example`, `...`), a JWT's header decodes to JSON, a PEM block holds key
  material, a URL's password is not a placeholder;
- values next to a secret-naming key (`password = "..."`, `{"api_key": "..."}`,
  `DB_PASSWORD=...`, `Authorization: Bearer ...`): redacted only when the value looks like
  a real secret, at least 8 characters of two classes (letters of both cases, digits,
  symbols) with no space, and not a placeholder (`YOUR_API_KEY`, `<token>`, `${ENV}`,
  `changeme`, `"string"`, `null`, `"***"`), a reference (`settings.SECRET_KEY`,
  `os.environ[...]`, `get_password()`, `vault:...`, `/run/secrets/db`), an identifier or
  type name (`SecretStr`, `passwordHash`), a UUID or a password hash (`pbkdf2_sha256$...`).
  A key names a secret by its last word (`db_password`, `apiKey`, `client-secret`), so
  `password_hash`, `secret_id`, `token_type`, `nextPageToken` and `keyboard` do not.

detect-secrets is not used: its keyword plugin fires on `"password": "string"`, its AWS
plugin takes any 40-character run near "aws" (a git SHA) for a secret key, and its formats
predate `github_pat_`, `sk-proj-`, `sk-ant-` and the like.

Cost: this runs on every write, and most writes hold no secret. Each detector has a few
literal gates, looked for at C speed (all of a JSON value's strings joined, once), and its
pattern runs only on the strings holding one. Every pattern is linear in the text: each
quantifier is bounded, token runs are possessive, and a pattern without a literal start
begins with a lookbehind, so a run of token characters is tried once, from its start.
Texts are bounded by the schemas (rooms.schemas: 16,000 characters of text, 64,000 of a
context payload's JSON); the scan is linear beyond that too (bench/redaction.py measures
a worst case of the maximum entry size).

Paths (`SecretFound.where`): the caller's root name (`""` for a bare string), then
`.key` for a dict key that is an identifier (letters, digits, `_`, `-`, not starting with a
digit or `-`), `["any key"]` (JSON-quoted) for any other key, `[2]` for a list index:
`payload.db[1].password`, `payload["x.y"][0]`. Dict keys are checked too, and reported at
the path of their entry with the key spelled redacted, but they are not rewritten (a
rewritten key could collide with another and would break lookups by key), so a secret in
a key is reported again on every pass; callers that cannot keep it should refuse the write.

The package: rooms/secrets/shapes.py says what a real secret looks like and what a
placeholder does; rooms/secrets/detectors.py holds the detectors, in one ordered table
(DETECTORS), each beside the rules that keep it safe on structured payloads; this module
walks a written value and replaces what they find.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rooms.secrets.detectors import (
    DETECTORS,
    OWN_DETECTORS,
    OWN_KEY_KINDS,
    REDACTION_MARKER_PREFIX,
    Detector,
    Found,
    static_key_spans,
    static_keys,
)
from rooms.secrets.keywords import key_names_a_secret, keyed_value_kind
from rooms.secrets.shapes import placeholder

__all__ = [
    "DETECTORS",
    "OWN_KEY_KINDS",
    "REDACTION_MARKER_PREFIX",
    "SecretFound",
    "key_names_a_secret",
    "own_keys_redacted",
    "placeholder",
    "redaction_marker",
    "secret_kinds_summary",
    "secrets_in_text",
    "secrets_redacted",
]

_IDENTIFIER_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_MARKER = re.compile(r"\[redacted:[^\]\n]{1,100}\]")


@dataclass(frozen=True, slots=True)
class SecretFound:
    where: str  # path into the written value (module docstring), "" for a bare string
    kind: str  # "Roomservice API key", "AWS Access Key", "Private Key", ...
    start: int  # offsets of the secret in that string, before redaction
    end: int


def secrets_in_text(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) spans of the secrets in `text`, non-overlapping, in order."""
    return _spans(text, _detectors_gated(text, DETECTORS), static=True)


def secrets_redacted(value: object, where: str = "") -> tuple[object, list[SecretFound]]:
    """A copy of the JSON-like `value` with each secret in each string replaced by
    f"[redacted:{kind}]", and where each was. Dict keys are checked and reported but kept.
    A value without secrets comes back as the same object, and so does each part of it
    without one; the cost of a clean value is one gate pass over all its strings joined."""
    return _value_redacted(value, where, DETECTORS, keyed=True)


def own_keys_redacted(value: object, where: str = "") -> tuple[object, list[SecretFound]]:
    """`secrets_redacted` for this service's own keys alone (its key formats and the static
    keys of API_KEYS): what a room whose checks are off still never keeps (a credential to
    this very service, readable by every guest and share link of the room)."""
    return _value_redacted(value, where, OWN_DETECTORS, keyed=False)


def secret_kinds_summary(found: list[SecretFound]) -> str:
    """One sentence telling the writer what was redacted and where, e.g. "2 secrets
    redacted: an AWS Access Key at payload.aws.key; a Roomservice API key at title"
    (at most 5 places, then "and N more"); "" when nothing was found."""
    if not found:
        return ""
    places = [f"{_with_article(f.kind)} at {_place(f)}" for f in found[:5]]
    if len(found) > 5:
        places.append(f"and {len(found) - 5} more")
    noun = "secret" if len(found) == 1 else "secrets"
    return f"{len(found)} {noun} redacted: " + "; ".join(places)


def redaction_marker(kind: str) -> str:
    return f"{REDACTION_MARKER_PREFIX}{kind}]"


def _with_article(kind: str) -> str:
    if kind.endswith("s"):  # "Basic Auth Credentials", "NPM tokens"
        return kind
    first = kind.split(" ", 1)[0]
    acronym = first.isupper() and len(first) <= 4
    vowel_sound = first[:1] in ("AEFHILMNORSX" if acronym else "AEIOUaeiou")
    return f"{'an' if vowel_sound else 'a'} {kind}"


def _place(found: SecretFound) -> str:
    return found.where or f"characters {found.start}-{found.end}"


def _value_redacted(
    value: object, where: str, detectors: tuple[Detector, ...], *, keyed: bool
) -> tuple[object, list[SecretFound]]:
    strings: list[str] = []
    ranges: dict[int, tuple[int, int]] = {}
    _strings_collect(value, strings, ranges)
    gated, hit_indexes = _strings_gated(strings, detectors)
    if not gated:
        return value, []
    walk = _Walk(gated=gated, hit_indexes=hit_indexes, ranges=ranges, found=[], keyed=keyed)
    return _redacted(value, where, walk), walk.found


def _strings_collect(value: object, strings: list[str], ranges: dict[int, tuple[int, int]]) -> None:
    """Every string in `value` (dict keys too) in walking order, and for each list and dict
    the [first, past-last) indexes of its strings: the redacting walk skips the parts that
    hold no string a gate matched."""
    if isinstance(value, str):
        strings.append(value)
    elif isinstance(value, dict):
        first = len(strings)
        for key, child in value.items():
            if isinstance(key, str):
                strings.append(key)
            _strings_collect(child, strings, ranges)
        ranges[id(value)] = (first, len(strings))
    elif isinstance(value, list | tuple):
        first = len(strings)
        for child in value:
            _strings_collect(child, strings, ranges)
        ranges[id(value)] = (first, len(strings))


def _detectors_gated(text: str, detectors: Sequence[Detector]) -> tuple[Detector, ...]:
    folded: str | None = None
    out = []
    for d in detectors:
        if d.folded and folded is None:
            folded = text.lower()
        against = folded if d.folded and folded is not None else text
        if any(gate in against for gate in d.gates):
            out.append(d)
    return tuple(out)


# A string no gate matched, but which holds a static key: scanned with no detector.
_STATIC_ONLY: tuple[Detector, ...] = ()


def _strings_gated(
    strings: list[str], detectors: tuple[Detector, ...]
) -> tuple[dict[str, tuple[Detector, ...]], list[int]]:
    """The strings worth a scan, each with the detectors whose gate matched it, and their
    indexes: one search per gate over all the strings joined, not one per gate and string.
    (Folded gates look in the joined text lowercased; `lower()` can change a text's length,
    so a hit there is mapped back by a search of each string instead.)"""
    joined = "\n".join(strings)
    folded = joined.lower()
    aligned = len(folded) == len(joined)
    starts = [0]
    for text in strings:
        starts.append(starts[-1] + len(text) + 1)
    hits: dict[int, set[int]] = {}
    for index, detector in enumerate(detectors):
        against = folded if detector.folded else joined
        for gate in detector.gates:
            at = against.find(gate)
            if at == -1:
                continue
            if detector.folded and not aligned:
                for i, text in enumerate(strings):
                    if gate in text.lower():
                        hits.setdefault(i, set()).add(index)
                continue
            while at != -1:
                i = bisect.bisect_right(starts, at) - 1
                hits.setdefault(i, set()).add(index)
                at = against.find(gate, starts[i + 1])
    for secret in static_keys():
        at = joined.find(secret)
        while at != -1:
            i = bisect.bisect_right(starts, at) - 1
            hits.setdefault(i, set())
            at = joined.find(secret, starts[i + 1])
    gated = {
        strings[i]: tuple(detectors[d] for d in sorted(indexes)) or _STATIC_ONLY
        for i, indexes in hits.items()
    }
    return gated, sorted(hits)


@dataclass(frozen=True, slots=True)
class _Walk:
    gated: dict[str, tuple[Detector, ...]]  # see _strings_gated
    hit_indexes: list[int]
    ranges: dict[int, tuple[int, int]]  # see _strings_collect
    found: list[SecretFound]
    keyed: bool  # a dict key that names a secret makes its string value one (when it is)


def _holds_hit(walk: _Walk, container: object) -> bool:
    first, past = walk.ranges[id(container)]
    at = bisect.bisect_left(walk.hit_indexes, first)
    return at < len(walk.hit_indexes) and walk.hit_indexes[at] < past


def _redacted(value: object, where: str, walk: _Walk) -> object:
    if isinstance(value, str):
        detectors = walk.gated.get(value)
        if detectors is None:
            return value
        return _text_redacted(value, where, _spans(value, detectors, static=True), walk.found)
    if isinstance(value, dict):
        return _dict_redacted(value, where, walk) if _holds_hit(walk, value) else value
    if isinstance(value, list | tuple):
        if not _holds_hit(walk, value):
            return value
        items = [_redacted(item, f"{where}[{i}]", walk) for i, item in enumerate(value)]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


def _dict_redacted(value: dict[object, object], where: str, walk: _Walk) -> dict[object, object]:
    out: dict[object, object] = {}
    changed = False
    for key, child in value.items():
        if not isinstance(key, str):
            out[key] = _redacted(child, f"{where}[{key!r}]", walk)
            changed = changed or out[key] is not child
            continue
        key_detectors = walk.gated.get(key)
        child_detectors = walk.gated.get(child) if isinstance(child, str) else None
        # The key can say the whole value is a password: {"password": "hunter2xyz"}.
        keyed = (
            walk.keyed
            and key_detectors is not None
            and isinstance(child, str)
            and key_names_a_secret(key)
        )
        if key_detectors is None and child_detectors is None:
            if isinstance(child, str) or not isinstance(child, dict | list | tuple):
                out[key] = child
                continue
            if not _holds_hit(walk, child):
                out[key] = child
                continue
        key_spans = [] if key_detectors is None else _spans(key, key_detectors, static=True)
        # The path never spells a secret, not even one held in a key.
        path = _key_path(where, _text_replaced(key, key_spans))
        walk.found.extend(SecretFound(path, kind, start, end) for start, end, kind in key_spans)
        new: object
        if isinstance(child, str):
            spans = (
                _spans(child, child_detectors, static=True) if child_detectors is not None else []
            )
            if keyed:
                spans = _with_keyed_value(key, child, spans)
            new = _text_redacted(child, path, spans, walk.found)
        else:
            new = _redacted(child, path, walk)
        out[key] = new
        changed = changed or new is not child
    return out if changed else value


def _with_keyed_value(
    key: str, value: str, spans: list[tuple[int, int, str]]
) -> list[tuple[int, int, str]]:
    """`spans` of `value`, and the value itself (trimmed) when `key` names a secret and the
    value looks like one."""
    stripped = value.strip()
    if not stripped or REDACTION_MARKER_PREFIX in value:
        return spans
    kind = keyed_value_kind(key, stripped)
    if kind is None:
        return spans
    start = value.index(stripped)
    found = [(s, e, k, 1) for s, e, k in spans]
    return _merged([*found, (start, start + len(stripped), kind, 2)])


def _key_path(where: str, key: str) -> str:
    if _IDENTIFIER_KEY.match(key):
        return f"{where}.{key}" if where else key
    return f"{where}[{json.dumps(key, ensure_ascii=False)}]"


def _text_redacted(
    text: str, where: str, spans: list[tuple[int, int, str]], found: list[SecretFound]
) -> str:
    found.extend(SecretFound(where, kind, start, end) for start, end, kind in spans)
    return _text_replaced(text, spans)


def _text_replaced(text: str, spans: list[tuple[int, int, str]]) -> str:
    if not spans:
        return text
    parts: list[str] = []
    at = 0
    for start, end, kind in spans:
        parts.append(text[at:start])
        parts.append(redaction_marker(kind))
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _spans(text: str, detectors: Sequence[Detector], *, static: bool) -> list[tuple[int, int, str]]:
    """Secrets in `text` by `detectors` (and the static keys, with `static`)."""
    found: list[Found] = [
        (start, end, kind, d.rank) for d in detectors for start, end, kind in d.find(text)
    ]
    if static:
        found.extend((start, end, kind, 0) for start, end, kind in static_key_spans(text))
    if not found:
        return []
    if REDACTION_MARKER_PREFIX in text:
        found = _outside_markers(found, [(m.start(), m.end()) for m in _MARKER.finditer(text)])
    return _merged(found)


def _outside_markers(found: list[Found], markers: list[tuple[int, int]]) -> list[Found]:
    """What a detector found, minus the markers already in the text: redacting twice finds
    nothing new."""
    out: list[Found] = []
    for start, end, kind, rank in found:
        parts = [(start, end)]
        for m_start, m_end in markers:
            parts = [
                piece
                for s, e in parts
                for piece in ((s, min(e, m_start)), (max(s, m_end), e))
                if piece[0] < piece[1]
            ]
        out.extend((s, e, kind, rank) for s, e in parts)
    return out


def _merged(found: list[Found]) -> list[tuple[int, int, str]]:
    """Overlapping finds become one span, of the kind of the one that starts first (the
    longest, then the lowest rank, when they start together)."""
    out: list[tuple[int, int, str]] = []
    for start, end, kind, _rank in sorted(found, key=lambda f: (f[0], -f[1], f[3])):
        if out and start < out[-1][1]:
            last_start, last_end, last_kind = out[-1]
            out[-1] = (last_start, max(last_end, end), last_kind)
        else:
            out.append((start, end, kind))
    return out
