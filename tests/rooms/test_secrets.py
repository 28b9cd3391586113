"""rooms.secrets: what is caught, what is left alone, where it is reported.

Sample credentials are assembled from pieces at run time, so that this file does not itself
hold strings that secret scanners (ours, or a forge's push protection) would flag.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
import uuid
from typing import Any

import pytest
from django.test import override_settings

from rooms.secrets import (
    DETECTORS,
    OWN_KEY_KINDS,
    REDACTION_MARKER_PREFIX,
    SecretFound,
    secret_kinds_summary,
    secrets_in_text,
    secrets_redacted,
)
from tenants import credentials


@pytest.fixture(autouse=True)
def _database() -> None:
    """Replaces tests/rooms/conftest.py's: nothing here touches the database or Redis."""


def token(alphabet: str, length: int, seed: str) -> str:
    """A deterministic string of `length` characters of `alphabet`."""
    digest = hashlib.sha512(seed.encode()).digest() * (length // 64 + 1)
    return "".join(alphabet[b % len(alphabet)] for b in digest[:length])


UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
LOWER_DIGITS = "abcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"

AWS_KEY_ID = "AK" + "IA" + token(UPPER_DIGITS, 16, "aws")
GITHUB_TOKEN = "gh" + "p_" + token(ALNUM, 36, "github")
SLACK_TOKEN = "xo" + "xb-" + "1234567890-" + "9876543210987-" + token(LOWER_DIGITS, 24, "slack")
STRIPE_KEY = "sk" + "_live_" + token(ALNUM, 24, "stripe")
JWT = ".".join(
    base64.urlsafe_b64encode(part).decode().rstrip("=")
    for part in (b'{"alg":"HS256","typ":"JWT"}', b'{"sub":"agent-7"}', b"signature-bytes")
)
PEM_BODY = "\n".join(token(ALNUM + "+/", 64, f"pem{i}") for i in range(4))
PRIVATE_KEY = "PRIVATE" + " KEY"
PEM = f"-----BEGIN RSA {PRIVATE_KEY}-----\n{PEM_BODY}\n-----END RSA {PRIVATE_KEY}-----"


def one_span(text: str, secret: str) -> tuple[int, int]:
    start = text.index(secret)
    return start, start + len(secret)


def marker(kind: str) -> str:
    return f"{REDACTION_MARKER_PREFIX}{kind}]"


# --- our own key formats ------------------------------------------------------------------


@pytest.mark.parametrize("prefix", sorted(OWN_KEY_KINDS))
def test_each_roomservice_key_format_is_caught(prefix: str) -> None:
    key = credentials.secret_new(prefix).secret
    text = f"the key is {key}, keep it safe"

    assert secrets_in_text(text) == [(*one_span(text, key), OWN_KEY_KINDS[prefix])]
    redacted, found = secrets_redacted(text)
    assert redacted == f"the key is {marker(OWN_KEY_KINDS[prefix])}, keep it safe"
    assert found == [SecretFound("", OWN_KEY_KINDS[prefix], 11, 11 + len(key))]


def test_roomservice_key_formats_are_the_ones_tenants_mints() -> None:
    minted = {
        credentials.KEY_PREFIX,
        credentials.INVITE_PREFIX,
        credentials.SHARE_PREFIX,
        credentials.JOIN_PREFIX,
        credentials.WEBHOOK_PREFIX,
    }
    assert set(OWN_KEY_KINDS) == minted
    assert OWN_KEY_KINDS[credentials.KEY_PREFIX] == "Roomservice API key"


def test_roomservice_key_of_sixteen_characters_is_caught_but_not_of_fifteen() -> None:
    assert secrets_in_text("rs_live_" + "a" * 16) == [(0, 24, "Roomservice API key")]
    assert secrets_in_text("rs_live_" + "a" * 15) == []


def test_roomservice_key_in_a_bearer_header_or_an_assignment_is_caught() -> None:
    key = "rs_inv_" + secrets.token_urlsafe(32)
    for text in (f"Authorization: Bearer {key}", f"ROOM_KEY={key}", f'{{"k":"{key}"}}'):
        assert secrets_in_text(text) == [(*one_span(text, key), "Roomservice invite key")]


@pytest.mark.parametrize(
    "text",
    [
        "rs_live_",
        "a key looks like rs_live_ then 43 characters",
        "whsec_ prefix",
        "users_live_dashboard_widget_count",
        "counters_share_of_voice_per_region",
    ],
)
def test_a_key_prefix_alone_or_inside_a_word_is_not_a_key(text: str) -> None:
    assert secrets_in_text(text) == []


def test_our_kind_wins_when_a_plugin_finds_the_same_key() -> None:
    key = "rs_live_" + secrets.token_urlsafe(32)
    text = f'api_key = "{key}"'

    assert secrets_in_text(text) == [(*one_span(text, key), "Roomservice API key")]


# --- detect-secrets' formats --------------------------------------------------------------


KNOWN_FORMATS = [
    # (before, secret, after, kind)
    ("aws_access_key_id = ", AWS_KEY_ID, "\n", "AWS Access Key"),
    (
        'aws_secret_access_key = "',
        token(ALNUM + "/+", 40, "aws-secret"),
        '"',
        "AWS Access Key",
    ),
    ("export GITHUB_TOKEN=", GITHUB_TOKEN, " # ci", "GitHub Token"),
    ("glab: ", "glp" + "at-" + token(URLSAFE, 20, "gitlab"), " end", "GitLab Token"),
    ("slack bot ", SLACK_TOKEN, " for #ops", "Slack Token"),
    (
        "hook ",
        "https://hooks.slack.com/services/T"
        + token(UPPER_DIGITS, 8, "t")
        + "/B"
        + token(UPPER_DIGITS, 8, "b")
        + "/"
        + token(ALNUM, 24, "w"),
        " posts",
        "Slack Token",
    ),
    ("charge with ", STRIPE_KEY, ".", "Stripe Access Key"),
    ("Authorization: Bearer ", "ey" + JWT[2:], " (expires)", "JSON Web Token"),
    ('password = "', "hunter2xyz", '"', "Secret Keyword"),
    ('"db_password": "', "c0rrect-h0rse", '",', "Secret Keyword"),
    ("DATABASE_PASSWORD=", "s3cr3tV4lue", "", "Secret Keyword"),
    ("  client_secret: ", "Zx9-unquoted-value", "", "Secret Keyword"),
    ("clone https://deploy:", "pa55w0rdXy", "@git.example.com/repo.git", "Basic Auth Credentials"),
    ("//registry.npmjs.org/:_authToken=", "np" + "m_" + token(ALNUM, 36, "npm"), "", "NPM tokens"),
    (
        "key ",
        "sk-" + token(ALNUM, 20, "oa1") + "T3Blbk" + "FJ" + token(ALNUM, 20, "oa2"),
        " for the evals",
        "OpenAI Token",
    ),
    (
        "SENDGRID=",
        "S" + "G." + token(URLSAFE, 22, "sg1") + "." + token(URLSAFE, 43, "sg2"),
        "",
        "SendGrid API Key",
    ),
    ("square ", "sq0" + "csp-" + token(URLSAFE, 43, "sq"), " here", "Square OAuth Secret"),
    ("twilio sid ", "A" + "C" + token(LOWER_DIGITS, 32, "tw"), " used", "Twilio API Key"),
    ("bot ", "123456789:" + token(URLSAFE, 35, "tg"), " talks", "Telegram Bot Token"),
    ("mc ", token(LOWER_DIGITS, 32, "mc") + "-us12", " list", "Mailchimp Access Key"),
    (
        "DefaultEndpointsProtocol=https;",
        "AccountKey=" + token(ALNUM + "+/", 86, "az") + "==",
        ";EndpointSuffix=core.windows.net",
        "Azure Storage Account access key",
    ),
    ("pypi ", "pypi-" + "AgEIcHlwaS5vcmc" + token(URLSAFE, 80, "pypi"), " upload", "PyPI Token"),
    (
        "discord ",
        "M"
        + token(URLSAFE, 23, "d1")
        + "."
        + token(URLSAFE, 6, "d2")
        + "."
        + token(URLSAFE, 27, "d3"),
        " bot",
        "Discord Bot Token",
    ),
    ("artifactory ", "AK" + "Cp" + token(ALNUM, 60, "af"), " pull", "Artifactory Credentials"),
    ('cloudant_password = "', token(HEX, 64, "cl"), '"', "Cloudant Credentials"),
    ('softlayer_api_key = "', token(LOWER_DIGITS, 64, "sl"), '"', "SoftLayer Credentials"),
    ('ibm_cloud_iam_api_key = "', token(URLSAFE, 44, "iam"), '"', "IBM Cloud IAM Key"),
    ('secret_access_key = "', token(HEX, 48, "cos"), '"', "IBM COS HMAC Credentials"),
]


@pytest.mark.parametrize(
    ("before", "secret", "after", "kind"),
    KNOWN_FORMATS,
    ids=[f"{kind}-{i}" for i, (_, _, _, kind) in enumerate(KNOWN_FORMATS)],
)
def test_known_credential_format_is_redacted_and_the_text_around_it_kept(
    before: str, secret: str, after: str, kind: str
) -> None:
    text = f"first line\n{before}{secret}{after}\nlast line"

    assert secrets_in_text(text) == [(*one_span(text, secret), kind)]
    redacted, found = secrets_redacted(text, "notes")
    assert redacted == f"first line\n{before}{marker(kind)}{after}\nlast line"
    assert found == [SecretFound("notes", kind, *one_span(text, secret))]


def test_every_detector_has_a_sample_in_the_corpus() -> None:
    from tests.rooms import redaction_corpus

    samples = [c.text for c in redaction_corpus.CREDENTIALS]
    with override_settings(API_KEYS=redaction_corpus.STATIC_API_KEYS):
        kinds = {kind for text in samples for _, _, kind in secrets_in_text(text)}

    assert {d.kind for d in DETECTORS if d.rank > 0} <= kinds


# The words of detect-secrets' keyword plugin, which the keyword detector replaced.
KEYWORDS = [
    "api_?key",
    "auth_?key",
    "service_?key",
    "account_?key",
    "db_?key",
    "database_?key",
    "priv_?key",
    "private_?key",
    "client_?key",
    "db_?pass",
    "database_?pass",
    "key_?pass",
    "password",
    "passwd",
    "pwd",
    "secret",
    "contraseña",
    "contrasena",
]


@pytest.mark.parametrize("word", KEYWORDS)
def test_every_word_of_the_keyword_plugin_passes_its_gate(word: str) -> None:
    for spelled in {word.replace("_?", "_"), word.replace("_?", "")}:
        text = f'{spelled.upper()} = "Vx7-not-a-real-value"'
        assert secrets_in_text(text) == [
            (*one_span(text, "Vx7-not-a-real-value"), "Secret Keyword")
        ], spelled


def test_password_assignment_keeps_the_name_and_redacts_only_the_value() -> None:
    redacted, _ = secrets_redacted('db.connect(password = "hunter2xyz", host="db")')

    assert redacted == 'db.connect(password = "[redacted:Secret Keyword]", host="db")'


@pytest.mark.parametrize(
    "text",
    [
        'conn = connect(db); password = "hunter2xyz"',
        '{"user_id": 7, "password": "hunter2xyz"}',
    ],
)
def test_password_after_a_call_or_an_id_on_the_same_line_is_still_caught(text: str) -> None:
    assert secrets_in_text(text) == [(*one_span(text, "hunter2xyz"), "Secret Keyword")]


@pytest.mark.parametrize(
    "text",
    [
        'secret_id = "a1b2c3d4"',
        "password = get_password()",
        'password = "${DB_PASSWORD}"',
        'password = "********"',
        "Password: reset it from the dashboard",
        "the secret to fast builds is caching",
    ],
)
def test_password_word_without_a_literal_value_is_left_alone(text: str) -> None:
    assert secrets_in_text(text) == []


def test_pem_private_key_block_is_redacted_from_begin_through_end() -> None:
    text = f"deploy key:\n{PEM}\nrotate it monthly"

    redacted, found = secrets_redacted(text, "notes")

    assert redacted == "deploy key:\n[redacted:Private Key]\nrotate it monthly"
    assert found == [SecretFound("notes", "Private Key", *one_span(text, PEM))]


def test_pem_block_without_its_end_line_is_redacted_through_its_key_lines() -> None:
    header = f"-----BEGIN OPENSSH {PRIVATE_KEY}-----"
    text = f"pasted:\n{header}\n{PEM_BODY}\nthat is all I have"

    redacted, _ = secrets_redacted(text)

    assert redacted == "pasted:\n[redacted:Private Key]\nthat is all I have"


def test_pem_block_in_a_one_line_escaped_string_is_redacted_whole() -> None:
    pem = PEM.replace("\n", "\\n")
    text = f'PRIVATE_KEY="{pem}"'

    redacted, _ = secrets_redacted(text)

    assert redacted == 'PRIVATE_KEY="[redacted:Private Key]"'


def test_several_secrets_in_one_text_are_each_redacted_in_order() -> None:
    key = "whsec_" + secrets.token_urlsafe(32)
    text = f"aws {AWS_KEY_ID} then {key} then {STRIPE_KEY}"

    assert [kind for _, _, kind in secrets_in_text(text)] == [
        "AWS Access Key",
        "Roomservice webhook secret",
        "Stripe Access Key",
    ]
    assert secrets_redacted(text)[0] == (
        "aws [redacted:AWS Access Key] then [redacted:Roomservice webhook secret] "
        "then [redacted:Stripe Access Key]"
    )


def test_the_same_secret_twice_on_a_line_is_redacted_both_times() -> None:
    text = f"{AWS_KEY_ID} and again {AWS_KEY_ID}"

    assert secrets_redacted(text)[0] == (
        "[redacted:AWS Access Key] and again [redacted:AWS Access Key]"
    )


# --- what must not be taken for a secret --------------------------------------------------


NOT_SECRETS = [
    "fixed in 3f786850e387550fdab836ed7e6dc881de23001b, see the PR",
    f"task {uuid.UUID(int=0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321)} is blocked",
    f"sha256: {hashlib.sha256(b'release.tar.gz').hexdigest()}",
    "blob " + base64.b64encode(hashlib.sha512(b"random bytes").digest() * 4).decode(),
    "We agreed to migrate the billing service on Monday; Alice owns the schema change, and "
    "the key risk is the retry storm we saw last week. Passwords are out of scope.",
    "docs at https://example.com/guide/setup?step=2#keys and http://localhost:8000/",
    "rs_live_",
    "SELECT * FROM users WHERE id = 42; BEGIN TRANSACTION; COMMIT;",
    "API calls go through APIGateway; see AccountKeyRotation.md",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_content_is_not_taken_for_a_secret(text: str) -> None:
    assert secrets_in_text(text) == []
    redacted, found = secrets_redacted(text)
    assert redacted is text and found == []


def test_clean_payload_comes_back_as_the_same_object() -> None:
    payload = {"items": [{"sha": NOT_SECRETS[0], "n": 3, "ok": True, "x": None}], "t": 1.5}

    redacted, found = secrets_redacted(payload, "payload")

    assert redacted is payload and found == []


# --- JSON values --------------------------------------------------------------------------


def test_nested_json_paths_are_reported_and_only_the_secrets_replaced() -> None:
    key = "rs_live_" + secrets.token_urlsafe(32)
    payload: dict[str, Any] = {
        "db": [{"host": "db.internal", "port": 5432}, {"user": "app", "password": "hunter2xyz"}],
        "aws": {"key": f"id {AWS_KEY_ID}"},
        "x.y": [None, 1, f"token {key}"],
        "plain": {"deep": ["nothing here"]},
    }

    redacted, found = secrets_redacted(payload, "payload")

    assert redacted == {
        "db": [
            {"host": "db.internal", "port": 5432},
            {"user": "app", "password": "[redacted:Secret Keyword]"},
        ],
        "aws": {"key": "id [redacted:AWS Access Key]"},
        "x.y": [None, 1, "token [redacted:Roomservice API key]"],
        "plain": {"deep": ["nothing here"]},
    }
    assert found == [
        SecretFound("payload.db[1].password", "Secret Keyword", 0, 10),
        SecretFound("payload.aws.key", "AWS Access Key", 3, 23),
        SecretFound('payload["x.y"][2]', "Roomservice API key", 6, 6 + len(key)),
    ]
    assert isinstance(redacted, dict)
    assert redacted["plain"] is payload["plain"]  # untouched parts are not copied
    assert payload["db"][1]["password"] == "hunter2xyz"  # the input is not modified


@pytest.mark.parametrize(
    ("payload", "where"),
    [
        ({"password": "hunter2xyz"}, "password"),
        ({"DB_PASSWORD": "hunter2xyz"}, "DB_PASSWORD"),
        ({"aws": {"api_key": "Vx7notarealvalue"}}, "aws.api_key"),
        ({"client-secret": "Vx7notarealvalue"}, "client-secret"),
    ],
)
def test_a_value_under_a_secret_sounding_key_is_redacted_whole(
    payload: dict[str, object], where: str
) -> None:
    redacted, found = secrets_redacted(payload)

    assert [f.where for f in found] == [where]
    assert "[redacted:Secret Keyword]" in str(redacted)


@pytest.mark.parametrize(
    "payload",
    [
        {"password": "${DB_PASSWORD}"},
        {"password": ""},
        {"secret_id": "a1b2c3d4"},
        {"password_min_length": "12"},
        {"keyboard": "qwerty layout"},
    ],
)
def test_a_secret_sounding_key_with_a_placeholder_or_an_id_is_left_alone(
    payload: dict[str, object],
) -> None:
    assert secrets_redacted(payload) == (payload, [])


def test_path_from_an_empty_root_starts_with_the_key() -> None:
    _, found = secrets_redacted({"db": [{"password": "hunter2xyz"}]})

    assert [f.where for f in found] == ["db[0].password"]


def test_secret_in_a_dict_key_is_reported_without_spelling_it_and_the_key_is_kept() -> None:
    payload = {AWS_KEY_ID: {"note": f"see {STRIPE_KEY}"}}

    redacted, found = secrets_redacted(payload, "payload")

    assert redacted == {AWS_KEY_ID: {"note": "see [redacted:Stripe Access Key]"}}
    assert found == [
        SecretFound('payload["[redacted:AWS Access Key]"]', "AWS Access Key", 0, 20),
        SecretFound('payload["[redacted:AWS Access Key]"].note', "Stripe Access Key", 4, 36),
    ]
    assert all(AWS_KEY_ID not in f.where for f in found)


def test_non_string_json_values_are_untouched() -> None:
    payload = {"n": 10**20, "f": 0.1, "b": False, "none": None, "list": [1, 2.5, True, None]}
    leaky = {**payload, "s": f"k {AWS_KEY_ID}"}

    redacted, _ = secrets_redacted(leaky)

    assert isinstance(redacted, dict)
    for name, value in payload.items():
        assert redacted[name] is value


def test_redacting_a_redacted_value_finds_nothing_more() -> None:
    payload = {
        "title": "rs_share_" + secrets.token_urlsafe(32),
        "notes": f'password = "hunter2xyz"\n{PEM}\nalso {GITHUB_TOKEN}',
        "cfg": {"api_key": "Vx7-not-a-real-value", "url": "https://u:pa55w0rdXy@h.example/"},
    }
    once, found = secrets_redacted(payload, "payload")
    assert len(found) == 6

    twice, found_again = secrets_redacted(once, "payload")

    assert twice == once and found_again == []


# --- long input ---------------------------------------------------------------------------


@pytest.mark.parametrize("start", [0, 4089, 7985, 100_000])
def test_key_anywhere_in_a_long_line_is_caught(start: int) -> None:
    text = "x" * start + AWS_KEY_ID + " " + "y" * 3 * 4096

    assert secrets_in_text(text) == [(start, start + 20, "AWS Access Key")]


def test_secret_far_into_a_megabyte_one_line_string_is_caught() -> None:
    filler = "lorem ipsum dolor sit amet " * 40_000
    text = filler + f'password = "hunter2xyz" and {GITHUB_TOKEN} ' + filler

    kinds = [kind for _, _, kind in secrets_in_text(text)]

    assert kinds == ["Secret Keyword", "GitHub Token"]


def test_a_megabyte_one_line_string_full_of_keywords_is_scanned_in_bounded_time() -> None:
    text = ("password key secret token apikey = 'x' " * 26_000)[:1_000_000]

    began = time.perf_counter()
    secrets_in_text(text)

    assert time.perf_counter() - began < 10  # measured well under 1 s; seconds mean a regression


# --- the summary --------------------------------------------------------------------------


def test_summary_names_kinds_and_places() -> None:
    found = [
        SecretFound("payload.aws.key", "AWS Access Key", 0, 20),
        SecretFound("title", "Roomservice API key", 3, 54),
    ]

    assert secret_kinds_summary(found) == (
        "2 secrets redacted: an AWS Access Key at payload.aws.key; a Roomservice API key at title"
    )


def test_summary_of_one_secret_in_a_bare_string_gives_its_characters() -> None:
    found = [SecretFound("", "Basic Auth Credentials", 17, 25)]

    assert secret_kinds_summary(found) == (
        "1 secret redacted: Basic Auth Credentials at characters 17-25"
    )


def test_summary_lists_five_places_then_how_many_more() -> None:
    found = [SecretFound(f"items[{i}]", "GitHub Token", 0, 40) for i in range(8)]

    summary = secret_kinds_summary(found)

    assert summary.startswith("8 secrets redacted: a GitHub Token at items[0]; ")
    assert summary.endswith("a GitHub Token at items[4]; and 3 more")
    assert len(re.findall("GitHub Token", summary)) == 5


def test_summary_of_nothing_is_empty() -> None:
    assert secret_kinds_summary([]) == ""
