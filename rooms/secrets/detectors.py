"""The detectors, in one ordered table (DETECTORS): our own keys, the deployment's static
keys, credential formats, and values named by their key; each beside the rules that keep it
safe on structured payloads (rooms/secrets/__init__.py says which kinds run and why)."""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from rooms.secrets.keywords import KEYWORD_GATES, KEYWORD_KIND, keyword_spans
from rooms.secrets.shapes import (
    char_classes,
    identifier_shaped,
    placeholder,
    random_shaped,
    secret_shaped,
)

REDACTION_MARKER_PREFIX = "[redacted:"

# Our own credentials (tenants/credentials.py mints them: prefix + token_urlsafe(32)).
OWN_KEY_KINDS: dict[str, str] = {
    "rs_live_": "Roomservice API key",
    "rs_inv_": "Roomservice invite key",
    "rs_share_": "Roomservice share token",
    "rs_join_": "Roomservice join token",
    "whsec_": "Roomservice webhook secret",
}
STATIC_KEY_KIND = "Roomservice static key"
# A static key shorter than this is not looked for: it would match ordinary words.
STATIC_KEY_MIN_CHARS = 8
BASIC_AUTH_KIND = "Basic Auth Credentials"
PRIVATE_KEY_KIND = "Private Key"

# (start, end, kind, rank): on a tie the lowest rank names the span: 0 our own formats,
# 1 the other formats, 2 the values found by the key that names them.
Found = tuple[int, int, str, int]


# --- Detectors ---------------------------------------------------------------------------

Finder = Callable[[str], Iterator[tuple[int, int, str]]]


@dataclass(frozen=True, slots=True)
class Detector:
    """One kind of secret: `find` runs only on a text holding one of `gates` (literals,
    looked for in the lowercased text when `folded`)."""

    kind: str
    gates: tuple[str, ...]
    find: Finder
    folded: bool = False
    rank: int = 1


def _format(
    kind: str,
    pattern: str,
    gates: tuple[str, ...],
    check: Callable[[str], bool] | None = random_shaped,
    *,
    flags: int = 0,
) -> Detector:
    """A credential format: `pattern`'s group "s" (else the whole match) is the secret
    when `check` says yes to it."""
    compiled = re.compile(pattern, flags)
    has_group = "s" in compiled.groupindex

    def find(text: str) -> Iterator[tuple[int, int, str]]:
        for m in compiled.finditer(text):
            start, end = m.span("s") if has_group else m.span()
            if check is None or check(text[start:end]):
                yield start, end, kind

    return Detector(kind, gates, find, folded=bool(flags & re.I))


def _tail_random(prefix_chars: int) -> Callable[[str], bool]:
    """The check of a format whose first `prefix_chars` are its fixed prefix."""
    return lambda value: random_shaped(value[prefix_chars:])


# Own keys: the prefix, then the token (43 characters; a longer run is taken whole).
_OWN_KEY = re.compile(r"(?:rs_(?:live|inv|share|join)_|whsec_)(?P<s>[A-Za-z0-9_-]{16,128}+)")
_SNAKE_WORDS = re.compile(r"[a-z]{1,64}(?:_[a-z]{1,64}){1,16}")


