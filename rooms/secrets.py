"""Secrets in what is written into a room: found, replaced by a marker, and reported by place.

Every text a writer puts into a room (task titles, notes, context payloads, events, messages,
vars) passes through `secrets_redacted` before it is stored. Two kinds of detector run:

- our own key formats (`rs_live_`, `rs_inv_`, `rs_share_`, `rs_join_`, `whsec_` followed by
  at least 16 characters of `secrets.token_urlsafe`), matched here so that they are caught
  whatever detect-secrets does;
- detect-secrets' maintained plugins for real credential formats with few false positives
  (cloud keys, service tokens, private keys, `password = "..."` assignments).

The high-entropy string plugins (Base64HighEntropyString, HexHighEntropyString) are left
out on purpose: room text is full of commit SHAs, digests, ids and base64 blobs, and a
false positive there would destroy legitimate content that agents rely on. So is
IPPublicDetector: an address is not a credential, and deployment notes are full of them.

Plugins are driven through `analyze_string` (the one method every detect-secrets plugin
implements) and never through `analyze_line` or `scan_line`: those read detect-secrets'
process-wide settings and, when verification is configured, call `verify()`, which makes
network requests to the credential's issuer. Nothing here reads or changes those settings.

Cost: this runs on every write, and most writes hold no secret. Each plugin has a gate, a
few anchors that start with a literal and so search at C speed, and runs only on the lines
where its gate matched; a line longer than 4,096 characters is cut into overlapping windows
of that size, so one huge line costs time in proportion to its length. A JSON value's
strings are gated all at once, joined. A clean 2 KB note costs about 50 microseconds.

Paths (`SecretFound.where`): the caller's root name (`""` for a bare string), then
`.key` for a dict key that is an identifier (letters, digits, `_`, `-`, not starting with a
digit or `-`), `["any key"]` (JSON-quoted) for any other key, `[2]` for a list index:
`payload.db[1].password`, `payload["x.y"][0]`. Dict keys are checked too, and reported at
the path of their entry with the key spelled redacted, but they are not rewritten (a
rewritten key could collide with another and would break lookups by key), so a secret in
a key is reported again on every pass; callers that cannot keep it should refuse the write.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

with warnings.catch_warnings():
    # detect-secrets imports requests, whose import-time version checks may warn; a warning
    # here must not turn every write into an error under `-W error`.
    warnings.simplefilter("ignore")
    from detect_secrets.filters.heuristic import (
        is_indirect_reference,
        is_likely_id_string,
        is_not_alphanumeric_string,
        is_potential_uuid,
        is_prefixed_with_dollar_sign,
        is_sequential_string,
        is_templated_secret,
    )
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.base import BasePlugin
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
    from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.keyword import KeywordDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.softlayer import SoftlayerDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

REDACTION_MARKER_PREFIX = "[redacted:"

# Our own credentials (tenants/credentials.py mints them: prefix + token_urlsafe(32)).
OWN_KEY_KINDS: dict[str, str] = {
    "rs_live_": "Roomservice API key",
    "rs_inv_": "Roomservice invite key",
    "rs_share_": "Roomservice share token",
    "rs_join_": "Roomservice join token",
    "whsec_": "Roomservice webhook secret",
}
# Not preceded by a letter or digit, so `users_live_dashboard_widgets` is not a key.
_OWN_KEY = re.compile(r"(?<![A-Za-z0-9])(?:rs_(?:live|inv|share|join)_|whsec_)[A-Za-z0-9_-]{16,}")
_OWN_KEY_ANCHORS = ("rs_", "whsec_")
_OWN_KEY_GATES = tuple(re.compile(re.escape(anchor)) for anchor in _OWN_KEY_ANCHORS)

# Plugins see at most this much of a line per call; longer lines are cut into windows that
# overlap, so that a secret shorter than the overlap is whole in at least one window.
WINDOW_CHARS = 4096
WINDOW_OVERLAP = 200
_WINDOW_STEP = WINDOW_CHARS - WINDOW_OVERLAP

_MARKER = re.compile(r"\[redacted:[^\]\n]{1,100}\]")
_PEM_END = re.compile(r"END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?(?: ?-{1,5})?")
_PEM_DASHES_BEFORE = re.compile(r"-{1,5} ?\Z")
_KEY_MATERIAL_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z][A-Za-z0-9-]*: .*)\s*")
# `PASSWORD=hunter2` / `password: hunter2` on a line of its own, value one unquoted token:
# the keyword plugin wants quotes, so such a line is handed to it as `key = "value"`.
_ASSIGNMENT_LINE = re.compile(
    r"^[ \t]*(?:-[ \t]+)?(?:export[ \t]+)?([A-Za-z_][\w.-]*)[ \t]*[=:][ \t]*"
    r"([^\s'\"`]+)[ \t\r]*$",
    re.MULTILINE,
)
_IDENTIFIER_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


@dataclass(frozen=True, slots=True)
class SecretFound:
    where: str  # path into the written value (module docstring), "" for a bare string
    kind: str  # "Roomservice API key", "AWS Access Key", "Private Key", ...
    start: int  # offsets of the secret in that string, before redaction
    end: int


@dataclass(frozen=True, slots=True)
class _Detector:
    """A detect-secrets plugin and its gate: the plugin runs only where one of `anchors`
    matches the text or one of `folded_anchors` matches the lowercased text. Each anchor
    starts with a literal, so that a search costs about as much as `str.find`."""

    plugin: BasePlugin
    anchors: tuple[re.Pattern[str], ...] = ()
    folded_anchors: tuple[re.Pattern[str], ...] = ()
    # The plugin's patterns capture only the token's type prefix (GitHub's
    # `(ghp|gho|...)_[A-Za-z0-9_]{36}`), so `analyze_string` yields "ghp", not the token:
    # take the positions of its patterns' whole matches instead.
    whole_matches: bool = False
    # A second, piece-level test that the plugin's patterns all need, when the anchors alone
    # would pass too much ordinary text.
    piece_requires: re.Pattern[str] | None = None
    # What the secret runs on through, right after the value the plugin reports: the JWT
    # plugin's pattern ends lazily, so it reports `header.payload.` without the signature.
    runs_on: re.Pattern[str] | None = None


def _literals(*literals: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(re.escape(literal)) for literal in literals)


_KEYWORD = KeywordDetector()
# The keyword plugin's words (detect_secrets.plugins.keyword.DENYLIST) are "password",
# "secret", "api_key" and the like: "key" on its own is not one, and it is all over prose.
_KEY_QUALIFIERS = ("api", "auth", "service", "account", "db", "database", "priv", "private")
_KEYWORD_ANCHORS = (
    re.compile(
        "key(?:" + "|".join(f"(?<={q}key)|(?<={q}_key)" for q in (*_KEY_QUALIFIERS, "client")) + ")"
    ),
    *_literals("pass", "pwd", "secret", "contrase"),
)
# Every pattern the keyword plugin tries by default wants the value in quotes.
_QUOTE = re.compile("['\"`]")

# Each gate is a superset of what its plugin's denylist can match (read off the plugin's
# source, detect-secrets 1.5); tests/rooms/test_secrets.py holds one sample per plugin.
DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        AWSKeyDetector(),
        anchors=(re.compile(r"A(?:3T|BIA|CCA|KIA|SIA)"),),
        folded_anchors=_literals("aws"),
    ),
    _Detector(ArtifactoryDetector(), anchors=(re.compile(r"A(?:KC|P[0-9A-F])"),)),
    _Detector(AzureStorageKeyDetector(), anchors=_literals("AccountKey=")),
    _Detector(BasicAuthDetector(), anchors=_literals("://")),
    _Detector(
        CloudantDetector(),
        folded_anchors=(
            re.compile(r"cl(?:ou(?:dant)?)?[_-]?(?:api)?(?:key|pw|pass|token)"),
            re.compile(r"\.cloudant\.com"),
        ),
    ),
    _Detector(DiscordBotTokenDetector(), anchors=(re.compile(r"\.[A-Za-z0-9_-]{6}\."),)),
    _Detector(GitHubTokenDetector(), anchors=(re.compile(r"gh[pousr]_"),), whole_matches=True),
    _Detector(
        GitLabTokenDetector(),
        anchors=(
            re.compile(r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-"),
            re.compile(r"GR1348941"),
        ),
        whole_matches=True,
    ),
    _Detector(JwtTokenDetector(), anchors=_literals("eyJ"), runs_on=re.compile(r"[A-Za-z0-9_=-]*")),
    _Detector(MailchimpDetector(), anchors=(re.compile(r"-us[0-9]"),)),
    _Detector(NpmDetector(), anchors=_literals(":_authToken=")),
    _Detector(OpenAIDetector(), anchors=_literals("T3BlbkFJ")),
    _Detector(PrivateKeyDetector(), anchors=_literals("BEGIN ", "PuTTY-User-Key-File-")),
    _Detector(PypiTokenDetector(), anchors=_literals("pypi-AgE")),
    _Detector(SendGridDetector(), anchors=_literals("SG.")),
    _Detector(
        SlackDetector(),
        folded_anchors=(re.compile(r"xox[abposr]-"), re.compile(r"hooks\.slack\.com/")),
    ),
    _Detector(
        SoftlayerDetector(),
        folded_anchors=(
            re.compile(r"s(?:oftlayer|l)[_-]?(?:api)?[_-]?(?:key|pwd|pass|token)"),
            re.compile(r"softlayer"),
        ),
    ),
    _Detector(SquareOAuthDetector(), anchors=_literals("sq0csp-")),
    _Detector(StripeDetector(), anchors=_literals("k_live_")),
    _Detector(TelegramBotTokenDetector(), anchors=(re.compile(r":[A-Za-z0-9_-]{35}"),)),
    _Detector(
        TwilioKeyDetector(),
        anchors=(re.compile(r"AC[a-z0-9]{32}"), re.compile(r"SK[a-z0-9]{32}")),
    ),
    _Detector(
        IbmCloudIamDetector(),
        folded_anchors=_literals("key", "pwd", "pass", "token"),
        piece_requires=re.compile(r"[A-Za-z0-9_-]{44}"),
    ),
    _Detector(IbmCosHmacDetector(), folded_anchors=_literals("secret")),
    _Detector(_KEYWORD, folded_anchors=_KEYWORD_ANCHORS),
)

# (start, end, kind, rank): rank 0 for our own formats, so their kind wins a tie.
_Found = tuple[int, int, str, int]


def secrets_in_text(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) spans of the secrets in `text`, non-overlapping, in order."""
    return _spans(text, _detectors_gated(text))


