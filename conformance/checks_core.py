"""Behaviour of the protocol's core: the plan's versions and optimistic concurrency, the
context's versions, events delivered exactly once, exclusive locks, presence, shared
variables, and the conventions every tool shares (unknown arguments, size limits, ids).

Where docs/protocol.md marks a guarantee **ours** (stronger than roomd's), the check says so in
its source column; roomd is expected to fail those, and that is the point of the column.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from conformance import shapes as s
from conformance import steps
from conformance.kit import Ctx, Room, check, expect, names

# --- Plan -------------------------------------------------------------------------------


@check(
    "plan: every task change raises its version by one", "add_task", "update_task", source="ours"
)
async def plan_versions(ctx: Ctx) -> str:
    """Optimistic concurrency needs a version that moves exactly once per change."""
    task = await steps.new_task(ctx.a, ctx)
    expect(task.get("version") == 1, f"a new task is version {task.get('version')!r}, not 1")
    seen = [1]
    for status in ("in_progress", "blocked", "in_progress"):
        got = await ctx.a.call("update_task", taskId=task["id"], status=status)
        seen.append(got.get("version"))
    if "set_task_priority" in ctx.conn_a.offered:
        got = await ctx.a.call("set_task_priority", taskId=task["id"], priority=2)
        seen.append(got.get("version"))
    expect(seen == list(range(1, len(seen) + 1)), f"versions went {seen}")
    read = await ctx.a.call("get_task", taskId=task["id"])
    expect(read.get("version") == seen[-1], f"get_task says {read.get('version')}, not {seen[-1]}")
    return "versions " + " → ".join(map(str, seen))


@check(
    "plan: a stale expectedVersion is refused, naming the current version",
    "update_task",
    source="ours",
)
async def plan_stale_writer(ctx: Ctx) -> None:
    """Two agents that read the same task must not both act on it: the second is told."""
    task = await steps.new_task(ctx.a, ctx)
    await ctx.a.call("update_task", taskId=task["id"], status="in_progress", expectedVersion=1)
    said = await ctx.a.refuse(
        "update_task", taskId=task["id"], status="done", owner="bob", expectedVersion=1
    )
    expect(re.search(r"\b2\b", said), f"the conflict does not name the current version 2: {said!r}")
    for tool, args in (
        ("set_task_priority", {"priority": 1}),
        ("add_dependency", {"dependsOn": (await steps.new_task(ctx.a, ctx))["id"]}),
        ("delete_task", {}),
    ):
        if tool in ctx.conn_a.offered:
            await ctx.a.refuse(tool, taskId=task["id"], expectedVersion=1, **args)
    now = await ctx.a.call("get_task", taskId=task["id"])
    expect(
        (now["status"], now.get("version"), now["depends_on"]) == ("in_progress", 2, []),
        f"a refused stale write changed the task: {now!r}",
    )


@check(
    "plan: 16 concurrent add_task calls all land, none lost", "add_task", "read_plan", source="ours"
)
async def plan_concurrent_adds(ctx: Ctx) -> None:
    """roomd fails some writes under contention; every plan write must be one atomic step."""
    room = ctx.a
    titles = [f"concurrent {i} {ctx.unique('t')}" for i in range(16)]
    made = await asyncio.gather(
        *(room.call("add_task", title=t, description="concurrent") for t in titles)
    )
    plan = await room.call("read_plan")
    ids = names(plan["tasks"], "id")
    lost = [t["id"] for t in made if t["id"] not in ids]
    expect(not lost and len(set(ids)) == len(ids), f"lost or doubled tasks: {lost}")


@check(
    "plan: 8 concurrent updates of one task each land once",
    "update_task",
    "get_task",
    source="ours",
)
async def plan_concurrent_updates(ctx: Ctx) -> None:
    """No lost update: eight writers, eight versions."""
    room = ctx.a
    task = await steps.new_task(room, ctx)
    await asyncio.gather(
        *(
            room.call("update_task", taskId=task["id"], status="in_progress", note=f"note {i}")
            for i in range(8)
        )
    )
    now = await room.call("get_task", taskId=task["id"])
    expect(now.get("version") == 9, f"after 8 updates the task is version {now.get('version')}")
    notes = now.get("notes")
    if isinstance(notes, list):
        texts = sorted(str(n.get("text")) for n in notes if isinstance(n, dict))
        expect(texts == sorted(f"note {i}" for i in range(8)), f"notes kept: {texts}")


@check("update_task: a note is recorded and the description kept", "update_task", source="ours")
async def update_task_note(ctx: Ctx) -> None:
    """roomd overwrites the description with the note, losing the task's spec."""
    task = await steps.new_task(ctx.a, ctx, description="the spec")
    got = await ctx.a.call(
        "update_task", taskId=task["id"], status="in_progress", note="halfway", agentId="alice"
    )
    expect(got["description"] == "the spec", f"description became {got['description']!r}")
    expect(got.get("note") == "halfway", f"note is {got.get('note')!r}")
    notes = got.get("notes")
    expect(
        isinstance(notes, list)
        and notes
        and notes[-1].get("text") == "halfway"
        and notes[-1].get("by") == "alice",
        f"notes are {notes!r}, not ending with {{by: alice, text: halfway}}",
    )
    cleared = await ctx.a.call("update_task", taskId=task["id"], status="pending", owner="")
    expect(cleared["owner"] in (None, ""), f'owner "" did not clear it: {cleared["owner"]!r}')


