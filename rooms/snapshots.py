"""A room as one JSON document: what an archive keeps in Postgres and what export and
import carry (DESIGN.md §2, "nothing silently expires").

The document is the room's Redis state key by key, typed as Redis types it, so nothing a
later feature adds to a room can be left out of its archive (tests check every durable key
has a type here), and a restore is exact: stream ids, cursors, idempotency records and the
search index come back as they were. Values are text where they are UTF-8 without NUL (all
of what agents wrote) and `{"b64": ...}` otherwise (the search index's binary postings).

An imported document drives the room's Lua steps, which trust what they stored, so only
a document this service signed is imported: its signature is an HMAC over its content
with ROOM_EXPORT_SIGNING_KEY (the SECRET_KEY unless set; two deployments that share it
move rooms between them).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from typing import Any

from django.conf import settings

from rooms import errors
from rooms.keys import RoomKeys
from rooms.store import RawKey

FORMAT = "roomservice.room"
VERSION = 1

# Every part of a room an archive holds, and its Redis type (RoomKeys.snapshot_parts).
PART_TYPES: dict[str, str] = {
    "meta": "hash",
    "tasks": "hash",
    "task_order": "list",
    "task_titles": "hash",
    "claims": "zset",
    "claim_holders": "hash",
    "reviews": "hash",
    "review_order": "zset",
    "idem": "hash",
    "idem_at": "zset",
    "ctx": "hash",
    "ctx_payload": "hash",
    "ctx_created": "zset",
    "ctx_changed": "zset",
    "ctx_versions": "hash",
    "ctx_version_index": "zset",
    "ctx_labels": "hash",
    "events": "stream",
    "cursors": "hash",
    "cursors_ro": "hash",
    "reads": "hash",
    "presence": "zset",
    "vars": "hash",
    "lock_tokens": "hash",
    "fence": "string",
    "seq": "string",
    "leases": "hash",
    "lease_expiry": "zset",
    "file_reads": "hash",
    "ctx_readers": "hash",
    "handoffs": "hash",
    "handoff_order": "zset",
    "messages": "hash",
    "message_order": "zset",
    "deliveries": "hash",
    "inbox": "zset",
    "outbox": "zset",
    "message_stats": "hash",
    "agent_tags": "hash",
    "inherited": "hash",
    "search_events": "hash",
    "search_docs": "hash",
    "search_vocab": "zset",
}
# The parts with an expiry of their own (the idempotency window); every other part lives as
# long as the room, and gets the idle TTL afresh when it is loaded.
OWN_EXPIRY = frozenset({"idem", "idem_at"})
_STREAM_ID = re.compile(r"^\d{1,20}-\d{1,20}$")


def _text(value: bytes) -> Any:
    if b"\x00" not in value:
        try:
            return value.decode()
        except UnicodeDecodeError:
            pass
    return {"b64": base64.b64encode(value).decode()}


def _bytes(value: Any, where: str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict) and set(value) == {"b64"} and isinstance(value["b64"], str):
        try:
            return base64.b64decode(value["b64"], validate=True)
        except ValueError:
            pass
    raise _invalid(f"{where}: a value is neither text nor {{'b64': ...}}")


def _invalid(why: str) -> errors.ToolArgumentsError:
    return errors.ToolArgumentsError(errors.ROOM_DOCUMENT_INVALID.format(why=why))


def document_build(
    room_id: str, raw: list[RawKey], *, status: str, taken_at: str
) -> dict[str, Any]:
    """The document of a room's snapshot (store.room_snapshot); `status`: the room's own,
    before any archiving."""
    parts: dict[str, Any] = {}
    for key in raw:
        entry: dict[str, Any] = {"type": key.type}
        if key.part in OWN_EXPIRY and key.expire_at_ms >= 0:
            entry["expiresAtMs"] = key.expire_at_ms
        if key.type == "string":
            entry["value"] = _text(key.items[0])
        elif key.type == "stream":
            assert key.stream_ids is not None
            last, added, deleted = key.stream_ids
            entry["lastId"] = last.decode()
            entry["entriesAdded"] = int(added)
            entry["maxDeletedId"] = deleted.decode()
            entry["entries"] = [
                [entry_id.decode(), [_text(x) for x in fields]] for entry_id, fields in key.entries
            ]
        else:
            entry["items"] = [_text(x) for x in key.items]
        parts[key.part] = entry
    return {
        "format": FORMAT,
        "version": VERSION,
        "roomId": room_id,
        "status": status,
        "takenAt": taken_at,
        "parts": parts,
    }


def document_summary(document: dict[str, Any]) -> dict[str, int]:
    """What a person wants to know of an archive: how much of each thing it holds."""
    parts = document.get("parts", {})

    def count(part: str, per: int = 1) -> int:
        entry = parts.get(part)
        if not entry:
            return 0
        return len(entry.get("entries", entry.get("items", []))) // per

    return {
        "tasks": count("tasks", 2),
        "contextEntries": count("ctx", 2),
        "events": count("events"),
        "messages": count("messages", 2),
        "handoffs": count("handoffs", 2),
        "vars": count("vars", 2),
    }


def _signed_content(document: dict[str, Any]) -> bytes:
    body = {k: v for k, v in document.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _signing_key() -> bytes:
    return str(settings.ROOM_EXPORT_SIGNING_KEY or settings.SECRET_KEY).encode()


def document_signed(document: dict[str, Any]) -> dict[str, Any]:
    """The document as export hands it out: signed, so import can trust it."""
    mac = hmac.new(_signing_key(), _signed_content(document), hashlib.sha256).hexdigest()
    return {**document, "signature": f"hmac-sha256:{mac}"}


def document_raw(document: Any) -> tuple[str, list[RawKey]]:
    """(the room's own status, its keys) from an exported document, checked: its shape, its
    signature, every part one this service knows with the type it has here. Raises
    ToolArgumentsError saying what is wrong; a document that fails loads nothing."""
    if not isinstance(document, dict):
        raise _invalid("it is not a JSON object")
    if document.get("format") != FORMAT or document.get("version") != VERSION:
        raise _invalid(f'it is not a "{FORMAT}" document of version {VERSION}')
    signature = document.get("signature")
    if not isinstance(signature, str) or not signature.startswith("hmac-sha256:"):
        raise _invalid("it carries no signature (export a room to get one)")
    expected = document_signed(document)["signature"]
    if not hmac.compare_digest(signature, expected):
        raise _invalid(
            "its signature does not match: it was changed after export, or exported by a "
            "deployment with another ROOM_EXPORT_SIGNING_KEY"
        )
    status = document.get("status")
    if status not in ("active", "paused", "completed"):
        status = "active"
    parts = document.get("parts")
    if not isinstance(parts, dict):
        raise _invalid('"parts" is not an object')
    out: list[RawKey] = []
    for part, entry in parts.items():
        out.append(_raw_key(part, entry))
    return str(status), out


def _raw_key(part: str, entry: Any) -> RawKey:
    expected = PART_TYPES.get(part)
    if expected is None:
        raise _invalid(f'part "{part[:40]}" is not one this service keeps')
    if not isinstance(entry, dict) or entry.get("type") != expected:
        raise _invalid(f'part "{part}" must be of type {expected}')
    at = entry.get("expiresAtMs", -1)
    if not isinstance(at, int):
        raise _invalid(f'part "{part}": expiresAtMs must be an integer')
    if part not in OWN_EXPIRY:
        at = -1
    if expected == "stream":
        return _raw_stream(part, entry, at)
    if expected == "string":
        return RawKey(part, expected, at, [_bytes(entry.get("value"), part)])
    items = entry.get("items")
    if not isinstance(items, list):
        raise _invalid(f'part "{part}": "items" must be a list')
    if expected in ("hash", "zset") and len(items) % 2:
        raise _invalid(f'part "{part}": a {expected} holds pairs')
    return RawKey(part, expected, at, [_bytes(x, part) for x in items])


def _raw_stream(part: str, entry: dict[str, Any], at: int) -> RawKey:
    ids = [entry.get("lastId"), entry.get("maxDeletedId")]
    added = entry.get("entriesAdded")
    if not all(isinstance(x, str) and _STREAM_ID.match(x) for x in ids) or not isinstance(
        added, int
    ):
        raise _invalid(f'part "{part}": lastId, maxDeletedId and entriesAdded are required')
    entries = entry.get("entries")
    if not isinstance(entries, list):
        raise _invalid(f'part "{part}": "entries" must be a list')
    raw: list[tuple[bytes, list[bytes]]] = []
    for item in entries:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], str)
            or not _STREAM_ID.match(item[0])
            or not isinstance(item[1], list)
            or not item[1]
            or len(item[1]) % 2
        ):
            raise _invalid(f'part "{part}": each entry is [id, [field, value, ...]]')
        raw.append((item[0].encode(), [_bytes(x, part) for x in item[1]]))
    return RawKey(
        part,
        "stream",
        at,
        stream_ids=(str(ids[0]).encode(), str(added).encode(), str(ids[1]).encode()),
        entries=raw,
    )


def parts_known(keys: RoomKeys) -> set[str]:
    """The parts a snapshot of this room takes (tests: every one has a type here)."""
    return set(keys.snapshot_parts())
