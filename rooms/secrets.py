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
  `users_live_dashboard_widgets` is not a key), and the deployment's static keys (the
  secrets of settings.API_KEYS, matched exactly);
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

One module on purpose: the detectors are one ordered table (DETECTORS) and the rules that
keep each safe on structured payloads are read beside it; split, a reviewer could no
longer see in one place everything that may change what an agent wrote.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

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
KEYWORD_KIND = "Secret Keyword"
BASIC_AUTH_KIND = "Basic Auth Credentials"
PRIVATE_KEY_KIND = "Private Key"

# (start, end, kind, rank): on a tie the lowest rank names the span: 0 our own formats,
# 1 the other formats, 2 the values found by the key that names them.
_Found = tuple[int, int, str, int]


# --- What a real secret looks like, and what a placeholder does ------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SPACE = re.compile(r"\s")
_RUN_OF_ONE = re.compile(r"(.)\1{5}")  # six of one character: xxxxxx, 000000, ******
# Marked as an example, elided (`def502...`), or masked.
_DOCUMENTED = re.compile(
    r"example|sample|dummy|placeholder|redacted|your|xxxx|\*\*\*|\.\.\.|…", re.I
)
_SEQUENCES = ("abcdefghijklmnopqrstuvwxyz", "0123456789", "qwertyuiopasdfghjklzxcvbnm")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
# Words of an identifier: `secretKey`, `SECRET_KEY`, `XMLHttpRequest`, `sha256`.
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_IDENTIFIER = re.compile(r"_*[A-Za-z][A-Za-z0-9]{0,127}(?:_+[A-Za-z0-9]{1,127}){0,32}_*")
_DOTTED = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]{0,127}(?:\.[A-Za-z_$][A-Za-z0-9_$]{0,127}){1,16}")
_CALL_OR_INDEX = re.compile(r"[A-Za-z_$][A-Za-z0-9_.$]{0,127}[(\[]")
# `vault:secret/db#pw`, `arn:aws:secretsmanager:...`, `op://vault/item`, `env:DB_PASSWORD`.
_SCHEME_REFERENCE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,20}:")
_PASSWORD_HASH = re.compile(
    r"(?:pbkdf2_sha256|pbkdf2_sha1|argon2(?:id|i|d)?|bcrypt(?:_sha256)?|scrypt|sha1|md5|"
    r"sha256|sha512|crypt)\$",
    re.I,
)
# Exact values (lowercased) that are names, types or the stock examples of a password.
_PLACEHOLDER_VALUES = _words(
    "string str text null none nil undefined true false empty password passwd pass "
    "secret token apikey api_key key changeme changeit admin root guest postgres user "
    "username default required optional hidden masked test testing demo password1 "
    "password123 passw0rd p@ssw0rd p@ssword letmein qwerty qwerty123 123456 12345678 "
    "123456789 1234567890 admin123 secret123 test123 test1234 abc123 abcd1234 pass123 "
    "pa55word s3cr3t sekret foobar foo bar baz mysecret mypassword supersecret topsecret "
    "notasecret not-a-secret insecure"
)
# A value of lowercase letters alone holding one of these words is an example.
_PLACEHOLDER_WORDS = re.compile(r"pass|secret|change|token|key|admin|test|demo|default")
_PLACEHOLDER_START = tuple("$%@!&*{[(<~:#")
_PLACEHOLDER_END = tuple("})]>")
_PATH_START = ("/", "./", "../", "~/")


_DIGIT = re.compile(r"\d")
_SYMBOL = re.compile(r"[^\w.-]")
_NOT_ALNUM = re.compile(r"[\W_]+")


def _classes(value: str) -> int:
    """How many of lowercase, uppercase, digits and symbols (other than - _ .) it holds."""
    lower = value.upper() != value  # (string methods: this runs for every candidate value)
    upper = value.lower() != value
    digit = _DIGIT.search(value) is not None
    symbol = _SYMBOL.search(value) is not None
    return lower + upper + digit + symbol


def _sequential(value: str) -> bool:
    if len(value) > 64:
        return False
    folded = _NOT_ALNUM.sub("", value.lower())
    return 4 <= len(folded) <= 26 and any(folded in seq for seq in _SEQUENCES)


def _identifier(value: str) -> bool:
    """A name in code: snake_case, camelCase or UPPER_CASE words, each at least 3 letters
    long on average, digits only at the end of a part (`sha256`, `oauth2_token`)."""
    if not _IDENTIFIER.fullmatch(value):
        return False
    letters = words = 0
    for part in value.strip("_").split("_"):
        if not part:
            continue
        found = _WORD.findall(part)
        if any(w.isdigit() for w in found[:-1]):  # `hunter2xyz`: a digit inside a word
            return False
        for w in found:
            if not w.isdigit():
                letters += len(w)
                words += 1
    return words > 0 and letters >= 3 * words