def _own_keys(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _OWN_KEY.finditer(text):
        tail = m.group("s")
        glued = m.start() > 0 and text[m.start() - 1].isalnum()
        # `users_live_dashboard_widget_count` is a name; a real key's token is random.
        if (glued and not random_shaped(tail)) or _SNAKE_WORDS.fullmatch(tail):
            continue
        kind = OWN_KEY_KINDS[m.group()[: m.start("s") - m.start()]]
        yield m.start(), m.end(), kind


# Our keys spelled with escapes (issue 31, P4): URL-encoded (`rs%5Flive%5F...`, a key in a
# query string) or JSON-escaped inside a string (`rs\\u005flive...`, a JSON document pasted
# as text). Decoded, then looked for as above; a span is mapped back to the escaped text.
_ESCAPE = re.compile(r"%(?P<pct>[0-9A-Fa-f]{2})|\\u(?P<uni>[0-9A-Fa-f]{4})")


def _own_keys_escaped(text: str) -> Iterator[tuple[int, int, str]]:
    decoded: list[str] = []
    starts: list[int] = []  # where each decoded character starts in `text`
    at = 0
    for m in _ESCAPE.finditer(text):
        decoded.extend(text[at : m.start()])
        starts.extend(range(at, m.start()))
        code = int(m.group("pct") or m.group("uni"), 16)
        if m.group("pct") and code >= 0x80:  # a UTF-8 byte, never part of one of our keys
            decoded.extend(m.group())
            starts.extend(range(m.start(), m.end()))
        else:
            decoded.append(chr(code))
            starts.append(m.start())
        at = m.end()
    if not starts:
        return
    decoded.extend(text[at:])
    starts.extend(range(at, len(text)))
    starts.append(len(text))
    for start, end, kind in _own_keys("".join(decoded)):
        if end - start != starts[end] - starts[start]:  # spelled with an escape
            yield starts[start], starts[end], kind


@lru_cache(maxsize=4)
def _static_keys(raw: str) -> tuple[str, ...]:
    """The secrets of `API_KEYS=team:secret,team2:secret2` (tenants.credentials reads it
    the same way), longest first, so that a key holding another is redacted whole."""
    found = {
        secret
        for item in raw.split(",")
        for _, sep, secret in [item.strip().partition(":")]
        if sep and len(secret) >= STATIC_KEY_MIN_CHARS
    }
    return tuple(sorted(found, key=len, reverse=True))


def static_keys() -> tuple[str, ...]:
    if not settings.configured:
        return ()
    return _static_keys(str(getattr(settings, "API_KEYS", "") or ""))


def static_key_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for secret in static_keys():
        at = text.find(secret)
        while at != -1:
            yield at, at + len(secret), STATIC_KEY_KIND
            at = text.find(secret, at + len(secret))


# Private keys: the header, then the block through its END line (or, a truncated paste,
# the key material lines after the header); a header without key material is prose.
_PEM_BEGIN = re.compile(
    r"BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?|PuTTY-User-Key-File-[0-9]{1,2}: "
)
_PEM_END = re.compile(r"END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?(?: ?-{1,5})?")
_PEM_DASHES_BEFORE = re.compile(r"-{1,5} ?\Z")
_KEY_MATERIAL_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z][A-Za-z0-9-]*: .*)\s*")
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/]{32}")


def _private_keys(text: str) -> Iterator[tuple[int, int, str]]:
    closings: list[tuple[int, int]] | None = None
    for m in _PEM_BEGIN.finditer(text):
        if closings is None:  # once per text, not per header: a text can hold many keys
            closings = [(c.start(), c.end()) for c in _PEM_END.finditer(text)]
        start, end = _private_key_block(text, m.start(), m.end(), closings)
        if _KEY_MATERIAL.search(text, m.end(), end):
            yield start, end, PRIVATE_KEY_KIND


def _private_key_block(
    text: str, start: int, end: int, closings: list[tuple[int, int]]
) -> tuple[int, int]:
    """The whole PEM block from its `-----BEGIN` through its END line (the first of
    `closings` after it); without an END line (a truncated paste), the header line and the
    key material lines that follow it."""
    dashes = _PEM_DASHES_BEFORE.search(text, max(0, start - 6), start)
    if dashes is not None:
        start = dashes.start()
    after = bisect.bisect_left(closings, (end, end))
    if after < len(closings):
        return start, closings[after][1]
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
    return start, block_end


def _jwt_header(value: str) -> bool:
    head = value.split(".", 1)[0][:512]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.lstrip().startswith(b"{") and (b'"alg"' in decoded or b'"typ"' in decoded)


# Discord bot tokens: found from their middle part (`.XXXXXX.`), the only literal they have.
_DISCORD_MIDDLE = re.compile(r"\.[A-Za-z0-9_-]{6}\.")
_DISCORD = re.compile(
    r"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}"
    r"(?![A-Za-z0-9_-])"
)


