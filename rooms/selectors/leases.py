"""File leases as they stand: check one path, list them; drift since an agent read a file."""

from __future__ import annotations

import json
from typing import Literal

from rooms import clock, errors
from rooms.overlaps import (
    leases_live,
    leases_overlapping,
    matched,
)
from rooms.paths import is_glob, path_normalize
from rooms.records import lease_from_json
from rooms.refs import RoomRef
from rooms.results import (
    Drift,
    LeaseCheck,
    LeaseList,
)
from rooms.store import leases as leases_store


async def leases_now(room: RoomRef, overlapping: str | None) -> list[str]:
    """The live leases' JSON, all of them or those whose path overlaps `overlapping`."""
    view, now = await leases_store.leases_view(room.keys), clock.now_ms()
    if overlapping is None:
        return [raw for _, raw in leases_live(view, now)]
    found = await matched(view, lambda: leases_overlapping(view, overlapping, now))
    return [raw for _, raw in found]


async def lease_check(room: RoomRef, *, path: str, agent_id: str | None) -> LeaseCheck:
    normal = path_normalize(path)
    live = [lease_from_json(raw) for raw in await leases_now(room, normal)]
    live.sort(key=lambda lease: (lease["holder"] == agent_id, lease["expiresAt"]))
    others = [lease for lease in live if lease["holder"] != agent_id]
    return {"path": normal, "free": not others, "leases": live}


async def lease_list(room: RoomRef, *, agent_id: str | None) -> LeaseList:
    live = [lease_from_json(raw) for raw in await leases_now(room, None)]
    if agent_id is not None:
        live = [lease for lease in live if lease["holder"] == agent_id]
    live.sort(key=lambda lease: (lease["path"], lease["holder"]))
    return {"leases": live, "count": len(live)}


GLOB_NOT_A_FILE = "path {path!r} is a glob; note_read and drift_check name one file."


NO_BASELINE = (
    "No read of {path} is noted for {agent}: nothing to compare. Call note_read with the "
    "file's sha256 when you read it."
)


UNCHANGED = "{path} is as {agent} read it at {since}."


CHANGED_MINOR = (
    "{path} changed since {agent} read it at {since}; nobody else leases it. Read it again "
    "before you edit it."
)


CHANGED_CRITICAL = (
    "{path} changed since {agent} read it at {since}, and {holder} holds {mode} lease on "
    "{lease_path} until {until}. Read it again and agree with {holder} before you edit it."
)


def file_one(path: str) -> str:
    normal = path_normalize(path)
    if is_glob(normal):
        raise errors.ToolArgumentsError(GLOB_NOT_A_FILE.format(path=normal))
    return normal


async def drift_check(room: RoomRef, *, agent_id: str, path: str, sha256: str) -> Drift:
    """SAFE: no noted read, or the file is as read. MINOR: it changed, nobody else leases
    it. CRITICAL: it changed, and another agent holds a lease on it now."""
    normal = file_one(path)
    baseline_json, leases = await leases_store.file_drift(room.keys, agent_id=agent_id, path=normal)
    view, now = leases_store.LeaseView("", leases), clock.now_ms()
    overlapping = await matched(view, lambda: leases_overlapping(view, normal, now))
    others = [(held, raw) for held, raw in overlapping if held["holder"] != agent_id]
    # An exclusive lease first: it is the one that keeps the agent off the file.
    others.sort(key=lambda pair: pair[0]["mode"] != "exclusive")
    lease = lease_from_json(others[0][1]) if others else None
    holder = lease["holder"] if lease else None
    if baseline_json is None:
        message = NO_BASELINE.format(path=normal, agent=agent_id)
        return {
            "path": normal,
            "severity": "SAFE",
            "changed": False,
            "holder": holder,
            "since": None,
            "message": message,
        }
    baseline = json.loads(baseline_json)
    since = clock.iso_from_ms(int(baseline["at_ms"]))
    changed = baseline["sha256"] != sha256.lower()
    facts = {"path": normal, "agent": agent_id, "since": since}
    severity: Literal["SAFE", "MINOR", "CRITICAL"]
    if not changed:
        severity, message = "SAFE", UNCHANGED.format(**facts)
    elif lease is None:
        severity, message = "MINOR", CHANGED_MINOR.format(**facts)
    else:
        severity = "CRITICAL"
        message = CHANGED_CRITICAL.format(
            **facts,
            holder=lease["holder"],
            mode="an exclusive" if lease["mode"] == "exclusive" else "a shared",
            lease_path=lease["path"],
            until=lease["expiresAt"],
        )
    return {
        "path": normal,
        "severity": severity,
        "changed": changed,
        "holder": holder,
        "since": since,
        "message": message,
    }
