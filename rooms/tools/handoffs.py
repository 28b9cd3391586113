"""Handoffs: offer a task with its context to another agent, who accepts or declines."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.services import handoffs as handoffs_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, section="handoffs", core=True)
async def handoff_task(room: RoomRef, a: s.HandoffTaskInput) -> r.Handoff:
    """Call when another agent should finish your task: offer it with a note and the context it
    needs; once it accepts, the task, its claim and its file leases are its. Only the owner;
    one offer at a time."""
    return await handoffs_services.handoff_offer(
        room,
        task_id=a.taskId,
        sender=a.from_,
        receiver=a.to,
        note=a.note,
        context_ids=a.contextIds,
    )


@room_tool(read_only=False, section="handoffs", core=True)
async def accept_handoff(room: RoomRef, a: s.AcceptHandoffInput) -> r.Handoff:
    """Call to take a handoff offered to you (get_my_summary lists them): the task, its claim
    and its file leases become yours in one step."""
    return await handoffs_services.handoff_answer(
        room, handoff_id=a.handoffId, agent_id=a.agentId, accept=True, note=a.note
    )


@room_tool(read_only=False, section="handoffs", core=True)
async def decline_handoff(room: RoomRef, a: s.DeclineHandoffInput) -> r.Handoff:
    """Call to refuse a handoff offered to you, saying why; the task stays with its owner.
    Final."""
    return await handoffs_services.handoff_answer(
        room, handoff_id=a.handoffId, agent_id=a.agentId, accept=False, note=a.note
    )
