"""What a real secret looks like, and what a placeholder, a reference, an identifier or a hash
does: the tests every detector of rooms/secrets/detectors.py puts a candidate value to."""

from __future__ import annotations

import re


def words_of(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SPACE = re.compile(r"\s")
_RUN_OF_ONE = re.compile(r"(.)\1{5}")  # six of one character: xxxxxx, 000000, ******
# Marked as an example, elided (`def502...`), or masked.
_DOCUMENTED = re.compile(
    r"example|sample|dummy|placeholder|redacted|your|xxxx|\*\*\*|\.\.\.|…", re.I
)
_SEQUENCES = ("abcdefghijklmnopqrstuvwxyz", "0123456789", "qwertyuiopasdfghjklzxcvbnm")
UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
# Words of an identifier: `secretKey`, `SECRET_KEY`, `XMLHttpRequest`, `sha256`.
WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
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
_PLACEHOLDER_VALUES = words_of(
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


def char_classes(value: str) -> int:
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


def identifier_shaped(value: str) -> bool:
    """A name in code: snake_case, camelCase or UPPER_CASE words, each at least 3 letters
    long on average, digits only at the end of a part (`sha256`, `oauth2_token`)."""
    if not _IDENTIFIER.fullmatch(value):
        return False
    letters = words = 0
    for part in value.strip("_").split("_"):
        if not part:
            continue
        found = WORD.findall(part)
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
        return all(identifier_shaped(part) or len(part) <= 3 for part in value.split("."))
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
    if not min_chars <= len(value) <= 1024 or _SPACE.search(value) or char_classes(value) < 2:
        return False
    if placeholder(value) or _reference(value) or identifier_shaped(value):
        return False
    return not (UUID.fullmatch(value) or _PASSWORD_HASH.match(value))


def random_shaped(value: str) -> bool:
    """The random part of a format match: two character classes, no run of one character,
    not a documented example."""
    return (
        char_classes(value) >= 2
        and not _RUN_OF_ONE.search(value)
        and not _DOCUMENTED.search(value)
        and not identifier_shaped(value)
    )
