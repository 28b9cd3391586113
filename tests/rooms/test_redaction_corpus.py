"""Redaction without false alarms (rooms.secrets over tests/rooms/redaction_corpus.py):
what agents write about secrets comes back byte for byte, and credentials in their real
formats are redacted, wherever they sit in a string."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.test import override_settings

from calls.runner import tool_run
from rooms.refs import RoomRef
from rooms.schemas import MAX_PAYLOAD_JSON
from rooms.secrets import key_names_a_secret, placeholder, secrets_in_text, secrets_redacted
from tenants.capabilities import Caller
from tests.rooms import redaction_corpus as corpus

RECALL_FLOOR = 0.95


@pytest.fixture(autouse=True)
def _database() -> None:
    """Replaces tests/rooms/conftest.py's: only the write_context test needs the stores."""


@pytest.fixture(autouse=True)
def _static_keys() -> Any:
    with override_settings(API_KEYS=corpus.STATIC_API_KEYS):
        yield


def caught(credential: corpus.Credential) -> bool:
    redacted, found = secrets_redacted(credential.text)
    return bool(found) and credential.secret not in str(redacted)


def test_the_corpus_is_as_large_as_promised() -> None:
    sizes = corpus.corpus_sizes()
    assert sizes["benign texts"] + sizes["benign payloads"] >= 150
    assert sizes["credential formats"] >= 40


@pytest.mark.parametrize("text", corpus.BENIGN_TEXTS)
def test_what_agents_write_about_secrets_comes_back_unchanged(text: str) -> None:
    assert secrets_in_text(text) == []
    redacted, found = secrets_redacted(text)
    assert redacted is text and found == []


@pytest.mark.parametrize("text", corpus.BENIGN_TEXTS)
def test_a_benign_text_as_a_context_payload_comes_back_unchanged(text: str) -> None:
    payload = corpus.benign_payload_of(text)

    assert secrets_redacted(payload, "payload") == (payload, [])


@pytest.mark.parametrize("payload", corpus.BENIGN_PAYLOADS, ids=lambda p: corpus.dumps(p)[:40])
def test_a_structured_payload_about_secrets_comes_back_unchanged(payload: dict[str, Any]) -> None:
    redacted, found = secrets_redacted(payload, "payload")

    assert found == []
    assert redacted is payload
    # And its JSON text, as a note would quote it.
    text = json.dumps(payload)
    assert secrets_in_text(text) == []


def test_benign_corpus_is_all_unchanged_and_recall_is_at_least_95_percent() -> None:
    """The two figures `make bench` prints, asserted."""
    altered = [t for t in corpus.BENIGN_TEXTS if secrets_redacted(t)[1]]
    altered += [corpus.dumps(p) for p in corpus.BENIGN_PAYLOADS if secrets_redacted(p)[1]]
    missed = [c.name for c in corpus.CREDENTIALS if not caught(c)]
    missed += [n for n, p, s in corpus.CREDENTIAL_PAYLOADS if s in str(secrets_redacted(p)[0])]
    total = len(corpus.CREDENTIALS) + len(corpus.CREDENTIAL_PAYLOADS)

    assert altered == []
    assert 1 - len(missed) / total >= RECALL_FLOOR, missed


@pytest.mark.parametrize("credential", corpus.CREDENTIALS, ids=lambda c: c.name)
def test_a_credential_in_its_real_format_is_redacted_and_the_text_around_it_kept(
    credential: corpus.Credential,
) -> None:
    redacted, found = secrets_redacted(credential.text, "notes")

    assert isinstance(redacted, str)
    assert credential.secret not in redacted
    assert len(found) == 1
    before, _, after = credential.text.partition(credential.secret)
    assert redacted == f"{before}[redacted:{found[0].kind}]{after}"


@pytest.mark.parametrize(
    ("name", "payload", "secret"),
    corpus.CREDENTIAL_PAYLOADS,
    ids=[name for name, _, _ in corpus.CREDENTIAL_PAYLOADS],
)
def test_a_credential_under_its_key_in_a_payload_is_redacted(
    name: str, payload: dict[str, Any], secret: str
) -> None:
    redacted, found = secrets_redacted(payload, "payload")

    assert secret not in corpus.dumps(redacted)
    assert [f.where for f in found] == [f"payload.config.{next(iter(payload['config']))}"]
    assert isinstance(redacted, dict) and redacted["note"] == "creds"