@check(
    "get_unblocked_tasks: dependencies met, others' tasks left out",
    "get_unblocked_tasks",
    "add_task",
    "update_task",
)
async def unblocked_rules(ctx: Ctx) -> None:
    """What an agent should work on next is the protocol's central question."""
    room = ctx.a
    first = await steps.new_task(room, ctx)
    then = await steps.new_task(room, ctx, depends_on=[first["id"]])
    theirs = await steps.new_task(room, ctx)
    await room.call("update_task", taskId=theirs["id"], status="pending", owner="bob")
    mine = names(await room.call("get_unblocked_tasks", agentId="alice"), "id")
    expect(first["id"] in mine, "a task without dependencies is not unblocked")
    expect(then["id"] not in mine, "a task whose dependency is not done is unblocked")
    expect(theirs["id"] not in mine, "with agentId, another agent's task is listed")
    anyone = names(await room.call("get_unblocked_tasks"), "id")
    expect(theirs["id"] in anyone, "without agentId, bob's pending task is left out")
    await room.call("update_task", taskId=first["id"], status="done")
    mine = names(await room.call("get_unblocked_tasks", agentId="alice"), "id")
    expect(then["id"] in mine, "a task whose dependency is done is not unblocked")
    expect(first["id"] not in mine, "a done task is listed as unblocked")


@check(
    "get_unblocked_tasks: ordered by priority, lower first",
    "get_unblocked_tasks",
    "set_task_priority",
    source="ours",
)
async def unblocked_priority(ctx: Ctx) -> None:
    """An agent that takes the first task it is offered must be offered the most urgent one
    (roomd answers in plan order, whatever the priorities)."""
    room = ctx.a
    later = await steps.new_task(room, ctx)
    sooner = await steps.new_task(room, ctx)
    await room.call("set_task_priority", taskId=later["id"], priority=5)
    await room.call("set_task_priority", taskId=sooner["id"], priority=1)
    order = names(await room.call("get_unblocked_tasks"), "id")
    expect(
        order.index(sooner["id"]) < order.index(later["id"]),
        "priority 1 is not listed before priority 5",
    )


@check(
    "add_task: an unknown dependency is accepted and unmet",
    "add_task",
    "get_unblocked_tasks",
)
async def unknown_dependency(ctx: Ctx) -> None:
    """The paper (4.3): a dependency naming a task that does not exist is unmet, so an
    ill-formed plan stalls rather than proceeding — it is not an error."""
    task = await steps.new_task(ctx.a, ctx, depends_on=[steps.MISSING])
    unblocked = names(await ctx.a.call("get_unblocked_tasks"), "id")
    expect(task["id"] not in unblocked, "a task with a missing dependency is unblocked")


@check("add_task: an unknown dependency is warned about", "add_task", source="ours")
async def unknown_dependency_warned(ctx: Ctx) -> None:
    """The writer of a plan that will stall must be told why (roomd says nothing)."""
    task = await steps.new_task(ctx.a, ctx, depends_on=[steps.MISSING])
    warnings = task.get("warnings")
    expect(
        warnings and steps.MISSING in str(warnings),
        f"no warning names the unknown dependency: {warnings!r}",
    )


@check("add_dependency: a cycle is refused, naming it", "add_dependency", source="ours")
async def dependency_cycle(ctx: Ctx) -> str:
    """A cycle would block its tasks forever, silently."""
    first = await steps.new_task(ctx.a, ctx)
    then = await steps.new_task(ctx.a, ctx, depends_on=[first["id"]])
    said = await ctx.a.refuse("add_dependency", taskId=first["id"], dependsOn=then["id"])
    expect(first["id"] in said and then["id"] in said, f"the cycle is not named: {said!r}")
    again = await ctx.a.call("add_dependency", taskId=then["id"], dependsOn=first["id"])
    expect(again["depends_on"] == [first["id"]], "add_dependency is not idempotent")
    return said


@check("delete_task: tasks that depended on it name it in warnings", "delete_task", source="ours")
async def delete_task_dependents(ctx: Ctx) -> None:
    """Deleting a dependency leaves its dependents blocked: the deleter must know (roomd
    deletes it without a word)."""
    first = await steps.new_task(ctx.a, ctx)
    then = await steps.new_task(ctx.a, ctx, depends_on=[first["id"]])
    got = await ctx.a.call("delete_task", taskId=first["id"])
    expect(then["id"] in str(got.get("warnings")), f"no warning names {then['id']}: {got!r}")


