"""A room as one JSON document: what an archive keeps in Postgres and what export and
import carry (docs/durable-rooms.md, "Nothing silently expires").

The document is the room's Redis state key by key, typed as Redis types it, so nothing a
later feature adds to a room can be left out of its archive (tests check every durable key
has a type here), and a restore is exact: stream ids, cursors, idempotency records and the
search index come back as they were. Values are text where they are UTF-8 without NUL (all
of what agents wrote) and `{"b64": ...}` otherwise (the search index's binary postings).

An imported document drives the room's Lua steps, which trust what they stored, so only
a document this service signed is imported. Export writes version 2: the document laid out
one value a line (`document_encode`), ending in `,"signature":"hmac-sha256:<hex>"}`, the
HMAC of the exact bytes before that member. So import checks the signature over the bytes
as they stream in (`BodyCheck`), before it parses anything, and then reads the document a
line at a time (`document_read`), never the whole text as one JSON value. Version 1
documents were signed over their re-serialised content, which cannot be checked without
parsing them whole: the API refuses them, saying so (tenants.imports).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from rooms import errors, redaction, secrets
from rooms.store.archives import RawKey

FORMAT = "roomservice.room"
VERSION = 2  # 2: signed over the exact bytes (document_encode); 1: over re-serialised content
VERSIONS_READ = (1, 2)  # archives in Postgres of either; the parts are the same
# What the signature's HMAC covers comes after this (a version 1 MAC is never one of these).
SIGNED_DOMAIN = b"roomservice.room/2\n"
_SIGNATURE = re.compile(rb',"signature":"hmac-sha256:([0-9a-f]{64})"\}\Z')
_LEGACY_VERSION = re.compile(rb'"version":\s*1\s*[,}]')
_TRAILER_BYTES = len(b',"signature":"hmac-sha256:"}') + 64
_TRAILING_SPACE_MAX = 64  # what may follow the document (a newline an editor added)
_SEARCH_PARTS = ("search_events", "search_docs", "search_vocab")

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
    "presence_rest": "hash",
    "holds": "hash",
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


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def document_encode(document: dict[str, Any], key: bytes) -> bytes:
    """The document as export hands it out: one value a line (so `document_read` never
    holds more than a line of text), then the signature over every byte before it."""
    out = bytearray()
    head = {k: v for k, v in document.items() if k not in ("parts", "signature")}
    out += _dumps(head)[:-1].encode() + b',"parts":{\n'
    parts: dict[str, Any] = document.get("parts", {})
    for n, (part, entry) in enumerate(parts.items()):
        listed = "entries" if "entries" in entry else "items" if "items" in entry else ""
        if listed:
            rest = {k: v for k, v in entry.items() if k != listed}
            out += f'{_dumps(part)}:{_dumps(rest)[:-1]},"{listed}":[\n'.encode()
            items = entry[listed]
            for i, item in enumerate(items):
                out += _dumps(item).encode() + (b",\n" if i < len(items) - 1 else b"\n")
            line = "]}"
        else:
            line = f"{_dumps(part)}:{_dumps(entry)}"
        out += line.encode() + (b",\n" if n < len(parts) - 1 else b"\n")
    out += b"}"
    mac = hmac.new(key, SIGNED_DOMAIN + bytes(out), hashlib.sha256).hexdigest()
    out += f',"signature":"hmac-sha256:{mac}"}}\n'.encode()
    return bytes(out)


class BodyCheck:
    """The signature of a version 2 document, checked over its bytes as they arrive:
    `update` with each chunk, then `verified()`. Holds back only the last few bytes (where
    the signature may be), so a body of any size costs the same memory."""

    def __init__(self, key: bytes) -> None:
        self._mac = hmac.new(key, SIGNED_DOMAIN, hashlib.sha256)
        self._held = bytearray()
        self.head = b""  # the first bytes, to tell a version 1 document by
        self.size = 0

    def update(self, chunk: bytes) -> None:
        if len(self.head) < 200:
            self.head += chunk[: 200 - len(self.head)]
        self.size += len(chunk)
        self._held += chunk
        keep = _TRAILER_BYTES + _TRAILING_SPACE_MAX
        if len(self._held) > keep:
            self._mac.update(self._held[:-keep])
            del self._held[:-keep]

    def verified(self) -> None:
        """Raises ToolArgumentsError unless the bytes end in this deployment's signature of
        everything before it."""
        tail = bytes(self._held).rstrip(b" \t\r\n")
        found = _SIGNATURE.search(tail)
        if found is None:
            if document_is_legacy(self.head):
                raise _invalid(
                    "it was exported by an earlier version of this service (document version "
                    "1), whose signature can only be checked by reading the whole document: "
                    "export the room again, or have the operator import the file with "
                    "`manage.py room_import`"
                )
            raise _invalid("it carries no signature at its end (export a room to get one)")
        self._mac.update(tail[: found.start()])
        if not hmac.compare_digest(self._mac.hexdigest().encode(), found.group(1)):
            raise _invalid(
                "its signature does not match: it was changed after export, or exported by a "
                "deployment with another export key (ROOM_EXPORT_SIGNING_KEY)"
            )


def document_is_legacy(head: bytes) -> bool:
    """Whether a document's first bytes say version 1 (signed over its content)."""
    return FORMAT.encode() in head and _LEGACY_VERSION.search(head) is not None


