"""Behaviour of the tools docs/protocol.md marks **ours**: claims with exactly one winner,
file leases and drift, messages and their delivery states, safe retries, proven work,
handoffs, and a room's mode and status. A server that does not list these tools gets
SKIP "not offered" for each, never a FAIL.
"""

from __future__ import annotations

import asyncio

from conformance import steps
from conformance.kit import Ctx, check, expect, names

# --- Claims -----------------------------------------------------------------------------


@check(
    "claim_task: of 8 concurrent claimers exactly one wins", "claim_task", "get_task", source="ours"
)
async def claim_race(ctx: Ctx) -> str:
    """The reason claim_task exists: two agents must never both start the same task."""
    task = await steps.new_task(ctx.a, ctx)
    sessions = await ctx.sessions(8)
    answers = await asyncio.gather(
        *(
            conn.room(ctx.a.room_id).attempt("claim_task", taskId=task["id"], agentId=f"c-{i}")
            for i, conn in enumerate(sessions)
        )
    )
    won = [a.value["owner"] for a in answers if a.ok]
    expect(len(won) == 1, f"{len(won)} of 8 claimers won: {won}")
    for lost in (a for a in answers if not a.ok):
        expect(won[0] in lost.text, f"a loser is not told the owner {won[0]}: {lost.text!r}")
    now = await ctx.a.call("get_task", taskId=task["id"])
    expect(
        (now["owner"], now["status"]) == (won[0], "in_progress"),
        f"the task ended {now['status']} owned by {now['owner']!r}",
    )
    return f"won by {won[0]}"


@check(
    "claim_task: only free, ready tasks; release_task only by the owner",
    "claim_task",
    source="ours",
)
async def claim_rules(ctx: Ctx) -> None:
    """Claiming is only for work that is free and ready."""
    task = await steps.new_task(ctx.a, ctx)
    await ctx.a.call("claim_task", taskId=task["id"], agentId="alice")
    again = await ctx.a.call("claim_task", taskId=task["id"], agentId="alice")
    expect(again["owner"] == "alice", "the owner claiming again lost the task")
    said = await ctx.a.refuse("claim_task", taskId=task["id"], agentId="bob")
    expect("alice" in said, f"the refusal does not name the owner: {said!r}")
    await ctx.a.refuse("release_task", taskId=task["id"], agentId="bob")
    done = await steps.new_task(ctx.a, ctx)
    await ctx.a.call("update_task", taskId=done["id"], status="done")
    await ctx.a.refuse("claim_task", taskId=done["id"], agentId="bob")
    blocked = await steps.new_task(ctx.a, ctx, depends_on=[task["id"]])
    await ctx.a.refuse("claim_task", taskId=blocked["id"], agentId="bob")


@check(
    "claim_task(paths): leases taken in the same step, released with the task",
    "claim_task",
    "lease_check",
    source="ours",
)
async def claim_with_paths(ctx: Ctx) -> None:
    """A task's files are what two agents actually collide on."""
    task = await steps.new_task(ctx.a, ctx)
    path = f"conf/{ctx.unique('task')}/app.py"
    await ctx.a.call("claim_task", taskId=task["id"], agentId="alice", paths=[path])
    held = await ctx.a.call("lease_check", path=path, agentId="bob")
    expect(held["free"] is False, "the claimed task's path is free for bob")
    await ctx.a.call("update_task", taskId=task["id"], status="done", agentId="alice")
    after = await ctx.a.call("lease_check", path=path, agentId="bob")
    expect(after["free"] is True, "the path is still leased after the task is done")


# --- Leases and drift -------------------------------------------------------------------


@check(
    "lease_claim: exclusive blocks overlapping paths; shared leases coexist",
    "lease_claim",
    "lease_check",
    source="ours",
)
async def lease_rules(ctx: Ctx) -> None:
    """Overlap, not equality, is what makes two edits collide."""
    base = f"conf/{ctx.unique('tree')}"
    await ctx.a.call("lease_claim", agentId="alice", path=f"{base}/src/**")
    got = await ctx.a.call("lease_claim", agentId="bob", path=f"{base}/src/app.py")
    expect(got["granted"] is False, f"bob got a path inside alice's exclusive glob: {got!r}")
    expect("alice" in names(got["conflicts"], "holder"), "the conflict does not name alice")
    one = await ctx.a.call("lease_claim", agentId="alice", path=f"{base}/docs/**", mode="shared")
    two = await ctx.a.call("lease_claim", agentId="bob", path=f"{base}/docs/a.md", mode="shared")
    expect(one["granted"] and two["granted"], "two shared leases did not coexist")
    three = await ctx.a.call("lease_claim", agentId="carol", path=f"{base}/docs/a.md")
    expect(three["granted"] is False, "an exclusive lease was granted over shared ones")
    free = await ctx.a.call("lease_check", path=f"{base}/src/app.py", agentId="alice")
    expect(free["free"] is True, "alice's own lease makes the path unfree for her")