@check(
    "locks are advisory: the holder of `plan` can still update tasks",
    "acquire_lock",
    "update_task",
    source="ours",
)
async def advisory_plan_lock(ctx: Ctx) -> None:
    """The paper's Figure 3 has agents lock `plan` before writing; roomd deadlocks them
    (docs/protocol.md "Locks")."""
    room = ctx.a
    task = await steps.new_task(room, ctx)
    # Released whatever happens: on a server where the holder's write fails, a `plan` lock
    # left behind would fail every later plan check of the run.
    ctx.finally_(lambda: room.attempt("release_lock", resource="plan", agentId="alice"))
    got = await room.call("acquire_lock", resource="plan", agentId="alice", ttlSeconds=5)
    expect(got["acquired"] is True, f"`plan` is not free: {got!r}")
    await room.call("update_task", taskId=task["id"], status="in_progress", owner="alice")
    await room.call("release_lock", resource="plan", agentId="alice")


@check("read_plan: an empty room's created_at is stable", "read_plan", source="ours")
async def empty_room_created_at(ctx: Ctx) -> None:
    """roomd invents a new created_at per call, so a room seems to be born again."""
    room = ctx.room("events")  # touched first here, by reads only
    first = await room.call("read_plan")
    second = await room.call("read_plan")
    expect(first["tasks"] == [], "a new room's plan is not empty")
    expect(first["created_at"] == second["created_at"], "created_at changed between two reads")


# --- Context ----------------------------------------------------------------------------


@check(
    "context: versions go 1.0 → 1.1 → 1.2, every one kept in history",
    "write_context",
    "update_context",
    "read_context",
)
async def context_versions(ctx: Ctx) -> None:
    """Consumers build against a version; the older ones must stay readable."""
    entry = await steps.new_context(ctx.a, ctx, summary="v0")
    first = await ctx.a.call("update_context", id=entry["id"], author="alice", summary="v1")
    second = await ctx.a.call("update_context", id=entry["id"], author="bob", summary="v2")
    got = [entry["version"], first["version"], second["version"]]
    expect(got == ["1.0", "1.1", "1.2"], f"versions went {got}")
    now = await ctx.a.call("read_context", id=entry["id"])
    expect((now["version"], now["summary"]) == ("1.2", "v2"), f"read_context: {now!r}")
    if "get_context_history" in ctx.conn_a.offered:
        history = await ctx.a.call("get_context_history", id=entry["id"])
        kept = names(history["history"], "version")
        expect({"1.0", "1.1"} <= set(kept), f"history keeps {kept}")


@check(
    "update_context: a stale expectedVersion is refused, naming the current one",
    "update_context",
    source="ours",
)
async def context_stale_writer(ctx: Ctx) -> None:
    """A writer who merged into an old version must merge again, not overwrite."""
    entry = await steps.new_context(ctx.a, ctx)
    await ctx.a.call("update_context", id=entry["id"], author="alice", summary="first")
    said = await ctx.a.refuse(
        "update_context", id=entry["id"], author="bob", summary="stale", expectedVersion="1.0"
    )
    expect("1.1" in said, f"the conflict does not name version 1.1: {said!r}")
    now = await ctx.a.call("read_context", id=entry["id"])
    expect(now["summary"] == "first", "the refused update was applied")


@check(
    "update_context: 8 concurrent updates each get their own version",
    "update_context",
    "read_context",
    source="ours",
)
async def context_concurrent_updates(ctx: Ctx) -> None:
    """roomd keeps one of concurrent updates and loses the others."""
    entry = await steps.new_context(ctx.a, ctx)
    got = await asyncio.gather(
        *(
            ctx.a.call("update_context", id=entry["id"], author="alice", summary=f"s{i}")
            for i in range(8)
        )
    )
    versions = sorted(g["version"] for g in got)
    expect(versions == sorted(f"1.{i}" for i in range(1, 9)), f"versions given: {versions}")
    now = await ctx.a.call("read_context", id=entry["id"])
    expect(now["version"] == "1.8", f"the entry ended at version {now['version']}")


PAYLOADS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    # type: (valid payload, invalid payload, the field its error must name)
    "api_contract": (
        {
            "service": "auth",
            "version": "1.0",
            "endpoints": [
                {
                    "method": "POST",
                    "path": "/login",
                    "response": {"token": "string"},
                    "auth_required": False,
                    "description": "log in",
                }
            ],
        },
        {"service": "auth", "version": "1.0", "endpoints": [{"method": "FETCH", "path": "/"}]},
        "method",
    ),
    "arch_decision": (
        {
            "title": "Postgres",
            "decision": "use Postgres",
            "rationale": "we know it",
            "alternatives": ["MySQL"],
            "consequences": ["a migration"],
        },
        {"title": "x", "decision": "y", "alternatives": [], "consequences": []},
        "rationale",
    ),
    "task": (
        {"task_id": "t1", "acceptance_criteria": ["it works"], "technical_notes": ""},
        {"task_id": "t1", "acceptance_criteria": "it works", "technical_notes": ""},
        "acceptance_criteria",
    ),
    "change_request": (
        {
            "requested_by": "alice",
            "target_agent": "bob",
            "description": "rename a field",
            "urgency": "low",
        },
        {
            "requested_by": "alice",
            "target_agent": "bob",
            "description": "rename a field",
            "urgency": "yesterday",
        },
        "urgency",
    ),
    "note": ({"text": "hello", "references": ["README.md"]}, {"references": []}, "text"),
}