def document_read(
    lines: Iterable[bytes], tick: Callable[[], None] = lambda: None
) -> tuple[dict[str, Any], list[RawKey]]:
    """(the document's head: format, roomId, status..., its keys) from a version 2 document
    whose signature was checked, read a line at a time: what is held is the keys' bytes,
    never the document's text or its JSON values. `tick` is called after each line (an
    import paces itself with it: tenants.imports.Pacer)."""
    it = iter(lines)
    first = next(it, b"")
    opening = b',"parts":{\n'
    if not first.endswith(opening):
        raise _invalid("it is not laid out as export writes it")
    head = _loads(first[: -len(opening)] + b"}")
    if not isinstance(head, dict):
        raise _invalid("it is not a JSON object")
    if head.get("format") != FORMAT or head.get("version") != VERSION:
        raise _invalid(f'it is not a "{FORMAT}" document of version {VERSION}')
    out: list[RawKey] = []
    for line in it:
        text = line.rstrip(b"\r\n")
        if text.startswith(b"}"):
            return head, out
        if text.endswith(b"["):
            opened = _loads(b"{" + text + b"]}}")
            if not isinstance(opened, dict) or len(opened) != 1:
                raise _invalid("it is not laid out as export writes it")
            ((part, entry),) = opened.items()
            build = _PartBuilder(part, entry)
            for item_line in it:
                tick()
                item = item_line.rstrip(b"\r\n")
                if item.startswith(b"]}"):
                    break
                build.add(_loads(item.removesuffix(b",")))
            else:
                raise _invalid("it ends inside a part")
            out.append(build.done())
        else:
            whole = _loads(b"{" + text.removesuffix(b",") + b"}")
            if not isinstance(whole, dict) or len(whole) != 1:
                raise _invalid("it is not laid out as export writes it")
            ((part, entry),) = whole.items()
            out.append(_raw_key(part, entry))
    raise _invalid("it ends before its parts do")


