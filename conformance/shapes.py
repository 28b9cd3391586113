"""The result shapes docs/tools.md gives each tool, as small predicates over parsed JSON.

Only the fields the contract names are checked, and extra fields are always allowed: a
server may say more than roomd does, never less. Each shape returns a list of problems
("tasks[0].created_at: …") so that a FAIL names the field, not just the tool.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from conformance.kit import Failed

Shape = Callable[[Any, str], list[str]]

TIMESTAMP_PATTERN = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
VERSION_PATTERN = re.compile(r"^\d+\.\d+$")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def kind(test: Callable[[Any], bool], expected: str) -> Shape:
    def shape(value: Any, at: str) -> list[str]:
        return [] if test(value) else [f"{at}: expected {expected}, got {_show(value)}"]

    return shape


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


STR = kind(lambda v: isinstance(v, str), "a string")
TEXT = kind(lambda v: isinstance(v, str) and v != "", "a non-empty string")
INT = kind(_is_int, "an integer")
NUMBER = kind(lambda v: _is_int(v) or isinstance(v, float), "a number")
BOOL = kind(lambda v: isinstance(v, bool), "true or false")
OBJECT = kind(lambda v: isinstance(v, dict), "an object")
LIST = kind(lambda v: isinstance(v, list), "an array")
ANY = kind(lambda v: True, "anything")
TIMESTAMP = kind(
    lambda v: isinstance(v, str) and TIMESTAMP_PATTERN.match(v) is not None,
    "an ISO-8601 UTC time with milliseconds and a Z",
)
VERSION = kind(
    lambda v: isinstance(v, str) and VERSION_PATTERN.match(v) is not None,
    'a version string like "1.0"',
)


def one_of(*allowed: Any) -> Shape:
    return kind(lambda v: v in allowed, "one of " + ", ".join(map(repr, allowed)))


def opt(inner: Shape) -> Shape:
    """`inner` or null."""

    def shape(value: Any, at: str) -> list[str]:
        return [] if value is None else inner(value, at)

    return shape


def list_of(item: Shape) -> Shape:
    def shape(value: Any, at: str) -> list[str]:
        if not isinstance(value, list):
            return [f"{at}: expected an array, got {_show(value)}"]
        return [problem for i, v in enumerate(value) for problem in item(v, f"{at}[{i}]")]

    return shape


def obj(fields: dict[str, Shape]) -> Shape:
    """An object holding at least `fields` (a missing field and a null one are different
    problems: the report says which)."""

    def shape(value: Any, at: str) -> list[str]:
        if not isinstance(value, dict):
            return [f"{at}: expected an object, got {_show(value)}"]
        problems: list[str] = []
        for name, inner in fields.items():
            where = f"{at}.{name}" if at else name
            if name not in value:
                problems.append(f"{where}: missing")
            else:
                problems.extend(inner(value[name], where))
        return problems

    return shape


def expect_shape(value: Any, shape: Shape, what: str) -> None:
    """Fail, naming up to four fields, unless `value` has `shape`."""
    problems = shape(value, "")
    if problems:
        more = f" (and {len(problems) - 4} more)" if len(problems) > 4 else ""
        raise Failed(f"{what} result: " + "; ".join(p.lstrip(".") for p in problems[:4]) + more)


# --- docs/tools.md's shapes ------------------------------------------------------------------

TASK_STATUS = one_of("pending", "in_progress", "done", "blocked")
TASK = obj(
    {
        "id": TEXT,
        "title": STR,
        "description": STR,
        "status": TASK_STATUS,
        "owner": opt(STR),
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "depends_on": list_of(STR),
    }
)
TASKS = list_of(TASK)
PLAN = obj({"project": opt(STR), "created_at": TIMESTAMP, "updated_at": TIMESTAMP, "tasks": TASKS})
CONTEXT_TYPE = one_of("api_contract", "arch_decision", "task", "change_request", "note")
CONTEXT = obj(
    {
        "id": TEXT,
        "type": CONTEXT_TYPE,
        "author": STR,
        "timestamp": TIMESTAMP,
        "summary": STR,
        "consuming_agents": list_of(STR),
        "payload": OBJECT,
        "version": VERSION,
    }
)
EVENT = obj(
    {"id": TEXT, "type": TEXT, "from": STR, "to": STR, "payload": ANY, "timestamp": TIMESTAMP}
)
EVENTS = list_of(EVENT)
UNREAD = obj({"events": EVENTS, "cursor": opt(STR), "count": INT})
# roomd lists an agent whose heartbeat expired with lastSeen null.
PRESENCE = obj({"agentId": STR, "status": one_of("online", "offline"), "lastSeen": opt(TIMESTAMP)})
SUMMARY = obj(
    {
        "agentId": STR,
        "roomId": STR,
        "myTasks": TASKS,
        "unreadEvents": ANY,
        "newContextCount": INT,
        "presence": ANY,
        "cursor": opt(STR),
    }
)
# What roomd answers; expiresAt and fencingToken are ours (checks_core's fencing check).
LOCK = obj({"acquired": BOOL, "resource": STR, "holder": opt(STR), "ttlSeconds": INT})
LOCK_OURS = obj({"expiresAt": TIMESTAMP, "fencingToken": INT})
LOCKS = list_of(obj({"resource": STR, "owner": STR}))
LOCKS_OURS = list_of(obj({"expiresAt": TIMESTAMP}))


def _rooms(value: Any, at: str) -> list[str]:
    """list_rooms: roomd answers `{rooms: ["id", …]}`; we answer objects with a roomId.
    Both are the protocol's: a list of ids, or of objects naming theirs."""
    rooms = value.get("rooms") if isinstance(value, dict) else value
    if not isinstance(rooms, list):
        return [f"{at or 'rooms'}: expected a list of rooms, got {_show(value)}"]
    return [
        f"{at}rooms[{i}]: expected a room id or an object with a roomId, got {_show(r)}"
        for i, r in enumerate(rooms)
        if not (isinstance(r, str) or (isinstance(r, dict) and isinstance(r.get("roomId"), str)))
    ]


