"""The plan's tools: tasks, claims, dependencies, priorities."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import plan as plan_selectors
from rooms.services import events as events_services
from rooms.services import plan as plan_services
from rooms.tools.rows import room_tool


@room_tool(read_only=True, section="plan", core=True, roomd=True)
async def read_plan(room: RoomRef, a: s.ReadPlanInput) -> r.Plan:
    """Call at the start of a session, or to see the whole picture: every task in plan order
    with status, owner and dependencies."""
    return await plan_selectors.plan_view(room)


@room_tool(read_only=False, idempotent=False, section="plan", core=True, roomd=True)
async def add_task(room: RoomRef, a: s.AddTaskInput) -> r.Task:
    """Call to add work: a pending, unowned task. depends_on: ids of tasks that must be done
    first (unknown ids are kept and named in `warnings`)."""
    return await plan_services.task_add(
        room,
        title=a.title,
        description=a.description,
        depends_on=a.depends_on,
        priority=a.priority,
        agent_id=a.agentId,
    )


@room_tool(read_only=False, idempotent=False, section="plan", core=True, roomd=True)
async def update_task(room: RoomRef, a: s.UpdateTaskInput) -> r.Task:
    """Call when a task you own changes: status (pending/in_progress/done/blocked), owner (""
    clears it), a note, the description. To take a task, claim_task it instead.
    expectedVersion (the task's `version`) refuses a stale write."""
    return await plan_services.task_update(
        room,
        task_id=a.taskId,
        status=a.status,
        owner_given="owner" in a.model_fields_set,
        owner=a.owner,
        note=a.note,
        description=a.description,
        agent_id=a.agentId,
        expected_version=a.expectedVersion,
    )


@room_tool(read_only=False, section="claims-and-safe-retries", core=True)
async def claim_task(room: RoomRef, a: s.ClaimTaskInput) -> r.Task:
    """Call before you work on a task: you own it, in_progress, if nobody else does, it is not
    done and its dependencies are done. Of agents claiming at once exactly one wins; the
    others are told who. With leaseSeconds the claim lapses if you go quiet."""
    return await plan_services.task_claim(
        room, task_id=a.taskId, agent_id=a.agentId, lease_seconds=a.leaseSeconds, paths=a.paths
    )


@room_tool(read_only=False, idempotent=False, section="claims-and-safe-retries", core=True)
async def release_task(room: RoomRef, a: s.ReleaseTaskInput) -> r.Task:
    """Call when you stop a task you will not finish: pending and unowned again, your note kept
    on it for whoever takes it next."""
    return await plan_services.task_release(room, task_id=a.taskId, agent_id=a.agentId, note=a.note)


@room_tool(read_only=True, section="plan", roomd=True)
async def get_task(room: RoomRef, a: s.GetTaskInput) -> r.Task:
    """Call to read one task by id."""
    return await plan_selectors.task_get(room, task_id=a.taskId)


@room_tool(read_only=True, section="plan", core=True, roomd=True)
async def get_unblocked_tasks(room: RoomRef, a: s.GetUnblockedTasksInput) -> list[r.Task]:
    """Call when you need work: pending tasks whose dependencies are done, by priority then
    plan order (with agentId, tasks others own are left out). Then claim_task one."""
    return await plan_selectors.task_list_unblocked(room, agent_id=a.agentId)


@room_tool(read_only=True, section="plan", roomd=True)
async def get_my_tasks(room: RoomRef, a: s.GetMyTasksInput) -> list[r.Task]:
    """Call to see the tasks you own (owner == agentId)."""
    return await plan_selectors.task_list_for_agent(room, agent_id=a.agentId)


@room_tool(read_only=True, idempotent=False, section="plan", core=True, roomd=True)
async def get_my_summary(room: RoomRef, a: s.GetMySummaryInput) -> r.Summary:
    """Call at the start of a session or after a break: your tasks, your unread events (up to
    50, each given once), how many context entries changed since, handoffs offered to you,
    your unread messages, who is present."""
    return await events_services.agent_summary(room, agent_id=a.agentId)


@room_tool(read_only=False, idempotent=False, section="plan", roomd=True)
async def delete_task(room: RoomRef, a: s.DeleteTaskInput) -> r.TaskDeletedResult:
    """Call to remove a task that should not be done (its claim goes with it). Tasks that
    depended on it are named in `warnings`; expectedVersion refuses it if the task changed since
    you read it. Emits task_deleted."""
    return await plan_services.task_delete(
        room, task_id=a.taskId, agent_id=a.agentId, expected_version=a.expectedVersion
    )


@room_tool(read_only=False, section="plan", roomd=True)
async def set_task_priority(room: RoomRef, a: s.SetTaskPriorityInput) -> r.Task:
    """Call to reorder work: lower runs first in get_unblocked_tasks. Emits task_updated."""
    return await plan_services.task_set_priority(
        room,
        task_id=a.taskId,
        priority=a.priority,
        agent_id=a.agentId,
        expected_version=a.expectedVersion,
    )


@room_tool(read_only=False, section="plan", roomd=True)
async def add_dependency(room: RoomRef, a: s.AddDependencyInput) -> r.Task:
    """Call when a task must wait for another (dependsOn must be done first). One already there
    changes nothing; one that would close a cycle is refused, naming the cycle. Emits
    task_updated."""
    return await plan_services.task_add_dependency(
        room,
        task_id=a.taskId,
        depends_on=a.dependsOn,
        agent_id=a.agentId,
        expected_version=a.expectedVersion,
    )
