"""Cross-team isolation, with a key of a second team (KEY_B). Team A works in a room of its
own; team B, naming the same roomId, must not see or change anything of A's.

A server may answer B in one of two ways — refuse ("room not found or access denied", as
ours does) or give B a different, empty room of its own — so every check asserts only
what holds for both: nothing of A's reaches B, and nothing B does reaches A.
"""

from __future__ import annotations

import json
from typing import Any

from conformance import shapes as s
from conformance import steps
from conformance.kit import Answer, Ctx, Room, check, expect, names


def _leaks(answer: Answer, *private: str) -> list[str]:
    """Which of A's ids or words a successful answer to B carries (a refusal carries none
    of A's data by definition, though it may echo the id B itself sent)."""
    return [] if not answer.ok else [s for s in private if s in answer.text]


async def _team_a_room(ctx: Ctx) -> tuple[Room, dict[str, Any]]:
    """A's room with one of everything; returns the room and A's ids and a word only A wrote."""
    room = ctx.room("team")
    word = steps.word()
    task = await steps.new_task(room, ctx, title=f"team A only {word}")
    entry = await steps.new_context(room, ctx, summary=f"team A only {word}")
    event = await steps.new_event(room, ctx, payload={"note": word})
    await room.call("set_shared_var", key="team-a-colour", value=word, agentId="alice")
    return room, {"task": task["id"], "context": entry["id"], "event": event["id"], "word": word}


@check(
    "teams: another team reads nothing of this team's room",
    "read_plan",
    "read_events",
    needs_b=True,
)
async def team_reads(ctx: Ctx) -> str:
    """Rooms are the unit of tenancy: one team's plan is another's secret."""
    room, a = await _team_a_room(ctx)
    b = ctx.b(room)
    private = (a["task"], a["context"], a["event"], a["word"])
    reads: list[tuple[str, dict[str, Any]]] = [
        ("read_plan", {}),
        ("read_events", {"limit": 100}),
        ("get_unread_events", {"agentId": "bob"}),
        ("list_context", {}),
        ("get_task", {"taskId": a["task"]}),
        ("read_context", {"id": a["context"]}),
        ("get_shared_var", {"key": "team-a-colour"}),
        ("list_shared_vars", {}),
        ("search", {"q": a["word"]}),
        ("get_room_info", {}),
    ]
    offered = b.conn.offered
    answered = []
    for tool, args in reads:
        if tool not in offered:
            continue
        got = await b.attempt(tool, **args)
        if tool == "search" and got.ok:  # its answer echoes q, which B itself sent
            got = Answer(True, got.value, json.dumps(got.value.get("hits")), got.structured)
        leaked = _leaks(got, *private)
        expect(not leaked, f"team B's {tool} shows team A's {leaked}")
        answered.append(f"{tool}: {'ok' if got.ok else 'refused'}")
    refused = sum(1 for line in answered if line.endswith("refused"))
    return f"{refused} of {len(answered)} reads refused, none shows A's data"


@check(
    "teams: another team's writes never reach this team's room",
    "add_task",
    "post_event",
    "read_plan",
    needs_b=True,
)
async def team_writes(ctx: Ctx) -> None:
    """A write by the wrong team must land nowhere A can see, or nowhere at all."""
    room, a = await _team_a_room(ctx)
    b = ctx.b(room)
    word = steps.word()
    await b.attempt("add_task", title=f"from team B {word}", description="")
    await b.attempt("post_event", type="intrusion", from_="mallory", to="all", payload={"w": word})
    await b.attempt("update_task", taskId=a["task"], status="done", owner="mallory")
    await b.attempt("set_shared_var", key="team-a-colour", value=word, agentId="mallory")
    await b.attempt(
        "write_context",
        type="note",
        summary=word,
        consuming_agents=[],
        payload={"text": word},
        author="mallory",
    )
    if "claim_task" in ctx.conn_a.offered:
        await b.attempt("claim_task", taskId=a["task"], agentId="mallory")
    plan = await room.call("read_plan")
    expect(word not in str(plan), "team B's task is in team A's plan")
    mine = await room.call("get_task", taskId=a["task"])
    expect(
        (mine["status"], mine["owner"]) == ("pending", None),
        f"team B changed team A's task: {mine['status']}, owner {mine['owner']!r}",
    )
    events = await room.call("read_events", limit=100)
    expect(word not in str(events), "team B's event is in team A's log")
    var = await room.call("get_shared_var", key="team-a-colour")
    expect(var["value"] == a["word"], "team B overwrote team A's shared variable")
    if "list_context" in ctx.conn_a.offered:
        entries = await room.call("list_context")
        expect(word not in str(entries), "team B's context entry is in team A's room")


@check(
    "teams: another team's list_rooms does not show this team's room", "list_rooms", needs_b=True
)
async def team_list_rooms(ctx: Ctx) -> None:
    """Even a room's name is the team's business."""
    await ctx.a.call("read_plan")
    assert ctx.conn_b is not None
    got = await ctx.conn_b.call("list_rooms")
    expect(ctx.a.room_id not in s.room_ids(got), "team B lists team A's room")


@check(
    "teams: another team cannot lease, message or claim in this team's room",
    "lease_claim",
    "lease_check",
    "send_message",
    "inbox",
    needs_b=True,
    source="ours",
)
async def team_coordination(ctx: Ctx) -> None:
    """Coordination state is room state: another team's agents must not block A's."""
    room, _ = await _team_a_room(ctx)
    b = ctx.b(room)
    path = f"conf/{ctx.unique('team')}/**"
    await b.attempt("lease_claim", agentId="mallory", path=path)
    free = await room.call("lease_check", path=path, agentId="alice")
    expect(free["free"] is True, "team B's lease blocks team A's path")
    await steps.joined(room, "bob")
    await b.attempt("send_message", from_="mallory", to="bob", body="from team B")
    inbox = await room.call("inbox", agentId="bob")
    froms = names(inbox["messages"], "from")
    expect("mallory" not in froms, "team B's message reached team A's agent")