def _reference(value: str) -> bool:
    """`settings.SECRET_KEY`, `process.env.API_KEY`, `os.environ["X"]`, `get_password()`,
    `vault:secret/db`, `/run/secrets/db_password`."""
    if value.startswith(_PATH_START) or _CALL_OR_INDEX.match(value):
        return True
    if _SCHEME_REFERENCE.match(value):
        return True
    if _DOTTED.fullmatch(value):
        return all(_identifier(part) or len(part) <= 3 for part in value.split("."))
    return False


def placeholder(value: str) -> bool:
    """What stands for a secret without being one: a type, a template, a stock example."""
    folded = value.lower()
    if folded in _PLACEHOLDER_VALUES or _DOCUMENTED.search(value):
        return True
    if value.startswith(_PLACEHOLDER_START) or value.endswith(_PLACEHOLDER_END):
        return True
    if not any(ch.isalnum() for ch in value) or _RUN_OF_ONE.search(value):
        return True
    if value.isalpha() and value.islower() and _PLACEHOLDER_WORDS.search(value):
        return True  # mysecretpassword, supersecrettoken
    return _sequential(value)


def secret_shaped(value: str, min_chars: int = 8) -> bool:
    """A value next to a key that names a secret: is it one? (The module docstring.)"""
    if not min_chars <= len(value) <= 1024 or _SPACE.search(value) or _classes(value) < 2:
        return False
    if placeholder(value) or _reference(value) or _identifier(value):
        return False
    return not (_UUID.fullmatch(value) or _PASSWORD_HASH.match(value))


def _random_shaped(value: str) -> bool:
    """The random part of a format match: two character classes, no run of one character,
    not a documented example."""
    return (
        _classes(value) >= 2
        and not _RUN_OF_ONE.search(value)
        and not _DOCUMENTED.search(value)
        and not _identifier(value)
    )


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
    check: Callable[[str], bool] | None = _random_shaped,
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
    return lambda value: _random_shaped(value[prefix_chars:])


# Own keys: the prefix, then the token (43 characters; a longer run is taken whole).
_OWN_KEY = re.compile(r"(?:rs_(?:live|inv|share|join)_|whsec_)(?P<s>[A-Za-z0-9_-]{16,128}+)")
_SNAKE_WORDS = re.compile(r"[a-z]{1,64}(?:_[a-z]{1,64}){1,16}")


def _own_keys(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _OWN_KEY.finditer(text):
        tail = m.group("s")
        glued = m.start() > 0 and text[m.start() - 1].isalnum()
        # `users_live_dashboard_widget_count` is a name; a real key's token is random.
        if (glued and not _random_shaped(tail)) or _SNAKE_WORDS.fullmatch(tail):
            continue
        kind = OWN_KEY_KINDS[m.group()[: m.start("s") - m.start()]]
        yield m.start(), m.end(), kind


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


def _static_key_spans(text: str) -> Iterator[tuple[int, int, str]]:
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
    return _classes(value) >= 3 and not _identifier(value.split(".", 1)[0])


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
    return len(password) >= 12 or _classes(password) >= 2


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
    return _AZURITE_KEY not in value and _random_shaped(value.partition("=")[2])


# --- Values named by their key: password = "...", {"api_key": "..."} ----------------------

# The last word of a key that names a secret; "key" only after one of _KEY_QUALIFIERS.
_SECRET_LAST_WORDS = _words(
    "password passwd passphrase passcode pwd pw pass secret secrets token apikey "
    "accesskey secretkey privatekey authkey signingkey masterkey clientsecret credential "
    "credentials auth authtoken accesstoken contraseña contrasena"
)
# `pgpassword`, `mysqlpwd`, `githubtoken`: a last word that ends in one of these.
_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "pwd")
_KEY_QUALIFIERS = _words(
    "api access secret private priv auth signing encryption master client service account "
    "db database app storage webhook hmac shared consumer license subscription deploy ssh "
    "session cookie jwt"
)
# `nextPageToken`, `idempotency_key`: words before "token" that make it not a credential.
_NOT_CREDENTIAL_BEFORE_TOKEN = _words(
    "page next prev previous continuation cursor sync resume pagination max min num total "
    "count start end request idempotency"
)
_PASS_QUALIFIERS = _KEY_QUALIFIERS | {"key", "user", "admin", "root", "mysql", "pg", "redis"}
_KEY_SPLIT = re.compile(r"[^0-9A-Za-zñÑ]+")
_MAX_KEY_CHARS = 128