def secrets_redacted(value: object, where: str = "") -> tuple[object, list[SecretFound]]:
    """A copy of the JSON-like `value` with each secret in each string replaced by
    f"[redacted:{kind}]", and where each was. Dict keys are checked and reported but kept.
    A value without secrets comes back as the same object, and so does each part of it
    without one; the cost of a clean value is one gate pass over all its strings joined."""
    strings: list[str] = []
    ranges: dict[int, tuple[int, int]] = {}
    _strings_collect(value, strings, ranges)
    gated, hit_indexes = _strings_gated(strings)
    if not gated:
        return value, []
    walk = _Walk(gated=gated, hit_indexes=hit_indexes, ranges=ranges, found=[])
    return _redacted(value, where, walk), walk.found


def own_keys_redacted(value: object, where: str = "") -> tuple[object, list[SecretFound]]:
    """`secrets_redacted` for our own key formats alone: what a room whose checks are off
    still never keeps (a credential to this very service, readable by every guest and share
    link of the room)."""
    strings: list[str] = []
    ranges: dict[int, tuple[int, int]] = {}
    _strings_collect(value, strings, ranges)
    hits = [i for i, text in enumerate(strings) if _OWN_KEY.search(text)]
    if not hits:
        return value, []
    walk = _Walk(gated={strings[i]: () for i in hits}, hit_indexes=hits, ranges=ranges, found=[])
    return _redacted(value, where, walk), walk.found


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