def _loads(text: bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise _invalid(
            "a line of it is not JSON (it is not laid out as export writes it)"
        ) from None


def document_keys(document: Any) -> tuple[str, list[RawKey]]:
    """(the room's own status, its keys) from a document already trusted (an archive this
    service wrote, or a checked export): its shape, every part one this service knows with
    the type it has here. Raises ToolArgumentsError saying what is wrong."""
    if not isinstance(document, dict):
        raise _invalid("it is not a JSON object")
    if document.get("format") != FORMAT or document.get("version") not in VERSIONS_READ:
        raise _invalid(f'it is not a "{FORMAT}" document of version {VERSION}')
    parts = document.get("parts")
    if not isinstance(parts, dict):
        raise _invalid('"parts" is not an object')
    return document_status(document), [_raw_key(part, entry) for part, entry in parts.items()]


def document_status(head: dict[str, Any]) -> str:
    status = head.get("status")
    return str(status) if status in ("active", "paused", "completed") else "active"


def document_legacy_checked(document: Any, keys: list[bytes]) -> dict[str, Any]:
    """A version 1 document (signed over its content re-serialised) whose signature is one
    of `keys`'; raises ToolArgumentsError otherwise. Only for a file the operator holds
    (manage.py room_import): it needs the whole document parsed first."""
    if not isinstance(document, dict) or document.get("version") != 1:
        raise _invalid(f'it is not a "{FORMAT}" document of version 1')
    signature = document.get("signature")
    body = {k: v for k, v in document.items() if k != "signature"}
    content = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for key in keys:
        mac = hmac.new(key, content.encode(), hashlib.sha256).hexdigest()
        if isinstance(signature, str) and hmac.compare_digest(signature, f"hmac-sha256:{mac}"):
            return document
    raise _invalid(
        "its signature does not match any export key this deployment has had (or it was "
        "signed with the published development key, which anyone can use)"
    )


class _PartBuilder:
    """One part's key, its items added one at a time (checked as they come)."""

    def __init__(self, part: str, entry: Any) -> None:
        expected = PART_TYPES.get(part)
        if expected is None:
            raise _invalid(f'part "{part[:40]}" is not one this service keeps')
        if not isinstance(entry, dict) or entry.get("type") != expected:
            raise _invalid(f'part "{part}" must be of type {expected}')
        at = entry.get("expiresAtMs", -1)
        if not isinstance(at, int):
            raise _invalid(f'part "{part}": expiresAtMs must be an integer')
        self.part, self.type, self.at = part, expected, at if part in OWN_EXPIRY else -1
        self.items: list[bytes] = []
        self.entries: list[tuple[bytes, list[bytes]]] = []
        self.ids: tuple[bytes, bytes, bytes] | None = None
        if expected == "stream":
            ids = [entry.get("lastId"), entry.get("maxDeletedId")]
            added = entry.get("entriesAdded")
            if not all(isinstance(x, str) and _STREAM_ID.match(x) for x in ids) or not (
                isinstance(added, int)
            ):
                raise _invalid(f'part "{part}": lastId, maxDeletedId and entriesAdded are required')
            self.ids = (str(ids[0]).encode(), str(added).encode(), str(ids[1]).encode())

    def add(self, item: Any) -> None:
        if self.type != "stream":
            self.items.append(_bytes(item, self.part))
            return
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], str)
            or not _STREAM_ID.match(item[0])
            or not isinstance(item[1], list)
            or not item[1]
            or len(item[1]) % 2
        ):
            raise _invalid(f'part "{self.part}": each entry is [id, [field, value, ...]]')
        self.entries.append((item[0].encode(), [_bytes(x, self.part) for x in item[1]]))

    def done(self) -> RawKey:
        if self.type == "stream":
            return RawKey(self.part, "stream", self.at, stream_ids=self.ids, entries=self.entries)
        if self.type in ("hash", "zset") and len(self.items) % 2:
            raise _invalid(f'part "{self.part}": a {self.type} holds pairs')
        if self.type == "string" and len(self.items) != 1:
            raise _invalid(f'part "{self.part}": a string holds one value')
        return RawKey(self.part, self.type, self.at, self.items)


def _raw_key(part: str, entry: Any) -> RawKey:
    build = _PartBuilder(part, entry)
    if build.type == "string":
        build.add(entry.get("value"))
        return build.done()
    listed = entry.get("entries" if build.type == "stream" else "items")
    if not isinstance(listed, list):
        raise _invalid(f'part "{part}": its items must be a list')
    for item in listed:
        build.add(item)
    return build.done()


# --- What an import may not bring in: secrets ---------------------------------------------