@check(
    "lease_renew / lease_release: only the holder; the path is free after",
    "lease_renew",
    "lease_release",
    "lease_check",
    source="ours",
)
async def lease_holder_only(ctx: Ctx) -> None:
    """Another agent must not extend or drop a lease it does not hold."""
    lease = await steps.lease(ctx.a, ctx, "alice")
    await ctx.a.refuse("lease_renew", agentId="bob", leaseId=lease["id"])
    await ctx.a.refuse("lease_release", agentId="bob", leaseId=lease["id"])
    path = lease["path"].replace("**", "x.py")
    expect((await ctx.a.call("lease_check", path=path))["free"] is False, "the lease is gone")
    await ctx.a.call("lease_release", agentId="alice", leaseId=lease["id"])
    expect((await ctx.a.call("lease_check", path=path))["free"] is True, "not free after release")
    listed = names((await ctx.a.call("lease_list", agentId="alice"))["leases"], "id")
    expect(lease["id"] not in listed, "a released lease is still listed")


@check(
    "lease_claim: of 8 concurrent exclusive claims on overlapping paths one is granted",
    "lease_claim",
    source="ours",
)
async def lease_race(ctx: Ctx) -> str:
    """Atomic across processes, or two agents edit one file."""
    base = f"conf/{ctx.unique('race')}"
    paths = [f"{base}/**", f"{base}/a.py", f"{base}/*.py", f"{base}/a.py"] * 2
    sessions = await ctx.sessions(8)
    got = await asyncio.gather(
        *(
            conn.room(ctx.a.room_id).call("lease_claim", agentId=f"l-{i}", path=paths[i])
            for i, conn in enumerate(sessions)
        )
    )
    granted = [g["lease"]["holder"] for g in got if g["granted"]]
    expect(len(granted) == 1, f"{len(granted)} of 8 overlapping exclusive claims granted")
    return f"granted to {granted[0]}"


@check(
    "drift_check: SAFE unchanged, MINOR changed, CRITICAL changed under another's lease",
    "note_read",
    "drift_check",
    "lease_claim",
    source="ours",
)
async def drift_levels(ctx: Ctx) -> None:
    """An agent about to edit a file it read earlier must know if someone changed it."""
    path = f"conf/{ctx.unique('drift')}/main.py"
    seen, now = "1" * 64, "2" * 64
    await ctx.a.call("note_read", agentId="alice", path=path, sha256=seen)
    same = await ctx.a.call("drift_check", agentId="alice", path=path, sha256=seen)
    moved = await ctx.a.call("drift_check", agentId="alice", path=path, sha256=now)
    await ctx.a.call("lease_claim", agentId="bob", path=path)
    leased = await ctx.a.call("drift_check", agentId="alice", path=path, sha256=now)
    got = (same["severity"], moved["severity"], leased["severity"])
    expect(got == ("SAFE", "MINOR", "CRITICAL"), f"severities were {got}")
    expect(leased["holder"] == "bob", f"CRITICAL names holder {leased['holder']!r}, not bob")


# --- Messages -----------------------------------------------------------------------------


@check(
    "messages: one delivery per recipient, stored → read → acked",
    "send_message",
    "inbox",
    "ack_message",
    "sent_messages",
    source="ours",
)
async def message_states(ctx: Ctx) -> str:
    """The sender must see who has read and who has acknowledged."""
    room = ctx.room("mail")
    for agent in ("alice", "bob", "carol"):
        await steps.joined(room, agent)
    sent = await room.call("send_message", from_="alice", to="*", body="standup", ackRequired=True)
    expect(sorted(sent["recipients"]) == ["bob", "carol"], f"`*` reached {sent['recipients']}")

    async def states() -> dict[str, str]:
        mine = await room.call("sent_messages", agentId="alice")
        row = [m for m in mine["messages"] if m["messageId"] == sent["messageId"]]
        expect(row, "sent_messages does not list the message")
        return {r["agentId"]: r["state"] for r in row[0]["recipients"]}

    expect(await states() == {"bob": "stored", "carol": "stored"}, "not stored for both")
    inbox = await room.call("inbox", agentId="bob")
    expect(names(inbox["messages"], "messageId") == [sent["messageId"]], "bob's inbox")
    expect(inbox["messages"][0]["state"] == "read", "inbox did not mark the message read")
    again = await room.call("inbox", agentId="bob")
    expect(again["messages"] == [], "an unreadOnly inbox returned a read message again")
    await room.call("ack_message", agentId="bob", messageId=sent["messageId"])
    expect(await states() == {"bob": "acked", "carol": "stored"}, f"states: {await states()}")
    await room.refuse("ack_message", agentId="mallory", messageId=sent["messageId"])
    return "bob acked, carol stored"