def _detectors_gated(text: str) -> tuple[_Detector, ...]:
    folded = text.lower()
    hit: dict[re.Pattern[str], bool] = {}

    def gate(pattern: re.Pattern[str], against: str) -> bool:
        if pattern not in hit:
            hit[pattern] = pattern.search(against) is not None
        return hit[pattern]

    return tuple(
        d
        for d in DETECTORS
        if any(gate(p, text) for p in d.anchors) or any(gate(p, folded) for p in d.folded_anchors)
    )


def _strings_gated(
    strings: list[str],
) -> tuple[dict[str, tuple[_Detector, ...]], list[int]]:
    """The strings worth a scan, each with the detectors whose gate matched it, and their
    indexes: one search per gate over all the strings joined, not one per gate and string."""
    joined = "\n".join(strings)
    folded = joined.lower()
    if len(folded) != len(joined):  # see _plugin_spans: positions would not line up
        gated = {text: _detectors_gated(text) for text in strings}
        return gated, list(range(len(strings)))
    starts = [0, *itertools.accumulate(len(text) + 1 for text in strings)]
    hits: dict[int, set[int]] = {}
    searches = [(-1, p, joined) for p in _OWN_KEY_GATES]
    for index, detector in enumerate(DETECTORS):
        searches.extend((index, p, joined) for p in detector.anchors)
        searches.extend((index, p, folded) for p in detector.folded_anchors)
    for index, pattern, against in searches:
        m = pattern.search(against)
        while m is not None:
            at = bisect.bisect_right(starts, m.start()) - 1
            hits.setdefault(at, set()).add(index)
            m = pattern.search(against, starts[at + 1])
    gated = {
        strings[at]: tuple(DETECTORS[i] for i in sorted(indexes) if i >= 0)
        for at, indexes in hits.items()
    }
    return gated, sorted(hits)


