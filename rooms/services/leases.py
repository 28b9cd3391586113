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
from typing import Any, cast

from rooms import clock, errors, idempotency
from rooms.ids import new_id
from rooms.overlaps import (
    lease_decide,
    matched,
    on_lease_view,
)
from rooms.paths import path_normalize
from rooms.quotas import quota_error
from rooms.records import lease_from_json
from rooms.refs import RoomRef
from rooms.results import (
    FileRead,
    Lease,
    LeaseClaimed,
    LeaseConflict,
    LeaseReleased,
)
from rooms.selectors.leases import file_one, leases_now
from rooms.selectors.plan import task_not_found
from rooms.store import leases as leases_store
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

    async def claim(view: leases_store.LeaseView) -> leases_store.LeaseStep:
        now = clock.now_ms()
        return await leases_store.lease_claim(
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
            actor=room.actor,
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


async def _lease_not_found(room: RoomRef, ref: str) -> errors.LeaseNotFoundError:
    live = await leases_now(room, None)
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
    step = await leases_store.lease_change(
        room.keys,
        agent_id=agent_id,
        lease_id=lease_id,
        path=normal,
        release=release,
        ttl_ms=ttl_seconds * 1000,
        now_ms=clock.now_ms(),
        keyed=room.call,
        actor=room.actor,
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


async def file_read_note(room: RoomRef, *, agent_id: str, path: str, sha256: str) -> FileRead:
    normal = file_one(path)
    # A retry with the same idempotencyKey answers the first call's time.
    now = int(idempotency.minted(room.call, {"at_ms": clock.now_ms()})["at_ms"])
    digest = sha256.lower()
    used = await leases_store.file_read_note(
        room.keys,
        agent_id=agent_id,
        path=normal,
        record_json=json.dumps({"sha256": digest, "at_ms": now}),
        keyed=room.call,
        actor=room.actor,
    )
    if used is not None:
        raise quota_error("ROOM_FILE_READS_MAX", used)
    now = int(idempotency.minted_final(room.call, {"at_ms": now})["at_ms"])
    return {"path": normal, "sha256": digest, "at": clock.iso_from_ms(now)}