@lru_cache(maxsize=1024)
def key_names_a_secret(key: str) -> bool:
    """`DB_PASSWORD`, `apiKey`, `client-secret`, `--password`; not `password_hash`,
    `secret_id`, `token_type`, `nextPageToken`, `keyboard`, `public_key`."""
    if len(key) > _MAX_KEY_CHARS:
        return False
    words = [
        w.lower()
        for part in _KEY_SPLIT.split(key)
        for w in (_WORD.findall(part) if part.isascii() else [part])
    ]
    while words and (not words[-1] or words[-1].isdigit()):
        words.pop()
    if not words:
        return False
    last, before = words[-1], (words[-2] if len(words) > 1 else "")
    if last in ("key", "keys"):
        return before in _KEY_QUALIFIERS
    if last == "token" and before in _NOT_CREDENTIAL_BEFORE_TOKEN:
        return False
    if last.endswith("key") and last[:-3] in _KEY_QUALIFIERS:  # SERVICEKEY
        return True
    if last.endswith("pass") and last[:-4] in _PASS_QUALIFIERS:  # DBPASS, KEYPASS
        return True
    return last in _SECRET_LAST_WORDS or last.endswith(_SECRET_ENDINGS)


# Named kinds for a few keys (a provider's credential with no format of its own); a value
# pattern, when given, is the format itself (then the generic shape test does not apply).
_KEYED_KINDS: tuple[tuple[re.Pattern[str], re.Pattern[str] | None, str], ...] = (
    (re.compile(r"aws"), re.compile(r"[A-Za-z0-9/+]{40}"), "AWS Access Key"),
    (re.compile(r"secret_?access_?key"), re.compile(r"[0-9a-f]{48}"), "IBM COS HMAC Credentials"),
    (re.compile(r"heroku"), _UUID, "Heroku API Key"),
    (re.compile(r"_authtoken"), None, "NPM tokens"),
    (re.compile(r"cloudant"), None, "Cloudant Credentials"),
    (re.compile(r"softlayer|^sl_"), None, "SoftLayer Credentials"),
    (re.compile(r"ibm|iam_?api"), None, "IBM Cloud IAM Key"),
    (re.compile(r"twilio"), None, "Twilio API Key"),
)
_KEYED_GATE = re.compile("|".join(p.pattern for p, _, _ in _KEYED_KINDS))


def keyed_value_kind(key: str, value: str) -> str | None:
    """The kind of secret `value` is when `key` names one; None when it is not a secret."""
    folded = key.lower()
    for key_pattern, value_pattern, kind in _KEYED_KINDS if _KEYED_GATE.search(folded) else ():
        if not key_pattern.search(folded):
            continue
        if value_pattern is not None:
            if value_pattern.fullmatch(value):
                return kind
            continue
        return kind if secret_shaped(value) else None
    return KEYWORD_KIND if secret_shaped(value) else None


_KEYWORD_GATES = ("pass", "pw", "secret", "token", "key", "auth", "cred", "contrase")
# Searched for in the lowercased text (a case-insensitive alternation is several times
# slower), or with IGNORECASE when lowercasing changed the text's length.
_KEYWORD_HIT = re.compile("|".join(_KEYWORD_GATES))
_KEYWORD_HIT_ANY_CASE = re.compile("|".join(_KEYWORD_GATES), re.I)
_NOT_KEY_CHAR = re.compile(r"[^A-Za-z0-9_.\-ñÑ]")
_KEY_RUN = re.compile(r"[A-Za-z0-9_.\-ñÑ]{0,64}")
# After the key: its closing quote, then `=`, `:`, `:=`, `=>` or `?=` (not `==`).
_ASSIGN = re.compile(r"""\\?["'`]?[ \t]{0,8}(?::=|=>|\?=|[:=](?!=))[ \t]{0,8}""")
_CLI_SPACE = re.compile(r"[ \t]{1,4}")
_QUOTED = re.compile(r"""\\?(?P<q>["'`])(?P<v>[^"'`\\\r\n]{1,1024}+)\\?(?P=q)""")
_XML_VALUE = re.compile(r"(?P<v>[^<>\s]{1,1024}+)</")
_UNQUOTED = re.compile(r"""(?P<v>[^\s"'`,;&(){}\[\]<>|]{1,1024}+)(?P<after>[(\[]?)""")