@dataclass(frozen=True, slots=True)
class _Walk:
    gated: dict[str, tuple[_Detector, ...]]  # see _strings_gated
    hit_indexes: list[int]
    ranges: dict[int, tuple[int, int]]  # see _strings_collect
    found: list[SecretFound]


def _holds_hit(walk: _Walk, container: object) -> bool:
    first, past = walk.ranges[id(container)]
    at = bisect.bisect_left(walk.hit_indexes, first)
    return at < len(walk.hit_indexes) and walk.hit_indexes[at] < past


def _redacted(value: object, where: str, walk: _Walk) -> object:
    if isinstance(value, str):
        detectors = walk.gated.get(value)
        if detectors is None:
            return value
        return _text_redacted(value, where, _spans(value, detectors), walk.found)
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
        # The key can say the whole value is a password: {"password": "hunter2"}.
        keyed = key_detectors is not None and any(d.plugin is _KEYWORD for d in key_detectors)
        child_detectors = walk.gated.get(child) if isinstance(child, str) else None
        if key_detectors is None and child_detectors is None:
            if isinstance(child, str) or not isinstance(child, dict | list | tuple):
                out[key] = child
                continue
            if not _holds_hit(walk, child):
                out[key] = child
                continue
        key_spans = [] if key_detectors is None else _spans(key, key_detectors)
        # The path never spells a secret, not even one held in a key.
        path = _key_path(where, _text_replaced(key, key_spans))
        walk.found.extend(SecretFound(path, kind, start, end) for start, end, kind in key_spans)
        new: object
        if isinstance(child, str):
            spans = _spans(child, child_detectors or (), key=key if keyed else None)
            new = _text_redacted(child, path, spans, walk.found)
        else:
            new = _redacted(child, path, walk)
        out[key] = new
        changed = changed or new is not child
    return out if changed else value


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


def _spans(
    text: str, detectors: Sequence[_Detector], key: str | None = None
) -> list[tuple[int, int, str]]:
    """Secrets in `text`; `key` is the dict key it is the value of, when that key may name
    a secret (`password`, `api_key`), and then the whole value can be one."""
    found: list[_Found] = []
    if any(anchor in text for anchor in _OWN_KEY_ANCHORS):
        for m in _OWN_KEY.finditer(text):
            kind = OWN_KEY_KINDS[m.group()[: m.group().index("_", 3) + 1]]
            found.append((m.start(), m.end(), kind, 0))
    if detectors:
        found.extend(_plugin_spans(text, detectors))
    if key is not None:
        found.extend((s, e, _KEYWORD.secret_type, 1) for s, e in _keyed_value_spans(key, text))
    if not found:
        return []
    if any(f[2] == PrivateKeyDetector.secret_type for f in found):
        # Once per text, not per header: a text can hold many keys.
        closings = [(m.start(), m.end()) for m in _PEM_END.finditer(text)]
        found = [
            _private_key_block(text, f, closings) if f[2] == PrivateKeyDetector.secret_type else f
            for f in found
        ]
    if REDACTION_MARKER_PREFIX in text:
        found = _outside_markers(found, [(m.start(), m.end()) for m in _MARKER.finditer(text)])
    return _merged(found)