def _discord_tokens(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _DISCORD_MIDDLE.finditer(text):
        for before in (24, 25, 26):
            token = _DISCORD.match(text, m.start() - before) if m.start() >= before else None
            if token is not None and _discord_shaped(token.group()):
                yield token.start(), token.end(), "Discord Bot Token"
                break


def _discord_shaped(value: str) -> bool:
    return char_classes(value) >= 3 and not identifier_shaped(value.split(".", 1)[0])


# Passwords in URLs: scheme://user:password@host. Found from each "://", so that the
# scheme's characters are read once.
_URL_SCHEME_BEFORE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}\Z")
_URL_USERINFO = re.compile(r"(?P<user>[^\s:/?#@'\"<>]{0,128}+):(?P<s>[^\s/?#@'\"<>]{1,256}+)@")


def _url_passwords(text: str) -> Iterator[tuple[int, int, str]]:
    at = text.find("://")
    while at != -1:
        if _URL_SCHEME_BEFORE.search(text, max(0, at - 31), at):
            m = _URL_USERINFO.match(text, at + 3)
            if m is not None and _url_password(m.group("user"), m.group("s")):
                yield m.start("s"), m.end("s"), BASIC_AUTH_KIND
        at = text.find("://", at + 3)


def _url_password(user: str, password: str) -> bool:
    if password == user or len(password) < 4 or placeholder(password):
        return False
    return len(password) >= 12 or char_classes(password) >= 2


_BASIC = re.compile(r"(?<![A-Za-z0-9])basic[ \t]{1,4}(?P<s>[A-Za-z0-9+/]{8,512}+={0,2})", re.I)


def _basic_auth_headers(text: str) -> Iterator[tuple[int, int, str]]:
    """`Authorization: Basic dXNlcjpwYXNz` when it decodes to user:password, a real one."""
    for m in _BASIC.finditer(text):
        value = m.group("s")
        if len(value) % 4:
            continue
        try:
            decoded = base64.b64decode(value, validate=True).decode("ascii")
        except (binascii.Error, ValueError):
            continue
        user, sep, password = decoded.partition(":")
        if sep and decoded.isprintable() and _url_password(user, password):
            yield m.start("s"), m.end("s"), BASIC_AUTH_KIND


_BEARER_TOKEN = r"(?P<s>[A-Za-z0-9._~+/-]{16,4096}+=*)(?![$%{<])"
_BEARER = re.compile(rf"(?<![A-Za-z0-9])bearer[ \t]{{1,4}}{_BEARER_TOKEN}", re.I)
# `Authorization: Token ...` (Django REST framework's scheme, and others').
_TOKEN_SCHEME = re.compile(
    rf"authorization[\"']?[ \t]{{0,3}}[:=][ \t]{{0,3}}[\"']?token[ \t]{{1,4}}{_BEARER_TOKEN}", re.I
)


def _bearer_tokens(text: str) -> Iterator[tuple[int, int, str]]:
    return _header_tokens(_BEARER, text)


def _token_scheme_tokens(text: str) -> Iterator[tuple[int, int, str]]:
    return _header_tokens(_TOKEN_SCHEME, text)


def _header_tokens(pattern: re.Pattern[str], text: str) -> Iterator[tuple[int, int, str]]:
    for m in pattern.finditer(text):
        if secret_shaped(m.group("s"), min_chars=16):
            yield m.start("s"), m.end("s"), "Bearer Token"


# Azure's storage emulator (Azurite) key: published, the same everywhere.
_AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def _azure_key(value: str) -> bool:
    return _AZURITE_KEY not in value and random_shaped(value.partition("=")[2])


_B = r"(?<![A-Za-z0-9_-])"
_E = r"(?![A-Za-z0-9_-])"

OWN_DETECTORS: tuple[Detector, ...] = (
    Detector(
        "Roomservice key",
        ("rs_live_", "rs_inv_", "rs_share_", "rs_join_", "whsec_"),
        _own_keys,
        rank=0,
    ),
    Detector("Roomservice key", ("%", "\\u"), _own_keys_escaped, rank=0),
)

