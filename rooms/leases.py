"""File leases: an agent's claim on a path or a glob of the repository, for a while.

An exclusive lease keeps every other agent off overlapping paths; shared leases coexist
with each other and keep exclusive ones off. A lease lapses at its expiry (it is never
shown or counted after it) unless its holder renews it. Which leases a path overlaps is
decided in the web process (rooms/overlaps.py, rooms/paths.py: conservative), and the grant
is taken only if no lease was granted since that view, so of agents claiming overlapping
paths at once exactly one exclusive claim wins.
"""

from __future__ import annotations

import json
from typing import Any, Literal, cast

from rooms import clock, errors, idempotency, store
from rooms.overlaps import (
    lease_decide,
    leases_live,
    leases_overlapping,
    matched,
    on_lease_view,
)
from rooms.paths import is_glob, path_normalize
from rooms.quotas import quota_error
from rooms.records import lease_from_json
from rooms.refs import RoomRef
from rooms.results import (
    Drift,
    FileRead,
    Lease,
    LeaseCheck,
    LeaseClaimed,
    LeaseConflict,
    LeaseList,
    LeaseReleased,
    RoomState,
)
from rooms.selectors import event_list, presence_list, task_not_found
from rooms.services import new_id
from rooms.suggest import unknown_id

HINT_SAMPLE = 100


def _conflicts(raw: str) -> list[LeaseConflict]:
    return [
        {
            "path": str(c["path"]),
            "holder": str(c["holder"]),
            "mode": c["mode"],
            "expiresAt": clock.iso_from_ms(int(c["expires_ms"])),
        }
        for c in cast(list[dict[str, Any]], json.loads(raw) or [])
    ]


async def lease_claim(
    room: RoomRef,
    *,
    agent_id: str,
    path: str,
    mode: str,
    ttl_seconds: int,
    task_id: str | None,
    reason: str | None,
) -> LeaseClaimed:
    normal = path_normalize(path)
    lease_id = new_id("l_")

    async def claim(view: store.LeaseView) -> store.LeaseStep:
        now = clock.now_ms()
        return await store.lease_claim(
            room.keys,
            lease_id=lease_id,
            agent_id=agent_id,
            path=normal,
            mode=mode,
            ttl_ms=ttl_seconds * 1000,
            task_id=task_id,
            reason=reason,
            now_ms=now,
            decided=await matched(
                view,
                lambda: lease_decide(
                    view, agent_id=agent_id, paths=[normal], mode=mode, now_ms=now
                ),
            ),
            keyed=room.call,
        )

    step = await on_lease_view(room.keys, claim)
    if step.outcome == "unknown_task":
        assert task_id is not None
        missing = await task_not_found(room, task_id)
        hint = missing.message.split(". ", 1)[1] if ". " in missing.message else ""
        raise errors.TaskNotFoundError(
            errors.LEASE_UNKNOWN_TASK.format(task_id=task_id, hint=hint),
            extra={**missing.extra, "field": "taskId"},
        )
    if step.outcome == "quota":
        raise quota_error("ROOM_LEASES_MAX", step.used)
    if step.outcome == "conflict":
        conflicts = _conflicts(step.conflicts_json)
        holders = ", ".join(
            dict.fromkeys(f'"{c["holder"]}" ({c["mode"]}, {c["path"]})' for c in conflicts)
        )
        hint = errors.LEASE_REFUSED_HINT.format(
            path=normal, holders=holders, until=max(c["expiresAt"] for c in conflicts)
        )
        return {"granted": False, "lease": None, "conflicts": conflicts, "hint": hint}
    claimed: LeaseClaimed = {
        "granted": True,
        "lease": lease_from_json(step.lease_json),
        "conflicts": [],
    }
    if step.outcome == "renewed":
        claimed["renewed"] = True
    return claimed


async def _leases_now(room: RoomRef, overlapping: str | None) -> list[str]:
    """The live leases' JSON, all of them or those whose path overlaps `overlapping`."""
    view, now = await store.leases_view(room.keys), clock.now_ms()
    if overlapping is None:
        return [raw for _, raw in leases_live(view, now)]
    found = await matched(view, lambda: leases_overlapping(view, overlapping, now))
    return [raw for _, raw in found]


async def _lease_not_found(room: RoomRef, ref: str) -> errors.LeaseNotFoundError:
    live = await _leases_now(room, None)
    sample = [
        (lease["id"], f"{lease['path']}, {lease['holder']}")
        for lease in (lease_from_json(raw) for raw in live[:HINT_SAMPLE])
    ]
    found = unknown_id(
        ref,
        sample,
        closest_hint=errors.LEASE_HINT_CLOSEST,
        none_close_hint=errors.LEASE_HINT_EMPTY,
        empty_hint=errors.LEASE_HINT_EMPTY,
        fallback=True,
    )
    return errors.LeaseNotFoundError(
        errors.LEASE_NOT_FOUND.format(ref=json.dumps(ref), hint=found.hint),
        extra={"lease": ref, "closest": found.closest},
    )


