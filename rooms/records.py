"""Turning what the store holds into the protocol's result shapes (docs/tools.md)."""

from __future__ import annotations

import json
import re
from typing import Any, cast

from rooms import clock
from rooms.results import ContextEntry, Event, Handoff, Lease, Task
from rooms.store.events import StreamEntry

# ASCII digits only (\d would take any Unicode digit) and the whole string (no trailing
# newline slips past), so Redis never sees a stream id it would reject.
EVENT_ID_RE = re.compile(r"([0-9]{1,20})-([0-9]{1,20})", re.ASCII)
_U64 = 2**64
FIRST_EVENT_ID = "0-0"
LAST_EVENT_ID = f"{_U64 - 1}-{_U64 - 1}"


def is_event_id(value: str) -> bool:
    """A well-formed Redis stream id (both parts fit in 64 bits), so Redis never sees junk."""
    m = EVENT_ID_RE.fullmatch(value)
    return m is not None and int(m.group(1)) < _U64 and int(m.group(2)) < _U64


def event_id_after(event_id: str) -> str:
    """The smallest id after `event_id` (a valid one): a page "before" it starts with it."""
    ms, _, seq = event_id.partition("-")
    return f"{ms}-{int(seq) + 1}"


def task_from_json(raw: str) -> Task:
    """A stored task, as the protocol shows it (the store wrote it from a `Task`)."""
    task: dict[str, Any] = json.loads(raw)
    # A task re-encoded by Lua may carry `{}` where an empty list was meant.
    for name in ("depends_on", "notes"):
        if task.get(name) == {}:
            task[name] = []
    task.setdefault("version", 1)  # written before tasks had versions
    if "lease_seconds" in task:
        task["lease_seconds"] = int(task["lease_seconds"])
    return cast(Task, task)


class KnownJson(dict[str, Any]):
    """A result whose JSON text (`dumps` of it) is already made, and that text as the inside
    of a JSON string (`json_quoted`, what MCP's text content carries): the MCP door sends
    them instead of encoding the value again and escaping its text (mcp_gateway/tools.py).
    Read-only: it is handed to whoever answers the call, and shares parts with other calls'
    results."""

    __slots__ = ("json_quoted", "json_text")
    json_text: str
    json_quoted: str


def quoted(text: str) -> str:
    """`text` as the inside of a JSON string (json.dumps of it, less its two quotes).
    Escaping goes character by character, so the quoted parts of a text join into the
    quoted text."""
    return _encode_string(text)[1:-1]


_encode_string = json.encoder.encode_basestring  # json.dumps(str, ensure_ascii=False)


class Shared:
    """Renders shared by every read that meets the same stored bytes, in every tenant of the
    process, so bounded by what they hold, not only by their count: an entry is charged
    four times its stored size (the key, the decoded value, its text, that text quoted),
    one past `entry_chars` is never kept, and the whole is emptied when `most` entries or
    `chars` would pass."""

    __slots__ = ("_held", "chars", "entry_chars", "held_chars", "most")

    def __init__(self, *, most: int, entry_chars: int, chars: int) -> None:
        self._held: dict[Any, KnownJson] = {}
        self.most, self.entry_chars, self.chars = most, entry_chars, chars
        self.held_chars = 0

    def get(self, key: Any) -> KnownJson | None:
        return self._held.get(key)

    def keep(self, key: Any, value: KnownJson, stored_chars: int) -> KnownJson:
        charge = 4 * stored_chars
        if stored_chars > self.entry_chars:
            return value
        if len(self._held) >= self.most or self.held_chars + charge > self.chars:
            self._held.clear()
            self.held_chars = 0
        self._held[key] = value
        self.held_chars += charge
        return value

    def held(self) -> tuple[int, int]:
        """(entries, characters charged): tests hold it to its bounds."""
        return len(self._held), self.held_chars


def known(value: dict[str, Any]) -> KnownJson:
    """`value` with its text made, and quoted."""
    found = KnownJson(value)
    found.json_text = dumps(found)
    found.json_quoted = quoted(found.json_text)
    return found