def _keyword_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """Values of assignments whose key names a secret, when they look like one: the value
    alone is reported (`password = "[redacted:Secret Keyword]"`)."""
    folded = text.lower()
    hits, against = (
        (_KEYWORD_HIT, folded) if len(folded) == len(text) else (_KEYWORD_HIT_ANY_CASE, text)
    )
    m = hits.search(against)
    while m is not None:
        window = text[max(0, m.start() - 64) : m.start()][::-1]
        stop = _NOT_KEY_CHAR.search(window)
        key_start = m.start() - (stop.start() if stop else len(window))
        run = _KEY_RUN.match(text, m.start())
        key_end = run.end() if run else m.end()
        resume = max(key_end, m.end())
        assigned = _assigned_value(text, key_start, key_end)
        if assigned is not None:
            start, end, kind = assigned
            if kind is not None:
                yield start, end, kind
            resume = max(resume, end)  # a value holds no assignment of its own
        m = hits.search(against, resume)


def _assigned_value(text: str, key_start: int, key_end: int) -> tuple[int, int, str | None] | None:
    """Where the value assigned to the key at [key_start, key_end) is, and the kind of
    secret it is (None: not one); None when the key names no secret or has no value."""
    key = text[key_start:key_end].strip(".-")
    if not key_names_a_secret(key):
        return None
    # Inside a longer token (`arn:aws:...:secret:prod/db`, `a/secret=b`, or glued to a
    # marker, where a redaction cut a token), but for npmrc's `//registry/:_authToken=`.
    before = text[key_start - 1 : key_start]
    if before and before in ":/=]" and not (before == ":" and key.startswith("_")):
        return None
    if text.startswith(">", key_end) and key_start > 0 and text[key_start - 1] == "<":
        element = _XML_VALUE.match(text, key_end + 1)  # `<password>hunter2xyz</password>`
        if element is None:
            return None
        return (*element.span("v"), keyed_value_kind(key, element.group("v")))
    sep = _ASSIGN.match(text, key_end)
    if sep is None:
        if not text.startswith("--", key_start):
            return None
        sep = _CLI_SPACE.match(text, key_end)  # `--password hunter2xyz`
        if sep is None:
            return None
    quoted = _QUOTED.match(text, sep.end())
    if quoted is not None:
        start, end = quoted.span("v")
    else:
        bare = _UNQUOTED.match(text, sep.end())
        if bare is None or bare.group("after"):  # `get_password()`, `os.environ[...]`
            return None
        start, end = bare.span("v")
        while end > start and text[end - 1] in ".!?:":  # `process.env.API_KEY!,`
            end -= 1
    return start, end, keyed_value_kind(key, text[start:end])


# Boundaries: a token is not taken from the middle of a longer run of its characters.
_B = r"(?<![A-Za-z0-9_-])"
_E = r"(?![A-Za-z0-9_-])"

OWN_DETECTORS: tuple[Detector, ...] = (
    Detector(
        "Roomservice key",
        ("rs_live_", "rs_inv_", "rs_share_", "rs_join_", "whsec_"),
        _own_keys,
        rank=0,
    ),
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
        lambda v: _random_shaped(v.partition("-")[2] or v[9:]),
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
        lambda v: _random_shaped(v.rsplit("/", 1)[-1]),
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
        lambda v: _random_shaped(v[:32]),
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
        lambda v: _random_shaped(v.partition(":")[2]),
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
    Detector(KEYWORD_KIND, _KEYWORD_GATES, _keyword_spans, folded=True, rank=2),
)


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
    found: list[_Found] = [
        (start, end, kind, d.rank) for d in detectors for start, end, kind in d.find(text)
    ]
    if static:
        found.extend((start, end, kind, 0) for start, end, kind in _static_key_spans(text))
    if not found:
        return []
    if REDACTION_MARKER_PREFIX in text:
        found = _outside_markers(found, [(m.start(), m.end()) for m in _MARKER.finditer(text)])
    return _merged(found)


def _outside_markers(found: list[_Found], markers: list[tuple[int, int]]) -> list[_Found]:
    """What a detector found, minus the markers already in the text: redacting twice finds
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
    longest, then the lowest rank, when they start together)."""
    out: list[tuple[int, int, str]] = []
    for start, end, kind, _rank in sorted(found, key=lambda f: (f[0], -f[1], f[3])):
        if out and start < out[-1][1]:
            last_start, last_end, last_kind = out[-1]
            out[-1] = (last_start, max(last_end, end), last_kind)
        else:
            out.append((start, end, kind))
    return out