@check(
    "write_context: each type's payload schema is enforced, naming the bad field", "write_context"
)
async def context_payload_schemas(ctx: Ctx) -> str:
    """Typed context is what lets a consumer trust a contract without reading prose."""
    for kind, (good, bad, field) in PAYLOADS.items():
        entry = await ctx.a.call(
            "write_context",
            type=kind,
            summary=kind,
            consuming_agents=[],
            payload=good,
            author="alice",
        )
        expect(entry["type"] == kind, f"a {kind} entry came back as {entry['type']!r}")
        said = await ctx.a.refuse(
            "write_context",
            type=kind,
            summary=kind,
            consuming_agents=[],
            payload=bad,
            author="alice",
        )
        expect(field in said, f"the {kind} error does not name {field!r}: {said!r}")
    return "5 types, valid and invalid"


@check(
    "list_context: newest first; type and author filter",
    "list_context",
    "write_context",
    source="ours",
)
async def list_context_order(ctx: Ctx) -> None:
    """An agent reads the newest contract first; roomd's order is undefined."""
    author = ctx.unique("writer")
    older = await steps.new_context(ctx.a, ctx, author=author)
    newer = await steps.new_context(ctx.a, ctx, author=author)
    got = await ctx.a.call("list_context", type="note", author=author)
    expect(
        names(got, "id") == [newer["id"], older["id"]],
        f"list_context(author) gave {names(got, 'id')}, not newest first",
    )


@check(
    "diff_context: a change below the top level is named by its path",
    "write_context",
    "update_context",
    "diff_context",
    source="ours",
)
async def diff_nested(ctx: Ctx) -> str:
    """roomd reports only that `endpoints` changed; a consumer needs to know which field."""
    good = PAYLOADS["api_contract"][0]
    entry = await ctx.a.call(
        "write_context",
        type="api_contract",
        summary="contract",
        consuming_agents=["bob"],
        payload=good,
        author="alice",
    )
    changed = json.loads(json.dumps(good))
    changed["endpoints"][0]["response"] = {"token": "jwt", "expires": "int"}
    await ctx.a.call("update_context", id=entry["id"], author="alice", payload=changed)
    diff = (await ctx.a.call("diff_context", id=entry["id"]))["diff"]["payload"]
    expect(
        "endpoints[0].response.token" in str(diff["changed"]),
        f"changed is {diff['changed']!r}, not naming endpoints[0].response.token",
    )
    expect("endpoints[0].response.expires" in str(diff["added"]), f"added is {diff['added']!r}")
    return f"changed {diff['changed']}, added {diff['added']}"


@check(
    "writes are announced in the log (task_added … shared_var_set)",
    "read_events",
    "add_task",
    "update_task",
    "write_context",
    "update_context",
    "set_shared_var",
)
async def announcements(ctx: Ctx) -> None:
    """Agents learn of each other's work through the log, not by polling every primitive."""
    room = ctx.a
    task = await steps.new_task(room, ctx)
    await room.call("update_task", taskId=task["id"], status="in_progress", owner="alice")
    entry = await steps.new_context(room, ctx)  # consumed by bob
    await room.call("update_context", id=entry["id"], author="alice", summary="again")
    await room.call("set_shared_var", key="port", value="8080", agentId="alice")
    log = await room.call("read_events", limit=5)
    kinds = [e["type"] for e in reversed(log)]
    wanted = [
        "task_added",
        "task_updated",
        "context_available",
        "context_updated",
        "shared_var_set",
    ]
    expect(kinds == wanted, f"the newest events are {kinds}, not {wanted}")
    available = next(e for e in log if e["type"] == "context_available")
    expect(available["to"] == "bob", f"context_available is to {available['to']!r}, not bob")


# --- Events -----------------------------------------------------------------------------


async def _posted(room: Room, ctx: Ctx, count: int) -> list[str]:
    ids = []
    for i in range(count):
        ids.append((await steps.new_event(room, ctx, payload={"n": i}))["id"])
    return ids


@check(
    "get_unread_events: each event delivered exactly once, in log order",
    "get_unread_events",
    "post_event",
)
async def unread_exactly_once(ctx: Ctx) -> str:
    """A reader that pages with a small limit must see every event, once, in order."""
    room = ctx.room("events")
    reader = ctx.unique("reader")
    await steps.drained(room, reader)
    posted = await _posted(room, ctx, 25)
    got = [e["id"] for e in await steps.drained(room, reader, limit=7)]
    expect(got == posted, f"delivered {len(got)} of {len(posted)}, or out of order")
    again = await room.call("get_unread_events", agentId=reader)
    expect(again["count"] == 0, f"{again['count']} events delivered twice")
    return "25 events in pages of 7"


@check(
    "get_unread_events: one agent reading twice at once never gets an event twice",
    "get_unread_events",
    "post_event",
    source="ours",
)
async def unread_concurrent_reader(ctx: Ctx) -> str:
    """Two processes of one agent (a retry, a hook) must split the log, not share it."""
    room = ctx.room("events")
    reader = ctx.unique("reader")
    await steps.drained(room, reader)
    posted = await _posted(room, ctx, 30)
    batches: list[list[str]] = []

    async def read_until_empty() -> None:
        for _ in range(100):
            got = await room.call("get_unread_events", agentId=reader, limit=4)
            if not got["events"]:
                return
            batches.append([e["id"] for e in got["events"]])

    await asyncio.gather(read_until_empty(), read_until_empty(), read_until_empty())
    flat = [i for batch in batches for i in batch]
    expect(len(flat) == len(set(flat)), f"{len(flat) - len(set(flat))} events delivered twice")
    expect(sorted(flat, key=posted.index) == posted, "an event was skipped")
    for batch in batches:
        expect(batch == sorted(batch, key=posted.index), "a batch is not in log order")
    return f"30 events, 3 concurrent readers, {len(batches)} batches"


