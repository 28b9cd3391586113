"""The few steps many checks start from (a task, a context entry, an event, an agent that
joined), each made only of protocol tools and with every argument roomd requires, so that
a check's setup works on any server and only the tool under test can fail it."""

from __future__ import annotations

import secrets
from typing import Any

from conformance.kit import Answer, Ctx, Failed, Room, clip, expect

NOTE = {"text": "written by the conformance kit"}
MISSING = "zzconformancemissing"  # no server mints this id


def word() -> str:
    """A word that occurs nowhere else (for search), letters and digits only."""
    return "zq" + secrets.token_hex(5)


async def new_task(room: Room, ctx: Ctx, **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "title": f"conformance {ctx.unique('task')}",
        "description": "made by the conformance kit",
        **extra,
    }
    task: dict[str, Any] = await room.call("add_task", **args)
    expect(isinstance(task, dict) and task.get("id"), f"add_task returned no task id: {task!r}")
    return task


async def owned_task(room: Room, ctx: Ctx, agent: str) -> dict[str, Any]:
    """A task in progress owned by `agent`, through update_task (a protocol tool)."""
    task = await new_task(room, ctx)
    owned: dict[str, Any] = await room.call(
        "update_task", taskId=task["id"], status="in_progress", owner=agent
    )
    return owned


async def new_context(
    room: Room,
    ctx: Ctx,
    *,
    author: str = "alice",
    summary: str | None = None,
    payload: dict[str, Any] | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = await room.call(
        "write_context",
        type="note",
        summary=summary or f"conformance {ctx.unique('note')}",
        consuming_agents=["bob"],
        payload=payload or NOTE,
        author=author,
    )
    expect(isinstance(entry, dict) and entry.get("id"), f"write_context returned no id: {entry!r}")
    return entry


async def new_event(
    room: Room, ctx: Ctx, *, sender: str = "alice", payload: dict[str, Any] | None = None
) -> dict[str, Any]:
    event: dict[str, Any] = await room.call(
        "post_event",
        type=ctx.unique("conformance"),
        from_=sender,
        to="all",
        payload=payload if payload is not None else {"by": "conformance"},
    )
    expect(isinstance(event, dict) and event.get("id"), f"post_event returned no id: {event!r}")
    return event


async def joined(room: Room, agent: str, **extra: Any) -> None:
    """`agent` is present in the room (messages, presence and `*` need it)."""
    await room.call("heartbeat", agentId=agent, **extra)


async def drained(room: Room, agent: str, *, limit: int = 100) -> list[dict[str, Any]]:
    """Every event still unread by `agent`, read until the cursor is at the end."""
    events: list[dict[str, Any]] = []
    for _ in range(1000):
        got = await room.call("get_unread_events", agentId=agent, limit=limit)
        batch = got.get("events", []) if isinstance(got, dict) else []
        if not batch:
            return events
        events.extend(batch)
    raise Failed("get_unread_events never reached the end of the log")


async def review(room: Room, ctx: Ctx, reviewer: str = "bob") -> dict[str, Any]:
    task = await new_task(room, ctx)
    made: dict[str, Any] = await room.call(
        "request_review",
        targetType="task",
        targetId=task["id"],
        requestedBy="alice",
        reviewer=reviewer,
        note="please look",
    )
    return made


# Words of a refusal that is about the credential, not the review: the server may let only
# a key bound to the reviewer resolve a review (roomd does).
BINDING_WORDS = ("bound", "bind", "key", "credential")


async def resolve(room: Room, ctx: Ctx, tool: str, **args: Any) -> tuple[Room, Answer]:
    """approve or reject as `agentId`: with the team's key first and, when the server
    refuses that for the credential, with a key bound to that agent (minted for the run,
    or the check skips saying why). Returns the room as whoever acted, and the answer."""
    answer = await room.attempt(tool, **args)
    said = answer.text.lower()
    if answer.ok or not any(word in said for word in BINDING_WORDS):
        return room, answer
    agent = str(args["agentId"])
    bound = await ctx.bound(
        agent, why=f"{tool} as {agent} with the team's key was refused ({clip(answer.text, 120)})"
    )
    acting = bound.room(room.room_id)
    return acting, await acting.attempt(tool, **args)


async def lease(room: Room, ctx: Ctx, agent: str = "alice", **extra: Any) -> dict[str, Any]:
    """A granted exclusive lease on a path of this check's own."""
    path = f"conf/{ctx.unique('dir')}/**"
    got: dict[str, Any] = await room.call("lease_claim", agentId=agent, path=path, **extra)
    expect(got.get("granted") is True, f"lease_claim of a free path was not granted: {got!r}")
    lease_: dict[str, Any] = got["lease"]
    return lease_


async def submitted(room: Room, ctx: Ctx, agent: str = "alice") -> dict[str, Any]:
    task = await owned_task(room, ctx, agent)
    done: dict[str, Any] = await room.call(
        "submit_task",
        taskId=task["id"],
        agentId=agent,
        evidence=[{"kind": "test", "text": "12 passed"}],
    )
    return done


async def handoff(room: Room, ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
    """A task owned by alice, offered to bob; returns (task, handoff)."""
    task = await owned_task(room, ctx, "alice")
    offered: dict[str, Any] = await room.call(
        "handoff_task", taskId=task["id"], from_="alice", to="bob", note="over to you"
    )
    return task, offered


async def message(room: Room, to: str = "bob", **extra: Any) -> dict[str, Any]:
    await joined(room, to)
    sent: dict[str, Any] = await room.call(
        "send_message", from_="alice", to=to, body="from the conformance kit", **extra
    )
    return sent