# Each format: its kind (the marker's text), its pattern, the literals every match holds.
# tests/rooms/redaction_corpus.py holds at least one sample of each.
DETECTORS: tuple[Detector, ...] = (
    *OWN_DETECTORS,
    _format(
        "AWS Access Key",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        # AWS's documented example (AKIAIOSFODNN7EXAMPLE) is caught too: tests across the
        # project use it as the one AWS key everyone recognises.
        lambda v: any(ch.isdigit() for ch in v[4:]),
    ),
    _format(
        "GitHub Token",
        r"gh[pousr]_[A-Za-z0-9]{36,251}+|github_pat_[A-Za-z0-9_]{50,251}+",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _tail_random(4),
    ),
    _format(
        "GitLab Token",
        r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,64}+"
        r"|GR1348941[A-Za-z0-9_-]{20,64}+",
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
            "GR1348941",
        ),
        lambda v: random_shaped(v.partition("-")[2] or v[9:]),
    ),
    _format(
        "Slack Token",
        r"xox[abposre]-[A-Za-z0-9-]{10,250}+|xapp-[0-9]-[A-Za-z0-9-]{20,250}+",
        ("xox", "xapp-"),
        _tail_random(5),
    ),
    _format(
        "Slack Token",
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,200}+",
        ("hooks.slack.com/",),
        lambda v: random_shaped(v.rsplit("/", 1)[-1]),
    ),
    _format("Stripe Access Key", r"[sr]k_live_[A-Za-z0-9]{20,247}+", ("k_live_",), _tail_random(8)),
    _format(
        "Anthropic API Key",
        r"sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_-]{32,256}+",
        ("sk-ant-",),
        _tail_random(14),
    ),
    _format(
        "OpenAI Token",
        r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,300}+"
        r"|sk-[A-Za-z0-9_-]{20,100}T3BlbkFJ[A-Za-z0-9_-]{20,100}+"
        rf"|{_B}sk-[A-Za-z0-9]{{48}}{_E}",
        ("sk-",),
        _tail_random(3),
    ),
    _format("Google API Key", rf"AIza[0-9A-Za-z_-]{{35}}{_E}", ("AIza",), _tail_random(4)),
    _format(
        "Google OAuth Client Secret",
        rf"GOCSPX-[A-Za-z0-9_-]{{28}}{_E}",
        ("GOCSPX-",),
        _tail_random(7),
    ),
    _format(
        "Google OAuth Access Token", r"ya29\.[0-9A-Za-z_-]{30,2048}+", ("ya29.",), _tail_random(5)
    ),
    Detector(PRIVATE_KEY_KIND, ("PRIVATE KEY", "PuTTY-User-Key-File-"), _private_keys),
    _format(
        "JSON Web Token",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,8192}+\.[A-Za-z0-9_-]{2,16384}+"
        r"\.[A-Za-z0-9_-]{8,8192}+",
        ("eyJ",),
        _jwt_header,
    ),
    _format("NPM tokens", rf"npm_[A-Za-z0-9]{{36}}{_E}", ("npm_",), _tail_random(4)),
    _format("PyPI Token", r"pypi-AgE[A-Za-z0-9_-]{50,1024}+", ("pypi-AgE",), None),
    _format("SendGrid API Key", rf"SG\.[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_E}", ("SG.",)),
    _format(
        "Twilio API Key",
        r"(?<![A-Za-z0-9])(?:AC|SK)[a-z0-9]{32}(?![A-Za-z0-9])",
        ("AC", "SK"),
        _tail_random(2),
    ),
    _format("Mailgun API Key", rf"{_B}key-[a-z0-9]{{32}}{_E}", ("key-",), _tail_random(4)),
    _format(
        "Mailchimp Access Key",
        r"(?<![A-Za-z0-9])[0-9a-z]{32}-us[0-9]{1,2}(?![A-Za-z0-9])",
        ("-us",),
        lambda v: random_shaped(v[:32]),
    ),
    _format(
        "Azure Storage Account access key",
        r"AccountKey=[A-Za-z0-9+/]{40,100}+={0,2}",
        ("AccountKey=",),
        _azure_key,
    ),
    _format(
        "Azure Shared Access Key",
        r"SharedAccessKey=[A-Za-z0-9+/]{40,100}+={0,2}",
        ("SharedAccessKey=",),
        _azure_key,
    ),
    _format(
        "Azure SAS Token",
        r"(?<![A-Za-z0-9])sig=(?P<s>[A-Za-z0-9%+/]{40,200}+={0,2})",
        ("sig=",),
    ),
    Detector(BASIC_AUTH_KIND, ("://",), _url_passwords, rank=2),
    Detector(BASIC_AUTH_KIND, ("basic",), _basic_auth_headers, folded=True, rank=2),
    Detector("Bearer Token", ("bearer",), _bearer_tokens, folded=True, rank=2),
    Detector("Bearer Token", ("authorization",), _token_scheme_tokens, folded=True, rank=2),
    Detector("Discord Bot Token", (".",), _discord_tokens),
    _format(
        "Discord Webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
        r"(?P<s>[A-Za-z0-9_-]{60,68})",
        ("/api/webhooks/",),
    ),
    _format(
        "Telegram Bot Token",
        rf"(?<![A-Za-z0-9_:-])[0-9]{{8,10}}:[A-Za-z0-9_-]{{35}}{_E}",
        (":",),
        lambda v: random_shaped(v.partition(":")[2]),
    ),
    _format(
        "Square OAuth Secret", rf"sq0csp-[A-Za-z0-9_-]{{43}}{_E}", ("sq0csp-",), _tail_random(7)
    ),
    _format(
        "Square Access Token",
        rf"sq0atp-[A-Za-z0-9_-]{{22}}{_E}|{_B}EAAA[A-Za-z0-9_+-]{{60}}{_E}",
        ("sq0atp-", "EAAA"),
        _tail_random(4),
    ),
    _format(
        "Shopify Access Token",
        rf"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_E}",
        ("shp",),
        _tail_random(6),
    ),
    _format("Hugging Face Token", rf"hf_[A-Za-z0-9]{{34,40}}{_E}", ("hf_",), _tail_random(3)),
    _format("DigitalOcean Token", rf"do[opr]_v1_[a-f0-9]{{64}}{_E}", ("_v1_",), _tail_random(7)),
    _format("Databricks Token", rf"dapi[a-f0-9]{{32}}(?:-[0-9])?{_E}", ("dapi",), _tail_random(4)),
    _format("Heroku API Key", rf"HRKU-[A-Za-z0-9_-]{{60}}{_E}", ("HRKU-",), _tail_random(5)),
    _format(
        "Artifactory Credentials", rf"AKCp[A-Za-z0-9]{{50,100}}{_E}", ("AKCp",), _tail_random(4)
    ),
    _format("Atlassian API Token", r"ATATT[A-Za-z0-9_=-]{150,300}+", ("ATATT",), _tail_random(5)),
    _format("Vault Token", r"h[vb]s\.[A-Za-z0-9_-]{24,300}+", ("hvs.", "hbs."), _tail_random(4)),
    _format(
        "Grafana Token",
        rf"glsa_[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}{_E}|glc_[A-Za-z0-9+/]{{32,400}}+={{0,2}}",
        ("glsa_", "glc_"),
        _tail_random(4),
    ),
    _format("Linear API Key", rf"lin_api_[A-Za-z0-9]{{40}}{_E}", ("lin_api_",), _tail_random(8)),
    _format(
        "Postman API Key", rf"PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}{_E}", ("PMAK-",), _tail_random(5)
    ),
    _format("New Relic Key", rf"NRAK-[A-Z0-9]{{27}}{_E}", ("NRAK-",), _tail_random(5)),
    _format("Doppler Token", rf"dp\.pt\.[A-Za-z0-9]{{40,44}}{_E}", ("dp.pt.",), _tail_random(6)),
    _format(
        "age Secret Key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", ("AGE-SECRET-KEY-1",), _tail_random(16)
    ),
    _format(
        "Sentry Token",
        r"sntry[su]_[A-Za-z0-9+/=_]{40,400}+",
        ("sntrys_", "sntryu_"),
        _tail_random(7),
    ),
    _format("Supabase Token", rf"sbp_[a-f0-9]{{40}}{_E}", ("sbp_",), _tail_random(4)),
    Detector(KEYWORD_KIND, KEYWORD_GATES, keyword_spans, folded=True, rank=2),
)