@check(
    "read_events: newest first by default; asc pages from an event id",
    "read_events",
    "post_event",
    source="ours",
)
async def read_events_order(ctx: Ctx) -> None:
    """A reader must be able to page through the whole retained log (roomd cannot)."""
    room = ctx.room("events")
    posted = await _posted(room, ctx, 9)
    newest = names(await room.call("read_events", limit=3), "id")
    expect(newest == posted[-1:-4:-1], f"the newest 3, newest first, are not {newest}")
    paged: list[str] = []
    since = posted[0]
    for _ in range(10):
        page = await room.call("read_events", since=since, order="asc", limit=3)
        if not page:
            break
        paged.extend(names(page, "id"))
        since = page[-1]["id"]
    expect(paged == posted[1:], f"paging asc from the first event gave {len(paged)} of 8")


@check("wait_for_events: returns as soon as an event arrives", "wait_for_events", "post_event")
async def wait_wakes(ctx: Ctx) -> None:
    """An agent waiting for work must not poll; it must not wait out its timeout either."""
    room = ctx.room("events")
    agent = ctx.unique("waiter")
    await steps.drained(room, agent)
    waiting = asyncio.ensure_future(room.call("wait_for_events", agentId=agent, timeoutMs=8000))
    posted = await steps.new_event(room, ctx)
    loop = asyncio.get_running_loop()
    started = loop.time()
    got = await waiting
    expect(posted["id"] in names(got["events"], "id"), "the event posted is not in the answer")
    expect(loop.time() - started < 5, "the wait did not end when the event arrived")


@check(
    "reply_to_event / mark_event_read: replies point at the parent; receipts add up",
    "reply_to_event",
    "mark_event_read",
    "get_event_reads",
)
async def event_replies_and_reads(ctx: Ctx) -> None:
    """Threads and receipts are how agents know a request was seen and answered."""
    parent = await steps.new_event(ctx.a, ctx)
    reply = await ctx.a.call(
        "reply_to_event",
        replyToId=parent["id"],
        type="answer",
        from_="bob",
        to="alice",
        payload={},
    )
    expect(reply["reply_to_id"] == parent["id"], "reply_to_id is not the parent")
    for agent in ("bob", "carol", "bob"):
        await ctx.a.call("mark_event_read", eventId=parent["id"], agentId=agent)
    got = await ctx.a.call("get_event_reads", eventId=parent["id"])
    readers = [r if isinstance(r, str) else r.get("agentId") for r in got["readBy"]]
    expect(
        readers.count("bob") == 1 and readers.count("carol") == 1,
        f"readBy is {readers}, not bob and carol once each",
    )


@check(
    "get_unread_events(addressedOnly): only events to `all` or to the reader",
    "get_unread_events",
    "post_event",
    source="ours",
)
async def addressed_only(ctx: Ctx) -> None:
    """An agent in a busy room must be able to read only what concerns it."""
    room = ctx.room("events")
    reader = ctx.unique("reader")
    await steps.drained(room, reader)
    sent = {}
    for to in ("all", reader, "someone-else"):
        sent[to] = await room.call("post_event", type="addressed", from_="alice", to=to, payload={})
    got = await room.call("get_unread_events", agentId=reader, addressedOnly=True)
    ids = names(got["events"], "id")
    expect(
        ids == [sent["all"]["id"], sent[reader]["id"]],
        f"addressedOnly delivered {[e['to'] for e in got['events']]}",
    )


@check(
    "delete_event: events posted at the same time are never lost",
    "delete_event",
    "post_event",
    "read_events",
    source="ours",
)
async def delete_event_keeps_others(ctx: Ctx) -> None:
    """roomd rewrites the log to delete one event and drops what arrived meanwhile."""
    room = ctx.room("events")
    doomed = await steps.new_event(room, ctx)
    kind = ctx.unique("alongside")
    posted, _ = await asyncio.gather(
        asyncio.gather(
            *(
                room.call("post_event", type=kind, from_="alice", to="all", payload={"n": i})
                for i in range(10)
            )
        ),
        room.call("delete_event", eventId=doomed["id"], agentId="alice"),
    )
    log = await room.call("read_events", limit=50)
    ids = names(log, "id")
    lost = [e["id"] for e in posted if e["id"] not in ids]
    expect(not lost, f"{len(lost)} of 10 events posted during a delete were lost")
    expect(doomed["id"] not in ids, "the deleted event is still in the log")


# --- Presence, locks, shared variables ----------------------------------------------------


def _released(ctx: Ctx, resource: str, *agents: str) -> None:
    """When the check ends, however: `resource` released by whichever of `agents` holds it."""
    room = ctx.a

    def release(agent: str) -> Callable[[], Awaitable[object]]:
        return lambda: room.attempt("release_lock", resource=resource, agentId=agent)

    for agent in agents:
        ctx.finally_(release(agent))