@check(
    "messages: tag: and file: selectors; zero recipients is a count of 0 and a warning",
    "send_message",
    "heartbeat",
    "lease_claim",
    source="ours",
)
async def message_selectors(ctx: Ctx) -> None:
    """Agents address work, not names: whoever holds the file, whoever does the backend."""
    room = ctx.room("mail")
    tag = ctx.unique("tag")
    await steps.joined(room, "dora", tags=[tag])
    by_tag = await room.call("send_message", from_="alice", to=f"tag:{tag}", body="for dora")
    expect(by_tag["recipients"] == ["dora"], f"tag:{tag} reached {by_tag['recipients']}")
    path = f"conf/{ctx.unique('mail')}/api.py"
    await room.call("lease_claim", agentId="erin", path=path)
    by_file = await room.call("send_message", from_="alice", to=f"file:{path}", body="yours?")
    expect(by_file["recipients"] == ["erin"], f"file:{path} reached {by_file['recipients']}")
    nobody = await room.call("send_message", from_="alice", to=f"tag:{tag}-none", body="hello?")
    expect(nobody["count"] == 0 and nobody.get("warning"), f"zero recipients: {nobody!r}")


# --- Safe retries -------------------------------------------------------------------------


@check(
    "idempotencyKey: a repeat returns the first result; other arguments are refused",
    "add_task",
    "post_event",
    "read_plan",
    source="ours",
)
async def idempotency(ctx: Ctx) -> None:
    """A retry after a timeout must not add the task twice."""
    room = ctx.a
    key = ctx.unique("key")
    title = f"once {key}"
    first = await room.call("add_task", title=title, description="", idempotencyKey=key)
    again = await room.call("add_task", title=title, description="", idempotencyKey=key)
    expect(again["id"] == first["id"], "the repeat made a second task")
    await room.refuse("add_task", title=f"{title}!", description="", idempotencyKey=key)
    titles = [t["title"] for t in (await room.call("read_plan"))["tasks"]]
    expect(titles.count(title) == 1, f"the plan holds {titles.count(title)} copies")
    other = ctx.unique("key")
    kind = ctx.unique("once")
    ev1 = await room.call(
        "post_event", type=kind, from_="alice", to="all", payload={}, idempotencyKey=other
    )
    ev2 = await room.call(
        "post_event", type=kind, from_="alice", to="all", payload={}, idempotencyKey=other
    )
    expect(ev1["id"] == ev2["id"], "the repeated post_event made a second event")
    kinds = [e["type"] for e in await room.call("read_events", limit=20)]
    expect(kinds.count(kind) == 1, f"the log holds {kinds.count(kind)} copies of the event")


# --- Proven work, handoffs, a room's mode and status ---------------------------------------


@check(
    "verify_task: never by the submitter; reject sends the task back with the note",
    "submit_task",
    "verify_task",
    source="ours",
)
async def verify_rules(ctx: Ctx) -> None:
    """Evidence checked by the one who made it proves nothing."""
    task = await steps.submitted(ctx.a, ctx, "alice")
    await ctx.a.refuse("verify_task", taskId=task["id"], agentId="alice", verdict="accept")
    back = await ctx.a.call(
        "verify_task", taskId=task["id"], agentId="bob", verdict="reject", note="no tests"
    )
    expect(back["status"] == "in_progress", f"a rejected task is {back['status']!r}")
    again = await ctx.a.call(
        "submit_task",
        taskId=task["id"],
        agentId="alice",
        evidence=[{"kind": "test", "text": "now with tests"}],
    )
    expect(again["verification"]["state"] == "submitted", "a rejected task cannot resubmit")
    await ctx.a.refuse(
        "submit_task", taskId=task["id"], agentId="bob", evidence=[{"kind": "note", "text": "x"}]
    )


@check(
    "set_room_mode(evidenceRequired): done only after another agent verified",
    "set_room_mode",
    "submit_task",
    "verify_task",
    "update_task",
    source="ours",
)
async def evidence_mode(ctx: Ctx) -> None:
    """A room can insist that work is proven, not just declared."""
    room = ctx.room("settings")
    ctx.finally_(lambda: room.attempt("set_room_mode", agentId="alice", evidenceRequired=False))
    await room.call("set_room_mode", agentId="alice", evidenceRequired=True)
    task = await steps.owned_task(room, ctx, "alice")
    await room.refuse("update_task", taskId=task["id"], status="done", agentId="alice")
    await room.call(
        "submit_task",
        taskId=task["id"],
        agentId="alice",
        evidence=[{"kind": "test", "text": "3 passed"}],
    )
    done = await room.call("verify_task", taskId=task["id"], agentId="bob", verdict="accept")
    expect(done["status"] == "done", f"a verified task is {done['status']!r}")
    await room.call("set_room_mode", agentId="alice", evidenceRequired=False)