def _plugin_spans(text: str, detectors: Sequence[_Detector]) -> Iterator[_Found]:
    folded = text.lower()
    # lower() can lengthen a few characters (e.g. "İ"); then positions in `folded` are not
    # positions in `text`, and the folded gates select every piece instead.
    aligned = len(folded) == len(text)
    for detector in detectors:
        for start, end in _pieces_gated(text, folded if aligned else None, detector):
            piece = text[start:end]
            if detector.plugin is _KEYWORD:
                for s, e in _keyword_spans(piece):
                    yield start + s, start + e, _KEYWORD.secret_type, 1
                continue
            if detector.piece_requires is not None and not detector.piece_requires.search(piece):
                continue
            if detector.whole_matches:
                for s, e in _whole_matches(detector.plugin, piece):
                    yield start + s, start + e, detector.plugin.secret_type, 1
                continue
            for value in _plugin_values(detector.plugin, piece):
                for at in _occurrences(piece, value):
                    end_at = at + len(value)
                    tail = (
                        None if detector.runs_on is None else detector.runs_on.match(piece, end_at)
                    )
                    if tail is not None:
                        end_at = tail.end()
                    yield start + at, start + end_at, detector.plugin.secret_type, 1


def _keyword_spans(piece: str) -> Iterator[tuple[int, int]]:
    """`password = "hunter2"` (the plugin), and `PASSWORD=hunter2` or `password: hunter2`
    alone on a line (handed to the plugin as `PASSWORD = "hunter2"`): only the value."""
    if _QUOTE.search(piece):
        for value in _plugin_values(_KEYWORD, piece):
            for at in _occurrences(piece, value):
                if not _names_an_id(piece, at, value):
                    yield at, at + len(value)
    for m in _ASSIGNMENT_LINE.finditer(piece):
        for s, e in _keyed_value_spans(m.group(1), m.group(2)):
            yield m.start(2) + s, m.start(2) + e


def _whole_matches(plugin: BasePlugin, piece: str) -> Iterator[tuple[int, int]]:
    for pattern in getattr(plugin, "denylist", ()):
        for m in pattern.finditer(piece):
            if not is_sequential_string(m.group()):
                yield m.span()


def _plugin_values(plugin: BasePlugin, piece: str) -> set[str]:
    """The distinct secret values the plugin reports in `piece` (each is then looked for
    wherever it occurs: plugins say what the secret is, not where)."""
    values: set[str] = set()
    for raw in set(plugin.analyze_string(piece)):
        # Artifactory's patterns include the delimiter around the token.
        value = raw.lstrip(" \t\r\n\"'=:").rstrip(" \t\r\n\"'")
        if not value or is_sequential_string(value):
            continue
        if plugin is _KEYWORD and _keyword_value_dismissed(value):
            continue
        values.add(value)
    return values


def _keyword_value_dismissed(value: str) -> bool:
    """detect-secrets' own heuristics against `${PASSWORD}`, `"********"` and UUIDs, for
    the keyword plugin only: a format plugin's find is a key whatever it looks like."""
    return (
        is_templated_secret(value)
        or is_prefixed_with_dollar_sign(value)
        or is_not_alphanumeric_string(value)
        or is_potential_uuid(value)
    )


def _names_an_id(line: str, at: int, value: str) -> bool:
    """`secret_id = "a1b2"` is an id: detect-secrets' is_likely_id_string, asked about the
    one assignment the value is in rather than the whole line, where any `user_id` before
    it would hide the password that follows."""
    begin = max(line.rfind(separator, 0, at) for separator in ",;{(\n") + 1
    return is_likely_id_string(value, line[begin : at + len(value)], _KEYWORD)


def _keyed_value_spans(key: str, value: str) -> list[tuple[int, int]]:
    """`{"password": "hunter2"}`: the keyword plugin reads `password = "hunter2"`."""
    folded = key.lower()
    if not any(p.search(folded) for p in _KEYWORD_ANCHORS):
        return []
    if '"' in value or "\n" in value or len(value) > WINDOW_CHARS:
        return []  # the value's own text was scanned; this synthetic line would not parse
    if is_indirect_reference(f"{key} = {value}"):  # `PASSWORD=get_password()`
        return []
    line = f'{key} = "{value}"'
    return [
        (at, at + len(found))
        for found in _plugin_values(_KEYWORD, line)
        if not _names_an_id(line, line.rindex(found), found)
        for at in _occurrences(value, found)
    ]


