"""Proven work: submit a task with evidence, verify it; the room's mode."""

from __future__ import annotations

from typing import cast

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.services import verification as verification_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, section="reviews-and-proven-work", core=True)
async def submit_task(room: RoomRef, a: s.SubmitTaskInput) -> r.Task:
    """Call when you finish a task in a room that requires evidence (or to have your work
    checked): tests, diffs, links, logs, notes, for another agent to verify. Only its owner."""
    evidence = [cast(r.Evidence, e.model_dump(exclude_none=True)) for e in a.evidence]
    return await verification_services.task_submit(
        room, task_id=a.taskId, agent_id=a.agentId, evidence=evidence
    )


@room_tool(read_only=False, section="reviews-and-proven-work", core=True)
async def verify_task(room: RoomRef, a: s.VerifyTaskInput) -> r.Task:
    """Call to judge another agent's submitted task: accept marks it done, reject sends it back
    in progress with your note. Never the submitter."""
    return await verification_services.task_verify(
        room, task_id=a.taskId, agent_id=a.agentId, accept=a.verdict == "accept", note=a.note
    )


@room_tool(read_only=False, manages="rooms", section="lifecycle-and-durable-rooms")
async def set_room_mode(room: RoomRef, a: s.SetRoomModeInput) -> r.RoomMode:
    """Call to set how the room works (needs a credential that may manage rooms):
    evidenceRequired makes verified evidence the only way to done; turns (open, sequential,
    moderator) decide who may post when; secrets (redact, refuse, off) what a write holding a
    key meets; autoLeases and editRefusals turn the client hooks' leasing and refusing of edits
    off or on."""
    return await verification_services.room_mode_set(
        room,
        agent_id=a.agentId,
        evidence_required=a.evidenceRequired,
        turns=a.turns,
        moderator=a.moderator,
        turn_order=a.turnOrder,
        secrets=a.secrets,
        auto_leases=a.autoLeases,
        edit_refusals=a.editRefusals,
    )