async def _lease_change(
    room: RoomRef,
    *,
    agent_id: str,
    lease_id: str | None,
    path: str | None,
    release: bool,
    ttl_seconds: int,
) -> Lease:
    normal = path_normalize(path) if path is not None and lease_id is None else None
    step = await store.lease_change(
        room.keys,
        agent_id=agent_id,
        lease_id=lease_id,
        path=normal,
        release=release,
        ttl_ms=ttl_seconds * 1000,
        now_ms=clock.now_ms(),
        keyed=room.call,
    )
    if step.outcome == "unknown":
        raise await _lease_not_found(room, lease_id or normal or "")
    lease = lease_from_json(step.lease_json)
    if step.outcome == "not_holder":
        raise errors.LeaseRefusedError(
            errors.LEASE_NOT_HOLDER.format(
                lease_id=lease["id"],
                path=lease["path"],
                holder=lease["holder"],
                agent=agent_id,
                verb="release" if release else "renew",
            ),
            extra={"holder": lease["holder"], "leaseId": lease["id"]},
        )
    return lease


async def lease_renew(
    room: RoomRef, *, agent_id: str, lease_id: str | None, path: str | None, ttl_seconds: int
) -> Lease:
    return await _lease_change(
        room,
        agent_id=agent_id,
        lease_id=lease_id,
        path=path,
        release=False,
        ttl_seconds=ttl_seconds,
    )


async def lease_release(
    room: RoomRef, *, agent_id: str, lease_id: str | None, path: str | None
) -> LeaseReleased:
    lease = await _lease_change(
        room, agent_id=agent_id, lease_id=lease_id, path=path, release=True, ttl_seconds=0
    )
    return {"released": True, "path": lease["path"]}


async def lease_check(room: RoomRef, *, path: str, agent_id: str | None) -> LeaseCheck:
    normal = path_normalize(path)
    live = [lease_from_json(raw) for raw in await _leases_now(room, normal)]
    live.sort(key=lambda lease: (lease["holder"] == agent_id, lease["expiresAt"]))
    others = [lease for lease in live if lease["holder"] != agent_id]
    return {"path": normal, "free": not others, "leases": live}


async def lease_list(room: RoomRef, *, agent_id: str | None) -> LeaseList:
    live = [lease_from_json(raw) for raw in await _leases_now(room, None)]
    if agent_id is not None:
        live = [lease for lease in live if lease["holder"] == agent_id]
    live.sort(key=lambda lease: (lease["path"], lease["holder"]))
    return {"leases": live, "count": len(live)}


# --- Drift: did the file change since the agent read it, and does someone else hold it?

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


def _one_file(path: str) -> str:
    normal = path_normalize(path)
    if is_glob(normal):
        raise errors.ToolArgumentsError(GLOB_NOT_A_FILE.format(path=normal))
    return normal


async def file_read_note(room: RoomRef, *, agent_id: str, path: str, sha256: str) -> FileRead:
    normal = _one_file(path)
    # A retry with the same idempotencyKey answers the first call's time.
    now = int(idempotency.minted(room.call, {"at_ms": clock.now_ms()})["at_ms"])
    digest = sha256.lower()
    used = await store.file_read_note(
        room.keys,
        agent_id=agent_id,
        path=normal,
        record_json=json.dumps({"sha256": digest, "at_ms": now}),
        keyed=room.call,
    )
    if used is not None:
        raise quota_error("ROOM_FILE_READS_MAX", used)
    now = int(idempotency.minted_final(room.call, {"at_ms": now})["at_ms"])
    return {"path": normal, "sha256": digest, "at": clock.iso_from_ms(now)}


async def drift_check(room: RoomRef, *, agent_id: str, path: str, sha256: str) -> Drift:
    """SAFE: no noted read, or the file is as read. MINOR: it changed, nobody else leases
    it. CRITICAL: it changed, and another agent holds a lease on it now."""
    normal = _one_file(path)
    baseline_json, leases = await store.file_drift(room.keys, agent_id=agent_id, path=normal)
    view, now = store.LeaseView("", leases), clock.now_ms()
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


# --- AgentRoom's room_state -------------------------------------------------------------------

ROOM_STATE_EVENTS = 200  # the newest events room_state looks at for broadcasts
ROOM_STATE_BROADCASTS = 20


async def room_state(room: RoomRef) -> RoomState:
    """Who holds what (live leases), who is here, and the broadcasts among the newest
    ROOM_STATE_EVENTS events: bounded however long the log."""
    recent = await event_list(room, since=None, limit=ROOM_STATE_EVENTS, order="desc")
    return {
        "leases": (await lease_list(room, agent_id=None))["leases"],
        "agents": await presence_list(room),
        "recentBroadcasts": [e for e in recent if e["type"] == "broadcast"][:ROOM_STATE_BROADCASTS],
    }
