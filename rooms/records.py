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


# A stored task's JSON -> the task as the protocol shows it and its `dumps`, shared by every
# read that meets the same stored bytes (read_plan: a plan's tasks rarely change between
# reads). Shared by every tenant of the process, so bounded by what it holds, not only by
# its count: an entry is charged four times its stored size (the key, the decoded task,
# its text, that text quoted), a task past TASK_SEEN_CHARS is never kept (a task with its
# full notes can be ~350 KB), and the whole is emptied when TASKS_SEEN_CHARS would pass.
_TASKS_SEEN: dict[str, tuple[Task, str, str]] = {}
TASKS_SEEN_MAX = 4096
TASK_SEEN_CHARS = 16 * 1024
TASKS_SEEN_CHARS = 16 * 1024 * 1024
_tasks_seen_chars = 0


def task_seen(raw: str) -> tuple[Task, str, str]:
    """(task, its JSON text, that text quoted) of a stored task, for a reader that only
    reads it: the task is shared with other reads of the same stored bytes and must not be
    changed."""
    global _tasks_seen_chars
    found = _TASKS_SEEN.get(raw)
    if found is None:
        task = task_from_json(raw)
        text = dumps(task)
        found = (task, text, quoted(text))
        charge = 4 * len(raw)
        if len(raw) > TASK_SEEN_CHARS:
            return found
        if len(_TASKS_SEEN) >= TASKS_SEEN_MAX or _tasks_seen_chars + charge > TASKS_SEEN_CHARS:
            _TASKS_SEEN.clear()
            _tasks_seen_chars = 0
        _TASKS_SEEN[raw] = found
        _tasks_seen_chars += charge
    return found


def tasks_seen_held() -> tuple[int, int]:
    """(entries, characters charged) of the shared task cache (tests hold it to its bounds)."""
    return len(_TASKS_SEEN), _tasks_seen_chars


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