def known_around(value: dict[str, Any], key: str) -> KnownJson:
    """`value`, whose `key` holds a list of KnownJson, with its text made around theirs:
    those items are not encoded again (read_plan's tasks, a wake's events)."""
    items: list[KnownJson] = value[key]
    names = list(value)
    at = names.index(key)
    head = {k: value[k] for k in names[:at]}
    tail = {k: value[k] for k in names[at + 1 :]}
    opening = (dumps(head)[:-1] + "," if head else "{") + '"' + quoted(key) + '":['
    closing = "]," + dumps(tail)[1:] if tail else "]}"
    found = KnownJson(value)
    found.json_text = opening + ",".join(i.json_text for i in items) + closing
    found.json_quoted = quoted(opening) + ",".join(i.json_quoted for i in items) + quoted(closing)
    return found


# A stored task's JSON -> the task as the protocol shows it, with its text (read_plan: a
# plan's tasks rarely change between reads). A task with its full notes can be ~350 KB.
TASKS_SEEN = Shared(most=4096, entry_chars=16 * 1024, chars=16 * 1024 * 1024)


def task_seen(raw: str) -> KnownJson:
    """A stored task as task_from_json gives it, with its text, for a reader that only reads
    it: shared with other reads of the same stored bytes, it must not be changed."""
    found = TASKS_SEEN.get(raw)
    if found is None:
        found = TASKS_SEEN.keep(raw, known(cast(dict[str, Any], task_from_json(raw))), len(raw))
    return found


# A stream entry -> the event as the protocol shows it, with its text: the waiters one
# write wakes, and the streams it reaches, all answer with the same event.
EVENTS_SEEN = Shared(most=4096, entry_chars=16 * 1024, chars=8 * 1024 * 1024)


def event_seen(entry: StreamEntry) -> KnownJson:
    """event_from_entry, with its text, shared with every other read of the same entry
    (the same id and fields): it must not be changed."""
    key = (entry[0], *entry[1].items())
    found = EVENTS_SEEN.get(key)
    if found is None:
        stored = len(entry[0]) + sum(len(k) + len(v) for k, v in entry[1].items())
        found = EVENTS_SEEN.keep(key, known(cast(dict[str, Any], event_from_entry(entry))), stored)
    return found


def text_of(value: Any) -> str:
    """dumps of `value`, made once when it is KnownJson."""
    return value.json_text if isinstance(value, KnownJson) else dumps(value)


def context_from_json(entry_json: str, payload_json: str) -> ContextEntry:
    entry: dict[str, Any] = json.loads(entry_json)
    if entry.get("consuming_agents") == {}:
        entry["consuming_agents"] = []
    entry["payload"] = json.loads(payload_json)
    return cast(ContextEntry, entry)


def event_ms(event_id: str) -> int:
    return int(event_id.split("-", 1)[0])


def event_from_entry(entry: StreamEntry) -> Event:
    """An event's timestamp is its stream id's time, so order and time never disagree."""
    eid, fields = entry
    event: Event = {
        "id": eid,
        "type": fields.get("type", ""),
        "from": fields.get("from", ""),
        "to": fields.get("to", "all"),
        "payload": json.loads(fields.get("payload") or "null"),
        "timestamp": clock.iso_from_ms(event_ms(eid)),
    }
    if fields.get("reply_to_id"):
        event["reply_to_id"] = fields["reply_to_id"]
    if "rcpt" in fields:
        event["recipients"] = [str(a) for a in json.loads(fields["rcpt"]) or []]
    return event


def event_addressed_to(event: Event, agent_id: str) -> bool:
    """THE rule of who an event is for (rooms/lua/lib/read_unread.lua applies it in Lua): a message
    is for exactly its recipients; any other event for everyone ("all") or its `to`. What
    addressedOnly delivers, what an agent's webhook and stream carry, agree with it."""
    if "recipients" in event:
        return agent_id in event["recipients"]
    return event["to"] in ("all", agent_id)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def lease_from_json(raw: str) -> Lease:
    stored: dict[str, Any] = json.loads(raw)
    return {
        "id": str(stored["id"]),
        "path": str(stored["path"]),
        "mode": stored["mode"],
        "holder": str(stored["holder"]),
        "taskId": stored.get("task_id"),
        "reason": stored.get("reason"),
        "expiresAt": clock.iso_from_ms(int(stored["expires_ms"])),
    }


def handoff_from_json(raw: str) -> Handoff:
    handoff: dict[str, Any] = json.loads(raw)
    if handoff.get("contextIds") == {}:  # re-encoded by Lua
        handoff["contextIds"] = []
    return cast(Handoff, handoff)