def keys_redacted(
    raw: list[RawKey], policy: str, tick: Callable[[], None] = lambda: None
) -> tuple[list[RawKey], list[secrets.SecretFound]]:
    """The keys of an imported room with the secrets in their text redacted by the room's
    rule (`policy`: rooms.redaction's redact / refuse / off; off still redacts this
    service's own keys), and where they were (`<part>.<field>`). A value is checked with
    its field's name (so DB_PASSWORD=hunter2 is found) and, when it is JSON, string by
    string. Names (hash fields, members) are not rewritten: one holding a secret raises
    SecretRefusedError, as a write would. When anything was redacted, the search index
    (which holds the words of what was redacted) is left out and `raw` says so by lacking
    it: the caller indexes tasks and context again. `tick`: called after each chunk."""
    find = secrets.own_keys_redacted if policy == "off" else secrets.secrets_redacted
    found: list[secrets.SecretFound] = []
    named: list[secrets.SecretFound] = []
    for key in raw:
        if key.part in _SEARCH_PARTS or key.type == "string":
            continue
        if key.type == "stream":
            for at in range(0, len(key.entries), REDACT_CHUNK):
                chunk = key.entries[at : at + REDACT_CHUNK]
                found += _chunk_redacted(key.part, [f for _, f in chunk], find, named)
                tick()
        elif key.type == "hash":
            for at in range(0, len(key.items), 2 * REDACT_CHUNK):
                # One (name, value) list per chunk, redacted in place through its slice.
                pairs = key.items[at : at + 2 * REDACT_CHUNK]
                found += _chunk_redacted(key.part, [pairs], find, named)
                key.items[at : at + 2 * REDACT_CHUNK] = pairs
                tick()
        else:
            members = key.items[::2] if key.type == "zset" else key.items
            named += find([_decoded(m) for m in members], key.part)[1]
    if named:
        raise redaction.refusal(named)
    if not found:
        vocab = next((k for k in raw if k.part == "search_vocab"), None)
        words = vocab.items[::2] if vocab is not None else []
        if not secrets.own_keys_redacted([_decoded(w) for w in words])[1]:
            return raw, []
    return [key for key in raw if key.part not in _SEARCH_PARTS], found


# Entries or pairs checked in one pass: the gate's cost is mostly per byte, so a pass of a
# few dozen agent-sized values (~1 ms) costs little more per value than a larger one.
REDACT_CHUNK = 16


def _decoded(value: bytes) -> str:
    return value.decode("utf-8", "replace")


def _said(value: bytes) -> Any:
    """What a stored value says, for the check: its JSON when it is JSON (so a secret
    spelled with escapes is seen), else its text; None when it is binary."""
    try:
        text = value.decode()
    except UnicodeDecodeError:
        return None
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _chunk_redacted(
    part: str, groups: list[list[bytes]], find: Any, named: list[secrets.SecretFound]
) -> list[secrets.SecretFound]:
    """Redacts, in place, the values of `groups` (each a flat [name, value, ...] list: a
    stream entry's fields, or a run of a hash's pairs). One check over them all first:
    most rooms hold no secret, and the check costs one pass however many values it sees."""
    names = [_decoded(g[i]) for g in groups for i in range(0, len(g) - 1, 2)]
    values = [{_decoded(g[i]): _said(g[i + 1]) for i in range(0, len(g) - 1, 2)} for g in groups]
    held = find(names, part)[1]
    if held:  # a name is never rewritten (it would retarget what it names)
        named += held
        return []
    if not find(values, part)[1]:
        return []
    found: list[secrets.SecretFound] = []
    for group in groups:
        for i in range(0, len(group) - 1, 2):
            name, value = _decoded(group[i]), _said(group[i + 1])
            if value is None:
                continue
            new, hits = find({name: value}, part)
            if hits and isinstance(new, dict):
                changed = new[name]
                group[i + 1] = (changed if isinstance(changed, str) else _dumps(changed)).encode()
                found += hits
    return found