@check(
    "presence: a heartbeat makes an agent online; leave_room takes it out",
    "heartbeat",
    "get_presence",
    "leave_room",
)
async def presence_rules(ctx: Ctx) -> None:
    """Messages to `*` and the dashboard rely on who is present."""
    agent = ctx.unique("present")
    await steps.joined(ctx.a, agent)
    online = {p["agentId"]: p["status"] for p in await ctx.a.call("get_presence")}
    expect(online.get(agent) == "online", f"{agent} is {online.get(agent)!r} after a heartbeat")
    await ctx.a.call("leave_room", agentId=agent)
    after = {p["agentId"]: p["status"] for p in await ctx.a.call("get_presence")}
    expect(after.get(agent) in (None, "offline"), f"{agent} is {after.get(agent)!r} after leaving")


@check(
    "acquire_lock: a held lock is not granted to another agent",
    "acquire_lock",
    "release_lock",
    "list_locks",
)
async def lock_exclusive(ctx: Ctx) -> None:
    """A lock two agents both hold is no lock."""
    resource = ctx.unique("lock")
    _released(ctx, resource, "alice", "bob")
    await ctx.a.call("acquire_lock", resource=resource, agentId="alice", ttlSeconds=60)
    other = await ctx.a.call("acquire_lock", resource=resource, agentId="bob")
    expect(other["acquired"] is False, f"bob acquired alice's lock: {other!r}")
    freed = await ctx.a.attempt("release_lock", resource=resource, agentId="bob")
    expect(
        not freed.ok or freed.value.get("released") is False,
        f"bob released alice's lock: {freed.text}",
    )
    held = {lock["resource"]: lock["owner"] for lock in await ctx.a.call("list_locks")}
    expect(held.get(resource) == "alice", f"after bob's attempts the lock is {held.get(resource)}")
    await ctx.a.call("release_lock", resource=resource, agentId="alice")
    now = await ctx.a.call("acquire_lock", resource=resource, agentId="bob")
    expect(now["acquired"] is True, "a released lock is not free")


@check(
    "acquire_lock: answers name the real holder and expiry; fencing tokens grow",
    "acquire_lock",
    "release_lock",
    source="ours",
)
async def lock_holder_and_fencing(ctx: Ctx) -> None:
    """roomd echoes the caller as holder; a fencing token lets a store refuse a late writer."""
    resource = ctx.unique("lock")
    _released(ctx, resource, "alice", "bob")
    first = await ctx.a.call("acquire_lock", resource=resource, agentId="alice")
    s.expect_shape(first, s.LOCK_OURS, "acquire_lock")
    if "list_locks" in ctx.conn_a.offered:
        s.expect_shape(await ctx.a.call("list_locks"), s.LOCKS_OURS, "list_locks")
    other = await ctx.a.call("acquire_lock", resource=resource, agentId="bob")
    expect(other["holder"] == "alice", f"bob is told the holder is {other['holder']!r}")
    renewed = await ctx.a.call("acquire_lock", resource=resource, agentId="alice")
    expect(renewed["acquired"] is True, "the holder could not renew")
    expect(renewed["fencingToken"] == first["fencingToken"], "renewing changed the token")
    await ctx.a.call("release_lock", resource=resource, agentId="alice")
    regrant = await ctx.a.call("acquire_lock", resource=resource, agentId="bob")
    expect(regrant["fencingToken"] > first["fencingToken"], "a new grant's token did not grow")


@check("acquire_lock: of 8 concurrent acquirers exactly one holds the lock", "acquire_lock")
async def lock_race(ctx: Ctx) -> str:
    """The race a lock exists for."""
    resource = ctx.unique("lock")
    sessions = await ctx.sessions(8)
    got = await asyncio.gather(
        *(
            conn.room(ctx.a.room_id).call("acquire_lock", resource=resource, agentId=f"racer-{i}")
            for i, conn in enumerate(sessions)
        )
    )
    winners = [g["holder"] for g in got if g["acquired"] is True]
    expect(len(winners) == 1, f"{len(winners)} of 8 acquired it: {winners}")
    return f"won by {winners[0]}"


@check(
    "shared vars: values come back as the strings stored",
    "set_shared_var",
    "get_shared_var",
    source="ours",
)
async def shared_var_strings(ctx: Ctx) -> None:
    """roomd turns "3000" into 3000 and "null" into not-found."""
    for value in ("3000", "null", "true", ""):
        key = ctx.unique("var")
        await ctx.a.call("set_shared_var", key=key, value=value, agentId="alice")
        got = await ctx.a.call("get_shared_var", key=key)
        expect(
            got["found"] is True and got["value"] == value,
            f"{value!r} came back as {got['value']!r} (found {got['found']})",
        )


