"""File leases and drift: who works on which paths, and did a file change since it was read."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import leases as leases_selectors
from rooms.services import leases as leases_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, section="file-leases-and-drift", core=True)
async def lease_claim(room: RoomRef, a: s.LeaseClaimInput) -> r.LeaseClaimed:
    """Call before you edit a file or glob (src/api/**): exclusive (the default) keeps others
    off overlapping paths, shared coexists with shared. Refused naming the holders and until
    when. Lapses after ttlSeconds unless a call naming you renews it."""
    return await leases_services.lease_claim(
        room,
        agent_id=a.agentId,
        path=a.path,
        mode=a.mode,
        ttl_seconds=a.ttlSeconds,
        task_id=a.taskId,
        reason=a.reason,
    )


@room_tool(read_only=False, section="file-leases-and-drift")
async def lease_renew(room: RoomRef, a: s.LeaseRenewInput) -> r.Lease:
    """Call to keep a lease past its term: your lease (by leaseId, or by its path) lasts
    ttlSeconds from now. Only its holder."""
    return await leases_services.lease_renew(
        room, agent_id=a.agentId, lease_id=a.leaseId, path=a.path, ttl_seconds=a.ttlSeconds
    )


@room_tool(read_only=False, section="file-leases-and-drift")
async def lease_release(room: RoomRef, a: s.LeaseReleaseInput) -> r.LeaseReleased:
    """Call when your edit is done: give up your lease (by leaseId, or by its path). Only its
    holder."""
    return await leases_services.lease_release(
        room, agent_id=a.agentId, lease_id=a.leaseId, path=a.path
    )


@room_tool(read_only=True, section="file-leases-and-drift")
async def lease_check(room: RoomRef, a: s.LeaseCheckInput) -> r.LeaseCheck:
    """Call to see whether a path is free to edit: the live leases overlapping it (other holders
    first); free when none is another agent's."""
    return await leases_selectors.lease_check(room, path=a.path, agent_id=a.agentId)


@room_tool(read_only=True, section="file-leases-and-drift")
async def lease_list(room: RoomRef, a: s.LeaseListInput) -> r.LeaseList:
    """Call to see who is editing what: the room's live leases (one agent's, with agentId):
    path, mode, holder, task, expiry."""
    return await leases_selectors.lease_list(room, agent_id=a.agentId)


@room_tool(read_only=False, section="file-leases-and-drift")
async def note_read(room: RoomRef, a: s.NoteReadInput) -> r.FileRead:
    """Call after you read a file you may edit later: records its SHA-256, which drift_check
    compares against."""
    return await leases_services.file_read_note(
        room, agent_id=a.agentId, path=a.path, sha256=a.sha256
    )


@room_tool(read_only=True, section="file-leases-and-drift")
async def drift_check(room: RoomRef, a: s.DriftCheckInput) -> r.Drift:
    """Call before you edit a file you read earlier, with its SHA-256 now: SAFE (unchanged, or
    no read noted), MINOR (changed, nobody else leases it: read it again), CRITICAL (changed,
    and another agent leases it: read it again and agree with them first)."""
    return await leases_selectors.drift_check(
        room, agent_id=a.agentId, path=a.path, sha256=a.sha256
    )
