"""Values named by their key: `password = "..."`, `{"api_key": "..."}`, `DB_PASSWORD=...`,
`Authorization: Bearer ...`. A key names a secret by its last word, and its value is
redacted only when it looks like a real secret (rooms/secrets/shapes.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from rooms.secrets.shapes import (
    UUID,
    WORD,
    secret_shaped,
    words_of,
)

KEYWORD_KIND = "Secret Keyword"

# The last word of a key that names a secret; "key" only after one of _KEY_QUALIFIERS.
_SECRET_LAST_WORDS = words_of(
    "password passwd passphrase passcode pwd pw pass secret secrets token apikey "
    "accesskey secretkey privatekey authkey signingkey masterkey clientsecret credential "
    "credentials auth authtoken accesstoken contraseña contrasena"
)
# `pgpassword`, `mysqlpwd`, `githubtoken`: a last word that ends in one of these.
_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "pwd")
_KEY_QUALIFIERS = words_of(
    "api access secret private priv auth signing encryption master client service account "
    "db database app storage webhook hmac shared consumer license subscription deploy ssh "
    "session cookie jwt"
)
# `nextPageToken`, `idempotency_key`: words before "token" that make it not a credential.
_NOT_CREDENTIAL_BEFORE_TOKEN = words_of(
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
        for w in (WORD.findall(part) if part.isascii() else [part])
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
    (re.compile(r"heroku"), UUID, "Heroku API Key"),
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


KEYWORD_GATES = ("pass", "pw", "secret", "token", "key", "auth", "cred", "contrase")
# Searched for in the lowercased text (a case-insensitive alternation is several times
# slower), or with IGNORECASE when lowercasing changed the text's length.
_KEYWORD_HIT = re.compile("|".join(KEYWORD_GATES))
_KEYWORD_HIT_ANY_CASE = re.compile("|".join(KEYWORD_GATES), re.I)
_NOT_KEY_CHAR = re.compile(r"[^A-Za-z0-9_.\-ñÑ]")
_KEY_RUN = re.compile(r"[A-Za-z0-9_.\-ñÑ]{0,64}")
# After the key: its closing quote, then `=`, `:`, `:=`, `=>` or `?=` (not `==`).
_ASSIGN = re.compile(r"""\\?["'`]?[ \t]{0,8}(?::=|=>|\?=|[:=](?!=))[ \t]{0,8}""")
_CLI_SPACE = re.compile(r"[ \t]{1,4}")
_QUOTED = re.compile(r"""\\?(?P<q>["'`])(?P<v>[^"'`\\\r\n]{1,1024}+)\\?(?P=q)""")
_XML_VALUE = re.compile(r"(?P<v>[^<>\s]{1,1024}+)</")
_UNQUOTED = re.compile(r"""(?P<v>[^\s"'`,;&(){}\[\]<>|]{1,1024}+)(?P<after>[(\[]?)""")


def keyword_spans(text: str) -> Iterator[tuple[int, int, str]]:
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