@check("get_room_info: the counts are exact", "get_room_info", "add_task", "write_context")
async def room_info_counts(ctx: Ctx) -> str:
    """Dashboards and agents size a room from these; they must agree with the listings."""
    room = ctx.room("tpl")
    before = await room.call("get_room_info")
    for _ in range(3):
        await steps.new_task(room, ctx)
    for _ in range(2):
        await steps.new_context(room, ctx)
    got = await room.call("get_room_info")
    added = (got["taskCount"] - before["taskCount"], got["contextCount"] - before["contextCount"])
    expect(added == (3, 2), f"3 tasks and 2 entries added, counted as {added}")
    tasks = len((await room.call("read_plan"))["tasks"])
    expect(got["taskCount"] == tasks, f"taskCount {got['taskCount']}, read_plan lists {tasks}")
    if "list_context" in room.conn.offered:
        entries = len(await room.call("list_context"))
        expect(got["contextCount"] == entries, f"contextCount {got['contextCount']} of {entries}")
    events = len(await room.call("read_events", limit=100))
    expect(got["eventCount"] == events, f"eventCount {got['eventCount']}, the log holds {events}")
    if "get_room_analytics" in room.conn.offered:
        stats = await room.call("get_room_analytics", days=1)
        counted = (stats["tasks"]["total"], stats["contextCount"], stats["events"]["total"])
        expect(
            counted == (got["taskCount"], got["contextCount"], events),
            f"analytics (tasks, context, events) {counted} disagree with get_room_info",
        )
    return f"{tasks} tasks, {got['contextCount']} entries, {events} events"


@check(
    "get_my_summary: a cold start consumes unread events and counts new context",
    "get_my_summary",
    "get_unread_events",
    "write_context",
    "read_events",
)
async def summary_cold_start(ctx: Ctx) -> None:
    """One call must bring a new agent up to date, and move its cursor like a read does."""
    room = ctx.room("tpl")
    await steps.new_context(room, ctx)
    log = await room.call("read_events", limit=100)
    expect(len(log) < 50, f"the room's log is too long for this check ({len(log)} events)")
    agent = ctx.unique("newcomer")
    first = await room.call("get_my_summary", agentId=agent)
    if "list_context" in room.conn.offered:
        entries = len(await room.call("list_context"))
        expect(
            first["newContextCount"] == entries,
            f"a new agent's newContextCount is {first['newContextCount']}, not all {entries}",
        )
    unread = first["unreadEvents"]
    count = len(unread) if isinstance(unread, list) else unread
    expect(count == len(log), f"a new agent's summary holds {count!r} of {len(log)} events")
    after = await room.call("get_unread_events", agentId=agent)
    expect(after["count"] == 0, f"the summary did not consume them: {after['count']} unread")
    await steps.new_context(room, ctx)
    again = await room.call("get_my_summary", agentId=agent)
    expect(
        again["newContextCount"] == 1, f"newContextCount after one more: {again['newContextCount']}"
    )


@check("search: finds a word in a task, a context entry and an event", "search", source="ours")
async def search_everywhere(ctx: Ctx) -> None:
    """roomd scans the newest 200 events only; an agent must find anything retained."""
    token = steps.word()
    task = await steps.new_task(ctx.a, ctx, title=f"about {token}")
    entry = await steps.new_context(ctx.a, ctx, summary=f"the {token} contract")
    event = await steps.new_event(ctx.a, ctx, payload={"text": f"{token} deployed"})
    got = await ctx.a.call("search", q=token)
    hits = {(h["kind"], h["id"]) for h in got["hits"]}
    wanted = {("task", task["id"]), ("context", entry["id"]), ("event", event["id"])}
    expect(wanted <= hits, f"missing hits: {sorted(wanted - hits)}")


@check(
    "reviews: only the named reviewer resolves, and only once",
    "request_review",
    "approve",
    "reject",
)
async def review_rules(ctx: Ctx) -> None:
    """An approval by the wrong agent, or twice, means nothing."""
    made = await steps.review(ctx.a, ctx, reviewer="bob")
    await ctx.a.refuse("approve", reviewId=made["id"], agentId="mallory")
    bob, approved = await steps.resolve(ctx.a, ctx, "approve", reviewId=made["id"], agentId="bob")
    expect(approved.ok, f"the named reviewer could not approve: {approved.text}")
    await bob.refuse("reject", reviewId=made["id"], agentId="bob")
    if "list_reviews" in ctx.conn_a.offered:
        listed = names(await ctx.a.call("list_reviews", status="approved"), "id")
        expect(made["id"] in listed, "the approved review is not listed as approved")


@check(
    "create_room_from_template: never overwrites an existing plan",
    "create_room_from_template",
    "read_plan",
    source="ours",
)
async def template_no_overwrite(ctx: Ctx) -> None:
    """roomd replaces the plan wholesale: one mistyped call loses a team's work."""
    room = ctx.a
    task = await steps.new_task(room, ctx)
    answer = await ctx.conn_a.attempt(
        "create_room_from_template", templateId="incident", roomId=room.room_id
    )
    plan = names((await room.call("read_plan"))["tasks"], "id")
    expect(task["id"] in plan, f"the template replaced the plan ({answer.text[:80]})")


# --- Conventions every tool shares ----------------------------------------------------------