@check(
    "handoff: only the owner offers, only `to` answers, a decline is final",
    "handoff_task",
    "accept_handoff",
    "decline_handoff",
    source="ours",
)
async def handoff_rules(ctx: Ctx) -> None:
    """A task changes hands only when both sides agree."""
    task = await steps.owned_task(ctx.a, ctx, "alice")
    await ctx.a.refuse("handoff_task", taskId=task["id"], from_="bob", to="carol")
    offered = await ctx.a.call("handoff_task", taskId=task["id"], from_="alice", to="bob")
    still = await ctx.a.call("get_task", taskId=task["id"])
    expect(still["owner"] == "alice", "the owner changed before the handoff was accepted")
    await ctx.a.refuse("accept_handoff", handoffId=offered["id"], agentId="carol")
    await ctx.a.call("decline_handoff", handoffId=offered["id"], agentId="bob")
    await ctx.a.refuse("accept_handoff", handoffId=offered["id"], agentId="bob")
    expect((await ctx.a.call("get_task", taskId=task["id"]))["owner"] == "alice", "owner moved")


@check(
    "set_room_status: paused and completed refuse writes, answer reads; active writes again",
    "set_room_status",
    "add_task",
    "read_plan",
    source="ours",
)
async def room_paused(ctx: Ctx) -> None:
    """A paused room must stop agents without losing what they can read."""
    room = ctx.room("settings")
    ctx.finally_(lambda: room.attempt("set_room_status", status="active", agentId="alice"))
    task = await steps.new_task(room, ctx)
    await room.call("set_room_status", status="paused", agentId="alice")
    said = await room.refuse("add_task", title="while paused", description="")
    expect("paused" in said.lower(), f"the refusal does not say the room is paused: {said!r}")
    plan = await room.call("read_plan")
    expect(task["id"] in names(plan["tasks"], "id"), "a paused room does not answer reads")
    await room.call("set_room_status", status="active", agentId="alice")
    await steps.new_task(room, ctx)
    await room.call("set_room_status", status="completed", agentId="alice")
    said = await room.refuse("post_event", type="late", from_="alice", to="all", payload={})
    expect("completed" in said.lower(), f"the refusal does not say it is completed: {said!r}")
    await room.call("read_events", limit=1)
    await room.call("set_room_status", status="active", agentId="alice")


@check(
    "set_room_status: archived answers reads, refuses writes, restores exactly",
    "set_room_status",
    "add_task",
    "read_plan",
    source="ours",
)
async def room_archived(ctx: Ctx) -> None:
    """A room never vanishes: archived, it can still be read and brought back whole."""
    room = ctx.room("settings")
    ctx.finally_(lambda: room.attempt("set_room_status", status="active", agentId="alice"))
    before = names((await room.call("read_plan"))["tasks"], "id")
    await room.call("set_room_status", status="archived", agentId="alice")
    read = names((await room.call("read_plan"))["tasks"], "id")
    expect(read == before, "an archived room's plan reads differently")
    said = await room.refuse("add_task", title="while archived", description="")
    expect("restore" in said.lower() or "active" in said.lower(), f"no way back named: {said!r}")
    back = await room.call("set_room_status", status="active", agentId="alice")
    expect(back["status"] == "active", f"restoring answered {back!r}")
    after = names((await room.call("read_plan"))["tasks"], "id")
    expect(after == before, "the restored plan differs from the archived one")
    await steps.new_task(room, ctx)


@check(
    "room_broadcast / room_state / room_read: AgentRoom's tools share the room",
    "room_broadcast",
    "room_state",
    "room_read",
    "room_claim",
    "lease_claim",
    source="ours",
)
async def agentroom_tools(ctx: Ctx) -> None:
    """AgentRoom's five tools must see the same leases and log as the rest."""
    room = ctx.room("mail")
    reader = ctx.unique("reader")
    await steps.drained(room, reader)
    text = f"broadcast {ctx.unique('b')}"
    sent = await room.call("room_broadcast", agentId="alice", text=text)
    state = await room.call("room_state")
    expect(
        sent["id"] in names(state["recentBroadcasts"], "id") or text in str(state),
        "room_state does not show the broadcast",
    )
    read = await room.call("room_read", agentId=reader)
    expect(sent["id"] in names(read["events"], "id"), "room_read does not deliver it")
    path = f"conf/{ctx.unique('claim')}.py"
    await room.call("room_claim", agentId="alice", path=path)
    other = await room.call("lease_claim", agentId="bob", path=path)
    expect(other["granted"] is False, "lease_claim granted a path room_claim holds")