def test_the_static_keys_of_the_deployment_are_redacted_anywhere_in_a_string() -> None:
    secret = corpus.STATIC_API_KEYS.split(",")[0].partition(":")[2]

    assert secrets_redacted(f"x{secret}y")[0] == "x[redacted:Roomservice static key]y"
    with override_settings(API_KEYS=""):
        assert secrets_redacted(f"x{secret}y")[1] == []


def test_a_short_static_key_is_not_looked_for() -> None:
    with override_settings(API_KEYS="ops:admin,x:abc12345"):
        assert secrets_in_text("ask the admin for access") == []
        assert secrets_in_text("key abc12345 here") == [(4, 12, "Roomservice static key")]


@pytest.mark.parametrize(
    ("key", "names_a_secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("PGPASSWORD", True),
        ("apiKey", True),
        ("X-API-Key", True),
        ("client-secret", True),
        ("aws_secret_access_key", True),
        ("refresh_token", True),
        ("_authToken", True),
        ("contraseña", True),
        ("password_hash", False),
        ("passwordHash", False),
        ("secret_id", False),
        ("token_type", False),
        ("nextPageToken", False),
        ("idempotencyKey", False),
        ("public_key", False),
        ("keyboard", False),
        ("key", False),
        ("max_tokens", False),
    ],
)
def test_a_key_names_a_secret_by_its_last_word(key: str, names_a_secret: bool) -> None:
    assert key_names_a_secret(key) is names_a_secret


@pytest.mark.parametrize(
    "value",
    [
        "string",
        "null",
        "YOUR_API_KEY",
        "<token>",
        "${ENV}",
        "***",
        "changeme",
        "xxxxxxxxxxxx",
        "your-api-key-here",
        "{{ token }}",
        "%(password)s",
        "mysecretpassword",
    ],
)
def test_placeholders_are_recognised(value: str) -> None:
    assert placeholder(value)


def test_worst_case_input_of_the_maximum_entry_size_is_scanned_in_linear_time() -> None:
    """Every gate firing everywhere, keys and runs without an end: one entry's maximum."""
    unit = "password=aB3$ ghp_AKIAeyJ sk-ant-://u:p@ bearer Basic xoxb-AC"
    worst = (unit * (MAX_PAYLOAD_JSON // len(unit) + 1))[:MAX_PAYLOAD_JSON]
    runs = (
        "a" * MAX_PAYLOAD_JSON,
        "eyJ" * (MAX_PAYLOAD_JSON // 3),
        "key" * (MAX_PAYLOAD_JSON // 3),
    )

    for text in (worst, *runs):
        began = time.perf_counter()
        secrets_in_text(text)
        assert time.perf_counter() - began < 2  # measured in tens of ms; seconds: a regression


API_CONTRACT = {
    "service": "auth",
    "version": "1",
    "endpoints": [
        {
            "method": "POST",
            "path": "/v1/sessions",
            "request": {"email": "string", "password": "string"},
            "response": {"token": "string", "refresh_token": "string", "expires_in": "integer"},
            "auth_required": False,
            "description": "Log in; password_hash is never returned.",
        }
    ],
}


@pytest.mark.anyio
async def test_payloads_written_to_a_room_read_back_byte_for_byte(
    transactional_db: None, team_a: Caller, room: RoomRef
) -> None:
    writes = [("api_contract", API_CONTRACT)] + [
        ("note", {"text": f"contract {i}", **payload})
        for i, payload in enumerate(corpus.BENIGN_PAYLOADS)
    ]
    for kind, payload in writes:
        entry = await tool_run(
            team_a,
            "write_context",
            {
                "roomId": room.room_id,
                "type": kind,
                "summary": "what the service expects",
                "consuming_agents": ["bob"],
                "payload": payload,
                "author": "alice",
            },
        )
        assert "redacted" not in entry
        read = await tool_run(team_a, "read_context", {"roomId": room.room_id, "id": entry["id"]})
        assert corpus.dumps(read["payload"]) == corpus.dumps(payload)