@check("unknown arguments are refused, naming the allowed ones", "get_task", source="ours")
async def unknown_arguments(ctx: Ctx) -> str:
    """A misspelt `taskID` must fail loudly; roomd drops it and does the wrong thing."""
    task = await steps.new_task(ctx.a, ctx)
    said = await ctx.a.refuse("get_task", taskId=task["id"], agentID="alice")
    expect("agentID" in said and "taskId" in said, f"not named: {said!r}")
    return said


@check(
    "size limits: over a limit is a tool error naming the field and the limit",
    "add_task",
    source="ours",
)
async def size_limits(ctx: Ctx) -> str:
    """Without limits one agent's runaway write fills a room for everyone."""
    big: list[tuple[str, dict[str, Any], str, str]] = [
        # (tool, arguments over one limit, the field and the limit the error must name)
        ("add_task", {"title": "x" * 501, "description": ""}, "title", "500"),
        ("add_task", {"title": "t", "description": "d" * 16_001}, "description", "16000"),
        (
            "add_task",
            {"title": "t", "description": "", "depends_on": ["t"] * 101},
            "depends_on",
            "100",
        ),
        (
            "set_shared_var",
            {"key": "big", "value": "x" * 4097, "agentId": "alice"},
            "value",
            "4096",
        ),
        (
            "post_event",
            {"type": "big", "from_": "alice", "to": "all", "payload": {"blob": "x" * 64_001}},
            "payload",
            "64000",
        ),
        (
            "write_context",
            {
                "type": "note",
                "summary": "s" * 4001,
                "consuming_agents": [],
                "payload": steps.NOTE,
                "author": "alice",
            },
            "summary",
            "4000",
        ),
        (
            "write_context",
            {
                "type": "note",
                "summary": "s",
                "author": "alice",
                "consuming_agents": [f"agent-{i}" for i in range(51)],
                "payload": steps.NOTE,
            },
            "consuming_agents",
            "50",
        ),
    ]
    tried = 0
    for tool, args, field, limit in big:
        if tool not in ctx.conn_a.offered:
            continue
        said = (await ctx.a.refuse(tool, **args)).replace(",", "")
        expect(field in said and limit in said, f"{tool}: {field} ≤ {limit} not named: {said!r}")
        tried += 1
    return f"{tried} limits"


@check("every tool refuses an unknown argument, naming it", source="ours")
async def unknown_argument_sweep(ctx: Ctx) -> str:
    """One misspelt argument name in any tool must be an error the agent can read, never a
    call that quietly does something else. Each listed tool is sent one made-up argument."""
    missed = []
    for tool in sorted(ctx.conn_a.offered):
        args: dict[str, Any] = {"conformanceTypo": 1}
        if tool not in ("list_rooms", "list_templates"):
            args["roomId"] = ctx.a.room_id
        got = await ctx.conn_a.attempt(tool, **args)
        if got.ok or "conformanceTypo" not in got.text:
            missed.append(tool)
    expect(not missed, "not refused by name: " + ", ".join(missed))
    return f"{len(ctx.conn_a.offered)} tools"


@check("unknown ids: the error names the closest existing id", "get_task", source="ours")
async def unknown_id_suggests(ctx: Ctx) -> str:
    """An agent that cut or mistyped an id can recover from the error alone (roomd says
    only "Task not found")."""
    task = await steps.new_task(ctx.a, ctx)
    typo = task["id"][:-1] + ("x" if task["id"][-1] != "x" else "y")
    said = await ctx.a.refuse("get_task", taskId=typo)
    expect(task["id"] in said, f"the error does not name {task['id']}: {said!r}")
    return said


@check("roomId: a malformed one is refused", "read_plan", source="ours")
async def malformed_room_id(ctx: Ctx) -> str:
    """A roomId has one form (docs/protocol.md "The room"): roomd takes any string and
    claims it as a new room, so a typo becomes a room of its own."""
    return await ctx.conn_a.refuse("read_plan", roomId="Not A Room!")


@check(
    "unknown event ids are refused: mark_event_read, get_event_reads, reply_to_event",
    "mark_event_read",
    "get_event_reads",
    "reply_to_event",
    source="ours",
)
async def unknown_event_ids(ctx: Ctx) -> None:
    """A receipt or a reply for an event that does not exist helps nobody (roomd records
    the one, answers an empty list for the other and threads the reply under nothing)."""
    await ctx.a.refuse("mark_event_read", eventId=steps.MISSING, agentId="alice")
    await ctx.a.refuse("get_event_reads", eventId=steps.MISSING)
    await ctx.a.refuse(
        "reply_to_event", replyToId=steps.MISSING, type="reply", from_="bob", to="all", payload={}
    )


@check("unknown context ids are refused: get_context_history", "get_context_history", source="ours")
async def unknown_context_history(ctx: Ctx) -> str:
    """The history of an entry that never was is a mistyped id, and the agent should be told
    (roomd answers `{id, current: null, history: []}`, as its result type says)."""
    return await ctx.a.refuse("get_context_history", id=steps.MISSING)


@check("request_review: the target must exist", "request_review", source="ours")
async def review_target_exists(ctx: Ctx) -> str:
    """A review of nothing can never be resolved meaningfully (roomd does not look)."""
    return await ctx.a.refuse(
        "request_review", targetType="task", targetId=steps.MISSING, requestedBy="a", reviewer="b"
    )