ROOMS: Shape = _rooms


def room_ids(value: Any) -> list[str]:
    """The room ids of a list_rooms answer, whichever of its two forms."""
    rooms = value.get("rooms") if isinstance(value, dict) else value
    return [
        r if isinstance(r, str) else str(r.get("roomId"))
        for r in (rooms if isinstance(rooms, list) else [])
        if isinstance(r, str | dict)
    ]


REVIEW = obj(
    {
        "id": TEXT,
        "targetType": one_of("task", "context"),
        "targetId": TEXT,
        "requestedBy": STR,
        "reviewer": STR,
        "note": opt(STR),
        "status": one_of("pending", "approved", "rejected"),
        "createdAt": TIMESTAMP,
    }
)
RESOLVED = obj({"resolvedAt": TIMESTAMP, "resolvedBy": STR})
# roomd answers createdAt null for a room it holds no metadata of (one claimed by use).
ROOM_INFO = obj(
    {
        "roomId": STR,
        "ownerTeamId": ANY,
        "createdAt": opt(TIMESTAMP),
        "memberCount": INT,
        "taskCount": INT,
        "contextCount": INT,
        "eventCount": INT,
    }
)
ANALYTICS = obj(
    {
        "roomId": STR,
        "ownerTeamId": ANY,
        "createdAt": opt(TIMESTAMP),
        "tasks": obj(
            {
                "total": INT,
                "done": INT,
                "pending": INT,
                "inProgress": INT,
                "blocked": INT,
                "completionRate": NUMBER,
            }
        ),
        "agents": obj({"total": INT, "online": INT}),
        "contextCount": INT,
        "events": obj({"total": INT, "lastDays": INT, "perDay": ANY}),
    }
)
DIFF = obj(
    {
        "id": TEXT,
        "current": CONTEXT,
        "previous": opt(CONTEXT),
        "diff": obj(
            {
                "summaryChanged": BOOL,
                "fromSummary": opt(STR),
                "toSummary": opt(STR),
                "payload": obj({"added": ANY, "removed": ANY, "changed": ANY}),
                "fromVersion": opt(VERSION),
                "toVersion": VERSION,
            }
        ),
    }
)
SEARCH = obj(
    {
        "q": STR,
        "hits": list_of(
            obj(
                {
                    "kind": one_of("task", "context", "event"),
                    "id": TEXT,
                    "score": NUMBER,
                    "snippet": STR,
                }
            )
        ),
    }
)
TEMPLATES = obj(
    {"templates": list_of(obj({"id": TEXT, "name": STR, "description": STR, "taskCount": INT}))}
)
LEASE = obj(
    {
        "id": TEXT,
        "path": TEXT,
        "mode": one_of("exclusive", "shared"),
        "holder": STR,
        "taskId": opt(STR),
        "reason": opt(STR),
        "expiresAt": TIMESTAMP,
    }
)
CONFLICT = obj(
    {"path": STR, "holder": STR, "mode": one_of("exclusive", "shared"), "expiresAt": TIMESTAMP}
)
LEASE_CLAIM = obj({"granted": BOOL, "lease": opt(LEASE), "conflicts": list_of(CONFLICT)})
LEASE_RELEASE = obj({"released": BOOL, "path": STR})
DELIVERY_STATE = one_of("stored", "read", "acked", "expired")
MESSAGE = obj(
    {
        "messageId": TEXT,
        "from": STR,
        "to": STR,
        "subject": opt(STR),
        "body": STR,
        "replyTo": opt(STR),
        "at": TIMESTAMP,
        "state": DELIVERY_STATE,
    }
)
SENT = obj(
    {
        "messages": list_of(
            obj(
                {
                    "messageId": TEXT,
                    "to": STR,
                    "recipients": list_of(
                        obj({"agentId": STR, "state": DELIVERY_STATE, "at": opt(TIMESTAMP)})
                    ),
                }
            )
        )
    }
)
HANDOFF = obj(
    {
        "id": TEXT,
        "taskId": TEXT,
        "from": STR,
        "to": STR,
        "note": opt(STR),
        "contextIds": list_of(STR),
        "status": one_of("offered", "accepted", "declined"),
        "at": TIMESTAMP,
    }
)
DRIFT = obj(
    {
        "path": STR,
        "severity": one_of("SAFE", "MINOR", "CRITICAL"),
        "changed": BOOL,
        "holder": opt(STR),
        "since": opt(STR),
        "message": STR,
    }
)