def _occurrences(text: str, value: str) -> Iterator[int]:
    at = text.find(value)
    while at != -1:
        yield at
        at = text.find(value, at + len(value))


def _pieces_gated(text: str, folded: str | None, detector: _Detector) -> list[tuple[int, int]]:
    """The lines of `text` (or windows of a long line) where the detector's gate matched."""
    pieces: set[tuple[int, int]] = set()
    searches: list[tuple[re.Pattern[str], str]] = [(p, text) for p in detector.anchors]
    if folded is not None:
        searches.extend((p, folded) for p in detector.folded_anchors)
    elif detector.folded_anchors:
        pieces.update(_all_pieces(text))
    for pattern, against in searches:
        m = pattern.search(against)
        while m is not None:
            around = _pieces_around(text, m.start())
            pieces.update(around)
            # Every further hit before the last piece's end is inside a piece already taken.
            m = pattern.search(against, max(around[-1][1], m.end()))
    return sorted(pieces)


def _pieces_around(text: str, at: int) -> list[tuple[int, int]]:
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at)
    if line_end == -1:
        line_end = len(text)
    if line_end - line_start <= WINDOW_CHARS:
        return [(line_start, line_end)]
    # The windows of _windows(line_start, line_end) that hold `at`, without listing them all.
    last = -(-(line_end - line_start - WINDOW_CHARS) // _WINDOW_STEP)
    first_holding = max(0, (at - line_start - WINDOW_CHARS) // _WINDOW_STEP + 1)
    last_holding = min(last, (at - line_start) // _WINDOW_STEP)
    starts = (line_start + k * _WINDOW_STEP for k in range(first_holding, last_holding + 1))
    return [(start, min(start + WINDOW_CHARS, line_end)) for start in starts]


def _all_pieces(text: str) -> Iterator[tuple[int, int]]:
    line_start = 0
    while line_start <= len(text):
        line_end = text.find("\n", line_start)
        if line_end == -1:
            line_end = len(text)
        yield from _windows(line_start, line_end)
        line_start = line_end + 1


def _windows(start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) cut into windows of WINDOW_CHARS overlapping by WINDOW_OVERLAP."""
    if end - start <= WINDOW_CHARS:
        return [(start, end)]
    windows = []
    at = start
    while True:
        windows.append((at, min(at + WINDOW_CHARS, end)))
        if at + WINDOW_CHARS >= end:
            return windows
        at += _WINDOW_STEP


def _private_key_block(text: str, found: _Found, closings: list[tuple[int, int]]) -> _Found:
    """The whole PEM block from its `-----BEGIN` through its END line (the first of
    `closings` after it); without an END line (a truncated paste), the header line and the
    key material lines that follow it."""
    start, end, kind, rank = found
    dashes = _PEM_DASHES_BEFORE.search(text, max(0, start - 6), start)
    if dashes is not None:
        start = dashes.start()
    after = bisect.bisect_left(closings, (end, end))
    if after < len(closings):
        return start, closings[after][1], kind, rank
    line_end = text.find("\n", end)
    block_end = len(text) if line_end == -1 else line_end
    while line_end != -1:
        next_end = text.find("\n", line_end + 1)
        line = text[line_end + 1 : len(text) if next_end == -1 else next_end]
        if line.strip() and not _KEY_MATERIAL_LINE.fullmatch(line):
            break
        if line.strip():
            block_end = line_end + 1 + len(line)
        line_end = next_end
    return start, block_end, kind, rank


def _outside_markers(found: list[_Found], markers: list[tuple[int, int]]) -> list[_Found]:
    """What a plugin found, minus the markers already in the text: redacting twice finds
    nothing new."""
    out: list[_Found] = []
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


def _merged(found: list[_Found]) -> list[tuple[int, int, str]]:
    """Overlapping finds become one span, of the kind of the one that starts first (the
    longest, then our own format, when they start together)."""
    out: list[tuple[int, int, str]] = []
    for start, end, kind, _rank in sorted(found, key=lambda f: (f[0], -f[1], f[3])):
        if out and start < out[-1][1]:
            last_start, last_end, last_kind = out[-1]
            out[-1] = (last_start, max(last_end, end), last_kind)
        else:
            out.append((start, end, kind))
    return out
