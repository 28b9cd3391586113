"""Two checks per tool: a valid call whose result has docs/tools.md's shape, and a bad-input
call that must come back as a tool error (isError) — never a protocol error or a broken
connection, since only a tool error reaches the model that can correct its call.

The bad input is, where the tool takes an id, an id nobody minted (the commonest agent
mistake); otherwise a value out of the documented range, a missing required argument, or
a malformed roomId.
"""

from __future__ import annotations

from conformance import shapes as s
from conformance import steps
from conformance.kit import Ctx, expect, names, tool_bad, tool_call
from conformance.steps import MISSING

BAD_ROOM = "Not A Room!"
SHA_A = "a" * 64

# --- Plan -------------------------------------------------------------------------------


@tool_call("read_plan")
async def read_plan_call(ctx: Ctx) -> None:
    task = await steps.new_task(ctx.a, ctx)
    plan = await ctx.a.call("read_plan")
    s.expect_shape(plan, s.PLAN, "read_plan")
    expect(task["id"] in names(plan["tasks"], "id"), "read_plan does not list the task just added")


@tool_bad("read_plan")
async def read_plan_bad(ctx: Ctx) -> str:
    return await ctx.conn_a.refuse("read_plan")  # no roomId


@tool_call("add_task")
async def add_task_call(ctx: Ctx) -> None:
    title = f"conformance {ctx.unique('add')}"
    task = await ctx.a.call("add_task", title=title, description="d", depends_on=[])
    s.expect_shape(task, s.TASK, "add_task")
    expect(task["title"] == title, f"add_task title {task['title']!r}, not {title!r}")
    expect(task["status"] == "pending", f"a new task is {task['status']!r}, not pending")
    expect(task["owner"] is None, f"a new task has owner {task['owner']!r}, not null")


@tool_bad("add_task")
async def add_task_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("add_task", description="a task without a title")


@tool_call("update_task")
async def update_task_call(ctx: Ctx) -> None:
    task = await steps.new_task(ctx.a, ctx)
    got = await ctx.a.call(
        "update_task", taskId=task["id"], status="in_progress", owner="alice", note="started"
    )
    s.expect_shape(got, s.TASK, "update_task")
    expect(got["status"] == "in_progress", f"status is {got['status']!r}, not in_progress")
    expect(got["owner"] == "alice", f"owner is {got['owner']!r}, not alice")


@tool_bad("update_task")
async def update_task_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("update_task", taskId=MISSING, status="done")


@tool_call("get_task")
async def get_task_call(ctx: Ctx) -> None:
    task = await steps.new_task(ctx.a, ctx)
    got = await ctx.a.call("get_task", taskId=task["id"])
    s.expect_shape(got, s.TASK, "get_task")
    expect((got["id"], got["title"]) == (task["id"], task["title"]), "get_task: another task")


@tool_bad("get_task")
async def get_task_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("get_task", taskId=MISSING)


@tool_call("get_unblocked_tasks")
async def get_unblocked_tasks_call(ctx: Ctx) -> None:
    task = await steps.new_task(ctx.a, ctx)
    got = await ctx.a.call("get_unblocked_tasks")
    s.expect_shape(got, s.TASKS, "get_unblocked_tasks")
    expect(task["id"] in names(got, "id"), "a new task without dependencies is not unblocked")
    expect(all(t["status"] == "pending" for t in got), "a task that is not pending is listed")


@tool_bad("get_unblocked_tasks")
async def get_unblocked_tasks_bad(ctx: Ctx) -> str:
    return await ctx.conn_a.refuse("get_unblocked_tasks")  # no roomId


@tool_call("get_my_tasks")
async def get_my_tasks_call(ctx: Ctx) -> None:
    agent = ctx.unique("owner")
    task = await steps.owned_task(ctx.a, ctx, agent)
    got = await ctx.a.call("get_my_tasks", agentId=agent)
    s.expect_shape(got, s.TASKS, "get_my_tasks")
    expect(names(got, "id") == [task["id"]], f"get_my_tasks({agent}) gave {names(got, 'id')}")


@tool_bad("get_my_tasks")
async def get_my_tasks_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("get_my_tasks")


@tool_call("get_my_summary")
async def get_my_summary_call(ctx: Ctx) -> None:
    agent = ctx.unique("summary")
    task = await steps.owned_task(ctx.a, ctx, agent)
    got = await ctx.a.call("get_my_summary", agentId=agent)
    s.expect_shape(got, s.SUMMARY, "get_my_summary")
    expect((got["agentId"], got["roomId"]) == (agent, ctx.a.room_id), "agentId/roomId not echoed")
    expect(names(got["myTasks"], "id") == [task["id"]], "myTasks is not the agent's one task")


@tool_bad("get_my_summary")
async def get_my_summary_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("get_my_summary")


# --- Context ----------------------------------------------------------------------------


@tool_call("write_context")
async def write_context_call(ctx: Ctx) -> None:
    got = await ctx.a.call(
        "write_context",
        type="note",
        summary="conformance note",
        consuming_agents=["bob"],
        payload=steps.NOTE,
        author="alice",
    )
    s.expect_shape(got, s.CONTEXT, "write_context")
    expect(got["version"] == "1.0", f'a new entry is version {got["version"]!r}, not "1.0"')
    expect(got["payload"].get("text") == steps.NOTE["text"], "the payload was not kept")


@tool_bad("write_context")
async def write_context_bad(ctx: Ctx) -> str:
    said = await ctx.a.refuse(
        "write_context",
        type="note",
        summary="a note without its text",
        consuming_agents=[],
        payload={"words": "the note type requires text"},
        author="alice",
    )
    expect("text" in said, f"the error does not name the bad field `text`: {said!r}")
    return said


@tool_call("read_context")
async def read_context_call(ctx: Ctx) -> None:
    entry = await steps.new_context(ctx.a, ctx)
    got = await ctx.a.call("read_context", id=entry["id"])
    s.expect_shape(got, s.CONTEXT, "read_context")
    expect(got["id"] == entry["id"] and got["version"] == "1.0", "read_context: another entry")


@tool_bad("read_context")
async def read_context_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("read_context", id=MISSING)


@tool_call("list_context")
async def list_context_call(ctx: Ctx) -> None:
    entry = await steps.new_context(ctx.a, ctx)
    got = await ctx.a.call("list_context")
    s.expect_shape(got, s.list_of(s.CONTEXT), "list_context")
    expect(entry["id"] in names(got, "id"), "list_context does not list the entry just written")


@tool_bad("list_context")
async def list_context_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("list_context", type="no_such_type")


@tool_call("update_context")
async def update_context_call(ctx: Ctx) -> None:
    entry = await steps.new_context(ctx.a, ctx)
    got = await ctx.a.call("update_context", id=entry["id"], author="alice", summary="changed")
    s.expect_shape(got, s.CONTEXT, "update_context")
    expect(got["version"] == "1.1", f'the first update is version {got["version"]!r}, not "1.1"')
    expect(got["summary"] == "changed", "the new summary was not kept")


@tool_bad("update_context")
async def update_context_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("update_context", id=MISSING, author="alice", summary="x")


# --- Events -----------------------------------------------------------------------------


@tool_call("post_event")
async def post_event_call(ctx: Ctx) -> None:
    kind = ctx.unique("ping")
    got = await ctx.a.call("post_event", type=kind, from_="alice", to="bob", payload={"n": 1})
    s.expect_shape(got, s.EVENT, "post_event")
    expect(
        (got["type"], got["from"], got["to"], got["payload"]) == (kind, "alice", "bob", {"n": 1}),
        f"post_event did not keep what was posted: {got!r}",
    )


@tool_bad("post_event")
async def post_event_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("post_event", type="no-sender", to="all", payload={})


@tool_call("read_events")
async def read_events_call(ctx: Ctx) -> None:
    event = await steps.new_event(ctx.a, ctx)
    got = await ctx.a.call("read_events", limit=5)
    s.expect_shape(got, s.EVENTS, "read_events")
    expect(1 <= len(got) <= 5, f"read_events(limit: 5) returned {len(got)} events")
    expect(event["id"] in names(got, "id"), "the newest event is not among the newest 5")


@tool_bad("read_events")
async def read_events_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("read_events", limit=0)


@tool_call("get_unread_events")
async def get_unread_events_call(ctx: Ctx) -> None:
    await steps.new_event(ctx.a, ctx)
    got = await ctx.a.call("get_unread_events", agentId=ctx.unique("reader"), limit=10)
    s.expect_shape(got, s.UNREAD, "get_unread_events")
    expect(got["count"] == len(got["events"]), "count is not the number of events returned")
    expect(1 <= got["count"] <= 10, f"a new reader of a busy room got {got['count']} events")


@tool_bad("get_unread_events")
async def get_unread_events_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("get_unread_events", agentId="alice", limit=1000)


@tool_call("wait_for_events")
async def wait_for_events_call(ctx: Ctx) -> None:
    await steps.new_event(ctx.a, ctx)
    # A new agent has the whole log unread, so the wait returns at once.
    got = await ctx.a.call("wait_for_events", agentId=ctx.unique("waiter"), timeoutMs=2000)
    s.expect_shape(got, s.obj({"events": s.EVENTS}), "wait_for_events")
    expect(got["events"], "wait_for_events returned no events for an agent with unread ones")


@tool_bad("wait_for_events")
async def wait_for_events_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("wait_for_events", timeoutMs=0)


@tool_call("mark_event_read")
async def mark_event_read_call(ctx: Ctx) -> None:
    event = await steps.new_event(ctx.a, ctx)
    got = await ctx.a.call("mark_event_read", eventId=event["id"], agentId="alice")
    s.expect_shape(
        got, s.obj({"eventId": s.TEXT, "agentId": s.STR, "ok": s.BOOL}), "mark_event_read"
    )
    expect(got["ok"] is True and got["eventId"] == event["id"], f"not marked: {got!r}")


@tool_bad("mark_event_read")
async def mark_event_read_bad(ctx: Ctx) -> str:
    # An unknown event id is refused by us but recorded by roomd: the protocol's bad input
    # is a missing agentId (the unknown id is judged by "unknown event ids are refused").
    event = await steps.new_event(ctx.a, ctx)
    return await ctx.a.refuse("mark_event_read", eventId=event["id"])


@tool_call("get_event_reads")
async def get_event_reads_call(ctx: Ctx) -> None:
    event = await steps.new_event(ctx.a, ctx)
    await ctx.a.call("mark_event_read", eventId=event["id"], agentId="carol")
    got = await ctx.a.call("get_event_reads", eventId=event["id"])
    s.expect_shape(got, s.obj({"eventId": s.TEXT, "readBy": s.LIST}), "get_event_reads")
    readers = [r if isinstance(r, str) else r.get("agentId") for r in got["readBy"]]
    expect("carol" in readers, f"readBy is {got['readBy']!r}, without carol")


@tool_bad("get_event_reads")
async def get_event_reads_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("get_event_reads")  # no eventId (roomd answers an unknown one)


@tool_call("reply_to_event")
async def reply_to_event_call(ctx: Ctx) -> None:
    event = await steps.new_event(ctx.a, ctx)
    got = await ctx.a.call(
        "reply_to_event",
        replyToId=event["id"],
        type="conformance-reply",
        from_="bob",
        to="alice",
        payload={"ok": True},
    )
    s.expect_shape(got, s.obj({"reply_to_id": s.TEXT}), "reply_to_event")
    s.expect_shape(got, s.EVENT, "reply_to_event")
    expect(got["reply_to_id"] == event["id"], "reply_to_id is not the parent's id")


@tool_bad("reply_to_event")
async def reply_to_event_bad(ctx: Ctx) -> str:
    event = await steps.new_event(ctx.a, ctx)  # no `from`: roomd replies to unknown parents
    return await ctx.a.refuse(
        "reply_to_event", replyToId=event["id"], type="reply", to="all", payload={}
    )


# --- Presence, locks, shared variables ----------------------------------------------------


@tool_call("heartbeat")
async def heartbeat_call(ctx: Ctx) -> None:
    agent = ctx.unique("beat")
    got = await ctx.a.call("heartbeat", agentId=agent)
    s.expect_shape(got, s.obj({"agentId": s.STR, "presence": s.list_of(s.PRESENCE)}), "heartbeat")
    mine = [p for p in got["presence"] if p["agentId"] == agent]
    expect(mine and mine[0]["status"] == "online", f"{agent} is not online after its heartbeat")


@tool_bad("heartbeat")
async def heartbeat_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("heartbeat")


@tool_call("get_presence")
async def get_presence_call(ctx: Ctx) -> None:
    agent = ctx.unique("here")
    await steps.joined(ctx.a, agent)
    got = await ctx.a.call("get_presence")
    s.expect_shape(got, s.list_of(s.PRESENCE), "get_presence")
    mine = [p for p in got if p["agentId"] == agent]
    expect(mine and mine[0]["status"] == "online", f"{agent} is not listed online")


@tool_bad("get_presence")
async def get_presence_bad(ctx: Ctx) -> str:
    return await ctx.conn_a.refuse("get_presence")  # no roomId


@tool_call("acquire_lock")
async def acquire_lock_call(ctx: Ctx) -> None:
    resource = ctx.unique("lock")
    ctx.finally_(lambda: ctx.a.attempt("release_lock", resource=resource, agentId="alice"))
    got = await ctx.a.call("acquire_lock", resource=resource, agentId="alice", ttlSeconds=30)
    s.expect_shape(got, s.LOCK, "acquire_lock")
    expect(got["acquired"] is True and got["holder"] == "alice", f"a free lock: {got!r}")


@tool_bad("acquire_lock")
async def acquire_lock_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("acquire_lock", resource="db", agentId="alice", ttlSeconds=0)


@tool_call("release_lock")
async def release_lock_call(ctx: Ctx) -> None:
    resource = ctx.unique("lock")
    await ctx.a.call("acquire_lock", resource=resource, agentId="alice")
    got = await ctx.a.call("release_lock", resource=resource, agentId="alice")
    s.expect_shape(got, s.obj({"released": s.BOOL, "resource": s.STR}), "release_lock")
    expect(got["released"] is True, f"the holder could not release: {got!r}")


@tool_bad("release_lock")
async def release_lock_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("release_lock", agentId="alice")


@tool_call("list_locks")
async def list_locks_call(ctx: Ctx) -> None:
    resource = ctx.unique("lock")
    ctx.finally_(lambda: ctx.a.attempt("release_lock", resource=resource, agentId="alice"))
    await ctx.a.call("acquire_lock", resource=resource, agentId="alice")
    got = await ctx.a.call("list_locks")
    s.expect_shape(got, s.LOCKS, "list_locks")
    held = [lock for lock in got if lock["resource"] == resource]
    expect(held and held[0]["owner"] == "alice", f"{resource} held by alice is not listed")


@tool_bad("list_locks")
async def list_locks_bad(ctx: Ctx) -> str:
    return await ctx.conn_a.refuse("list_locks")  # no roomId


@tool_call("set_shared_var")
async def set_shared_var_call(ctx: Ctx) -> None:
    key = ctx.unique("var")
    got = await ctx.a.call("set_shared_var", key=key, value="v1", agentId="alice")
    s.expect_shape(got, s.obj({"key": s.STR, "value": s.ANY}), "set_shared_var")
    expect(got["key"] == key and got["value"] == "v1", f"not echoed: {got!r}")


@tool_bad("set_shared_var")
async def set_shared_var_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("set_shared_var", key="no-value", agentId="alice")


@tool_call("get_shared_var")
async def get_shared_var_call(ctx: Ctx) -> None:
    key = ctx.unique("var")
    await ctx.a.call("set_shared_var", key=key, value="hello", agentId="alice")
    got = await ctx.a.call("get_shared_var", key=key)
    s.expect_shape(got, s.obj({"key": s.STR, "value": s.ANY, "found": s.BOOL}), "get_shared_var")
    expect(got["found"] is True and got["value"] == "hello", f"not what was set: {got!r}")


@tool_bad("get_shared_var")
async def get_shared_var_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("get_shared_var")


@tool_call("list_shared_vars")
async def list_shared_vars_call(ctx: Ctx) -> None:
    key = ctx.unique("var")
    await ctx.a.call("set_shared_var", key=key, value="x", agentId="alice")
    got = await ctx.a.call("list_shared_vars")
    s.expect_shape(got, s.obj({"vars": s.ANY, "count": s.INT}), "list_shared_vars")
    listed = got["vars"]
    keys = list(listed) if isinstance(listed, dict) else names(listed, "key")
    expect(key in keys, f"{key} is not among the listed vars")
    expect(got["count"] == len(listed), f"count {got['count']} but {len(listed)} vars listed")


@tool_bad("list_shared_vars")
async def list_shared_vars_bad(ctx: Ctx) -> str:
    return await ctx.conn_a.refuse("list_shared_vars")  # no roomId


# --- roomd's other tools ------------------------------------------------------------------


@tool_call("leave_room")
async def leave_room_call(ctx: Ctx) -> None:
    agent = ctx.unique("leaver")
    await steps.joined(ctx.a, agent)
    got = await ctx.a.call("leave_room", agentId=agent)
    s.expect_shape(got, s.obj({"left": s.BOOL, "agentId": s.STR, "agents": s.LIST}), "leave_room")
    expect(got["left"] is True, f"leave_room: {got!r}")
    left = [a if isinstance(a, str) else a.get("agentId") for a in got["agents"]]
    expect(agent not in left, f"{agent} is still among the agents after leaving")


@tool_bad("leave_room")
async def leave_room_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("leave_room")


@tool_call("get_room_info")
async def get_room_info_call(ctx: Ctx) -> None:
    got = await ctx.a.call("get_room_info")
    s.expect_shape(got, s.ROOM_INFO, "get_room_info")
    expect(got["roomId"] == ctx.a.room_id, f"roomId {got['roomId']!r}")


@tool_bad("get_room_info")
async def get_room_info_bad(ctx: Ctx) -> str:
    return await ctx.conn_a.refuse("get_room_info")  # no roomId


@tool_call("get_room_analytics")
async def get_room_analytics_call(ctx: Ctx) -> None:
    got = await ctx.a.call("get_room_analytics", days=7)
    s.expect_shape(got, s.ANALYTICS, "get_room_analytics")
    expect(got["roomId"] == ctx.a.room_id, f"roomId {got['roomId']!r}")


@tool_bad("get_room_analytics")
async def get_room_analytics_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("get_room_analytics", days=0)


@tool_call("delete_task")
async def delete_task_call(ctx: Ctx) -> None:
    task = await steps.new_task(ctx.a, ctx)
    got = await ctx.a.call("delete_task", taskId=task["id"], agentId="alice")
    s.expect_shape(got, s.obj({"deleted": s.BOOL, "taskId": s.TEXT}), "delete_task")
    expect(got["deleted"] is True and got["taskId"] == task["id"], f"delete_task: {got!r}")
    await ctx.a.refuse("get_task", taskId=task["id"])


@tool_bad("delete_task")
async def delete_task_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("delete_task", taskId=MISSING)


@tool_call("set_task_priority")
async def set_task_priority_call(ctx: Ctx) -> None:
    task = await steps.new_task(ctx.a, ctx)
    got = await ctx.a.call("set_task_priority", taskId=task["id"], priority=3)
    s.expect_shape(got, s.TASK, "set_task_priority")
    expect(got.get("priority") == 3, f"priority is {got.get('priority')!r}, not 3")


@tool_bad("set_task_priority")
async def set_task_priority_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("set_task_priority", taskId=MISSING, priority=1)


@tool_call("add_dependency")
async def add_dependency_call(ctx: Ctx) -> None:
    first = await steps.new_task(ctx.a, ctx)
    then = await steps.new_task(ctx.a, ctx)
    got = await ctx.a.call("add_dependency", taskId=then["id"], dependsOn=first["id"])
    s.expect_shape(got, s.TASK, "add_dependency")
    expect(got["depends_on"] == [first["id"]], f"depends_on is {got['depends_on']!r}")


@tool_bad("add_dependency")
async def add_dependency_bad(ctx: Ctx) -> str:
    task = await steps.new_task(ctx.a, ctx)
    return await ctx.a.refuse("add_dependency", taskId=task["id"], dependsOn=task["id"])


@tool_call("delete_context")
async def delete_context_call(ctx: Ctx) -> None:
    entry = await steps.new_context(ctx.a, ctx)
    got = await ctx.a.call("delete_context", id=entry["id"], agentId="alice")
    s.expect_shape(got, s.obj({"deleted": s.BOOL, "id": s.TEXT}), "delete_context")
    expect(got["deleted"] is True, f"delete_context: {got!r}")
    await ctx.a.refuse("read_context", id=entry["id"])


@tool_bad("delete_context")
async def delete_context_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("delete_context", id=MISSING)


@tool_call("get_context_history")
async def get_context_history_call(ctx: Ctx) -> None:
    entry = await steps.new_context(ctx.a, ctx)
    await ctx.a.call("update_context", id=entry["id"], author="alice", summary="second")
    got = await ctx.a.call("get_context_history", id=entry["id"])
    shape = s.obj({"id": s.TEXT, "current": s.CONTEXT, "history": s.list_of(s.CONTEXT)})
    s.expect_shape(got, shape, "get_context_history")
    expect(got["current"]["version"] == "1.1", "current is not the updated version")
    expect("1.0" in names(got["history"], "version"), "version 1.0 is not kept in history")


@tool_bad("get_context_history")
async def get_context_history_bad(ctx: Ctx) -> str:
    # An unknown id is refused by us and answered by roomd: the protocol's bad input is a
    # missing id (the unknown one is judged by "unknown context ids are refused").
    return await ctx.a.refuse("get_context_history")


@tool_call("diff_context")
async def diff_context_call(ctx: Ctx) -> None:
    entry = await steps.new_context(ctx.a, ctx, summary="before")
    await ctx.a.call("update_context", id=entry["id"], author="alice", summary="after")
    got = await ctx.a.call("diff_context", id=entry["id"])
    s.expect_shape(got, s.DIFF, "diff_context")
    diff = got["diff"]
    expect(diff["summaryChanged"] is True, "summaryChanged is not true")
    expect(
        (diff["fromVersion"], diff["toVersion"]) == ("1.0", "1.1"),
        f"the diff is from {diff['fromVersion']!r} to {diff['toVersion']!r}, not 1.0 to 1.1",
    )


@tool_bad("diff_context")
async def diff_context_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("diff_context", id=MISSING)


@tool_call("delete_event")
async def delete_event_call(ctx: Ctx) -> None:
    event = await steps.new_event(ctx.a, ctx)
    got = await ctx.a.call("delete_event", eventId=event["id"], agentId="alice")
    s.expect_shape(got, s.obj({"deleted": s.BOOL, "eventId": s.TEXT}), "delete_event")
    expect(got["deleted"] is True and got["eventId"] == event["id"], f"delete_event: {got!r}")


@tool_bad("delete_event")
async def delete_event_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("delete_event", eventId=MISSING)


@tool_call("search")
async def search_call(ctx: Ctx) -> None:
    token = steps.word()
    task = await steps.new_task(ctx.a, ctx, title=f"find {token} here")
    got = await ctx.a.call("search", q=token, limit=5)
    s.expect_shape(got, s.SEARCH, "search")
    hits = [(h["kind"], h["id"]) for h in got["hits"]]
    expect(("task", task["id"]) in hits, f"the task titled with {token!r} is not a hit: {hits}")


@tool_bad("search")
async def search_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("search", q="")


@tool_call("list_templates")
async def list_templates_call(ctx: Ctx) -> None:
    got = await ctx.conn_a.call("list_templates")
    s.expect_shape(got, s.TEMPLATES, "list_templates")
    ids = set(names(got["templates"], "id"))
    expect({"blank", "web-app", "incident"} <= ids, f"templates are {sorted(ids)}")


@tool_bad("list_templates", source="ours")
async def list_templates_bad(ctx: Ctx) -> str:
    # It takes no arguments: the only bad input is an unknown one (roomd drops those).
    return await ctx.conn_a.refuse("list_templates", templateID="web-app")


@tool_call("create_room_from_template")
async def create_room_from_template_call(ctx: Ctx) -> None:
    room = ctx.room("tpl")
    got = await ctx.conn_a.call(
        "create_room_from_template", templateId="web-app", roomId=room.room_id, agentId="alice"
    )
    shape = s.obj({"roomId": s.STR, "templateId": s.STR, "taskCount": s.INT})
    s.expect_shape(got, shape, "create_room_from_template")
    expect(got["roomId"] == room.room_id and got["templateId"] == "web-app", f"{got!r}")
    plan = await room.call("read_plan")
    expect(
        len(plan["tasks"]) == got["taskCount"] > 0,
        f"taskCount {got['taskCount']} but the plan holds {len(plan['tasks'])} tasks",
    )


@tool_bad("create_room_from_template")
async def create_room_from_template_bad(ctx: Ctx) -> str:
    return await ctx.conn_a.refuse(
        "create_room_from_template", templateId="no-such-template", roomId=ctx.room("tpl").room_id
    )


@tool_call("request_review")
async def request_review_call(ctx: Ctx) -> None:
    got = await steps.review(ctx.a, ctx)
    s.expect_shape(got, s.REVIEW, "request_review")
    expect(got["status"] == "pending" and got["reviewer"] == "bob", f"{got!r}")


@tool_bad("request_review")
async def request_review_bad(ctx: Ctx) -> str:
    # targetType is one of two (roomd does not look for the target: see the ours check).
    task = await steps.new_task(ctx.a, ctx)
    return await ctx.a.refuse(
        "request_review",
        targetType="folder",
        targetId=task["id"],
        requestedBy="alice",
        reviewer="bob",
    )


@tool_call("approve")
async def approve_call(ctx: Ctx) -> None:
    made = await steps.review(ctx.a, ctx)
    _, answer = await steps.resolve(
        ctx.a, ctx, "approve", reviewId=made["id"], agentId="bob", note="fine"
    )
    expect(answer.ok, f"approve refused a valid call: {answer.text}")
    got = answer.value
    s.expect_shape(got, s.REVIEW, "approve")
    s.expect_shape(got, s.RESOLVED, "approve")
    expect(got["status"] == "approved" and got["resolvedBy"] == "bob", f"{got!r}")


@tool_bad("approve")
async def approve_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("approve", reviewId=MISSING, agentId="bob")


@tool_call("reject")
async def reject_call(ctx: Ctx) -> None:
    made = await steps.review(ctx.a, ctx)
    _, answer = await steps.resolve(
        ctx.a, ctx, "reject", reviewId=made["id"], agentId="bob", note="not yet"
    )
    expect(answer.ok, f"reject refused a valid call: {answer.text}")
    got = answer.value
    s.expect_shape(got, s.REVIEW, "reject")
    s.expect_shape(got, s.RESOLVED, "reject")
    expect(got["status"] == "rejected" and got["resolvedBy"] == "bob", f"{got!r}")


@tool_bad("reject")
async def reject_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("reject", reviewId=MISSING, agentId="bob")


@tool_call("list_reviews")
async def list_reviews_call(ctx: Ctx) -> None:
    made = await steps.review(ctx.a, ctx)
    got = await ctx.a.call("list_reviews")
    s.expect_shape(got, s.list_of(s.REVIEW), "list_reviews")
    expect(made["id"] in names(got, "id"), "the review just requested is not listed")


@tool_bad("list_reviews")
async def list_reviews_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("list_reviews", status="no-such-status")


@tool_call("list_rooms")
async def list_rooms_call(ctx: Ctx) -> None:
    await ctx.a.call("read_plan")
    got = await ctx.conn_a.call("list_rooms")
    s.expect_shape(got, s.ROOMS, "list_rooms")
    expect(ctx.a.room_id in s.room_ids(got), "the run's own room is not listed")


@tool_bad("list_rooms", source="ours")
async def list_rooms_bad(ctx: Ctx) -> str:
    return await ctx.conn_a.refuse("list_rooms", teamId="another-team")


# --- Claims (ours) ------------------------------------------------------------------------


@tool_call("claim_task", source="ours")
async def claim_task_call(ctx: Ctx) -> None:
    task = await steps.new_task(ctx.a, ctx)
    got = await ctx.a.call("claim_task", taskId=task["id"], agentId="alice")
    s.expect_shape(got, s.TASK, "claim_task")
    expect(got["owner"] == "alice" and got["status"] == "in_progress", f"{got!r}")


@tool_bad("claim_task", source="ours")
async def claim_task_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("claim_task", taskId=MISSING, agentId="alice")


@tool_call("release_task", source="ours")
async def release_task_call(ctx: Ctx) -> None:
    task = await steps.new_task(ctx.a, ctx)
    await ctx.a.call("claim_task", taskId=task["id"], agentId="alice")
    got = await ctx.a.call("release_task", taskId=task["id"], agentId="alice", note="later")
    s.expect_shape(got, s.TASK, "release_task")
    expect(got["owner"] is None and got["status"] == "pending", f"{got!r}")


@tool_bad("release_task", source="ours")
async def release_task_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("release_task", taskId=MISSING, agentId="alice")


# --- Files and messages (ours) ------------------------------------------------------------


@tool_call("lease_claim", source="ours")
async def lease_claim_call(ctx: Ctx) -> None:
    path = f"conf/{ctx.unique('dir')}/**"
    got = await ctx.a.call("lease_claim", agentId="alice", path=path, ttlSeconds=60, reason="kit")
    s.expect_shape(got, s.LEASE_CLAIM, "lease_claim")
    expect(got["granted"] is True and got["conflicts"] == [], f"a free path: {got!r}")
    expect((got["lease"]["path"], got["lease"]["holder"]) == (path, "alice"), f"{got!r}")


@tool_bad("lease_claim", source="ours")
async def lease_claim_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("lease_claim", agentId="alice", path="../outside/the/repository")


@tool_call("lease_renew", source="ours")
async def lease_renew_call(ctx: Ctx) -> None:
    lease = await steps.lease(ctx.a, ctx)
    got = await ctx.a.call("lease_renew", agentId="alice", leaseId=lease["id"], ttlSeconds=120)
    s.expect_shape(got, s.LEASE, "lease_renew")
    expect(got["id"] == lease["id"], "lease_renew answered another lease")


@tool_bad("lease_renew", source="ours")
async def lease_renew_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("lease_renew", agentId="alice", leaseId=MISSING)


@tool_call("lease_release", source="ours")
async def lease_release_call(ctx: Ctx) -> None:
    lease = await steps.lease(ctx.a, ctx)
    got = await ctx.a.call("lease_release", agentId="alice", leaseId=lease["id"])
    s.expect_shape(got, s.LEASE_RELEASE, "lease_release")
    expect(got["released"] is True, f"{got!r}")


@tool_bad("lease_release", source="ours")
async def lease_release_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("lease_release", agentId="alice", leaseId=MISSING)


@tool_call("lease_check", source="ours")
async def lease_check_call(ctx: Ctx) -> None:
    lease = await steps.lease(ctx.a, ctx)
    path = lease["path"].replace("**", "main.py")
    got = await ctx.a.call("lease_check", path=path, agentId="bob")
    s.expect_shape(got, s.obj({"free": s.BOOL, "leases": s.list_of(s.LEASE)}), "lease_check")
    expect(got["free"] is False, f"{path} is free for bob while alice leases {lease['path']}")
    expect(lease["id"] in names(got["leases"], "id"), "the overlapping lease is not listed")


@tool_bad("lease_check", source="ours")
async def lease_check_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("lease_check", agentId="bob")


@tool_call("lease_list", source="ours")
async def lease_list_call(ctx: Ctx) -> None:
    lease = await steps.lease(ctx.a, ctx)
    got = await ctx.a.call("lease_list")
    s.expect_shape(got, s.obj({"leases": s.list_of(s.LEASE)}), "lease_list")
    expect(lease["id"] in names(got["leases"], "id"), "the live lease is not listed")


@tool_bad("lease_list", source="ours")
async def lease_list_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("lease_list", roomId=BAD_ROOM)


@tool_call("note_read", source="ours")
async def note_read_call(ctx: Ctx) -> None:
    path = f"conf/{ctx.unique('file')}.py"
    got = await ctx.a.call("note_read", agentId="alice", path=path, sha256=SHA_A)
    shape = s.obj({"path": s.STR, "sha256": s.STR, "at": s.TIMESTAMP})
    s.expect_shape(got, shape, "note_read")
    expect((got["path"], got["sha256"].lower()) == (path, SHA_A), f"{got!r}")


@tool_bad("note_read", source="ours")
async def note_read_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("note_read", agentId="alice", path="a.py", sha256="not-a-hash")


@tool_call("drift_check", source="ours")
async def drift_check_call(ctx: Ctx) -> None:
    path = f"conf/{ctx.unique('file')}.py"
    await ctx.a.call("note_read", agentId="alice", path=path, sha256=SHA_A)
    got = await ctx.a.call("drift_check", agentId="alice", path=path, sha256=SHA_A)
    s.expect_shape(got, s.DRIFT, "drift_check")
    expect(got["severity"] == "SAFE" and got["changed"] is False, f"unchanged file: {got!r}")


@tool_bad("drift_check", source="ours")
async def drift_check_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("drift_check", agentId="alice", path="a.py", sha256="xyz")


@tool_call("send_message", source="ours")
async def send_message_call(ctx: Ctx) -> None:
    got = await steps.message(ctx.a, subject="hello")
    shape = s.obj({"messageId": s.TEXT, "recipients": s.list_of(s.STR), "count": s.INT})
    s.expect_shape(got, shape, "send_message")
    expect((got["recipients"], got["count"]) == (["bob"], 1), f"one recipient, bob: {got!r}")


@tool_bad("send_message", source="ours")
async def send_message_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("send_message", from_="alice", to=ctx.unique("nobody"), body="hi")


@tool_call("inbox", source="ours")
async def inbox_call(ctx: Ctx) -> None:
    agent = ctx.unique("reader")
    sent = await steps.message(ctx.a, to=agent)
    got = await ctx.a.call("inbox", agentId=agent, limit=10)
    s.expect_shape(got, s.obj({"messages": s.list_of(s.MESSAGE), "inbox": s.ANY}), "inbox")
    expect(names(got["messages"], "messageId") == [sent["messageId"]], f"{got['messages']!r}")


@tool_bad("inbox", source="ours")
async def inbox_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("inbox", agentId="bob", limit=0)


@tool_call("ack_message", source="ours")
async def ack_message_call(ctx: Ctx) -> None:
    sent = await steps.message(ctx.a, ackRequired=True)
    got = await ctx.a.call("ack_message", agentId="bob", messageId=sent["messageId"])
    shape = s.obj({"messageId": s.TEXT, "state": s.one_of("acked")})
    s.expect_shape(got, shape, "ack_message")


@tool_bad("ack_message", source="ours")
async def ack_message_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("ack_message", agentId="bob", messageId=MISSING)


@tool_call("sent_messages", source="ours")
async def sent_messages_call(ctx: Ctx) -> None:
    sender = ctx.unique("sender")
    await steps.joined(ctx.a, "bob")
    sent = await ctx.a.call("send_message", from_=sender, to="bob", body="hi")
    got = await ctx.a.call("sent_messages", agentId=sender)
    s.expect_shape(got, s.SENT, "sent_messages")
    expect(names(got["messages"], "messageId") == [sent["messageId"]], f"{got!r}")


@tool_bad("sent_messages", source="ours")
async def sent_messages_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("sent_messages", agentId="alice", limit=0)


@tool_call("room_claim", source="ours")
async def room_claim_call(ctx: Ctx) -> None:
    path = f"conf/{ctx.unique('claimed')}.py"
    got = await ctx.a.call("room_claim", agentId="alice", path=path)
    s.expect_shape(got, s.LEASE_CLAIM, "room_claim")
    expect(got["granted"] is True and got["lease"]["mode"] == "exclusive", f"{got!r}")


@tool_bad("room_claim", source="ours")
async def room_claim_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("room_claim", agentId="alice", path="../../etc/passwd")


@tool_call("room_release", source="ours")
async def room_release_call(ctx: Ctx) -> None:
    path = f"conf/{ctx.unique('claimed')}.py"
    await ctx.a.call("room_claim", agentId="alice", path=path)
    got = await ctx.a.call("room_release", agentId="alice", path=path)
    s.expect_shape(got, s.LEASE_RELEASE, "room_release")
    expect(got["released"] is True, f"{got!r}")


@tool_bad("room_release", source="ours")
async def room_release_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("room_release", agentId="alice")


@tool_call("room_broadcast", source="ours")
async def room_broadcast_call(ctx: Ctx) -> None:
    got = await ctx.a.call("room_broadcast", agentId="alice", text="hello, room")
    s.expect_shape(got, s.EVENT, "room_broadcast")
    expect(got["type"] == "broadcast", f"type {got['type']!r}, not broadcast")


@tool_bad("room_broadcast", source="ours")
async def room_broadcast_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("room_broadcast", agentId="alice", text="")


@tool_call("room_state", source="ours")
async def room_state_call(ctx: Ctx) -> None:
    lease = await steps.lease(ctx.a, ctx)
    got = await ctx.a.call("room_state")
    shape = s.obj({"leases": s.LIST, "agents": s.ANY, "recentBroadcasts": s.LIST})
    s.expect_shape(got, shape, "room_state")
    paths = names(got["leases"], "path")
    expect(lease["path"] in paths, f"the live lease {lease['path']} is not in room_state")


@tool_bad("room_state", source="ours")
async def room_state_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("room_state", roomId=BAD_ROOM)


@tool_call("room_read", source="ours")
async def room_read_call(ctx: Ctx) -> None:
    await steps.new_event(ctx.a, ctx)
    got = await ctx.a.call("room_read", agentId=ctx.unique("reader"), limit=5)
    s.expect_shape(got, s.UNREAD, "room_read")
    expect(1 <= got["count"] == len(got["events"]) <= 5, f"count {got['count']}")


@tool_bad("room_read", source="ours")
async def room_read_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("room_read", agentId="alice", limit=0)


# --- Proven work and durable rooms (ours) -------------------------------------------------


@tool_call("submit_task", source="ours")
async def submit_task_call(ctx: Ctx) -> None:
    got = await steps.submitted(ctx.a, ctx)
    s.expect_shape(got, s.TASK, "submit_task")
    verification = s.obj(
        {
            "state": s.one_of("submitted"),
            "evidence": s.LIST,
            "submittedBy": s.STR,
            "at": s.TIMESTAMP,
        }
    )
    s.expect_shape(got, s.obj({"verification": verification}), "submit_task")


@tool_bad("submit_task", source="ours")
async def submit_task_bad(ctx: Ctx) -> str:
    task = await steps.owned_task(ctx.a, ctx, "alice")
    return await ctx.a.refuse("submit_task", taskId=task["id"], agentId="alice", evidence=[])


@tool_call("verify_task", source="ours")
async def verify_task_call(ctx: Ctx) -> None:
    task = await steps.submitted(ctx.a, ctx)
    got = await ctx.a.call("verify_task", taskId=task["id"], agentId="bob", verdict="accept")
    s.expect_shape(got, s.TASK, "verify_task")
    expect(got["status"] == "done", f"an accepted task is {got['status']!r}, not done")


@tool_bad("verify_task", source="ours")
async def verify_task_bad(ctx: Ctx) -> str:
    task = await steps.submitted(ctx.a, ctx)
    return await ctx.a.refuse("verify_task", taskId=task["id"], agentId="bob", verdict="maybe")


@tool_call("handoff_task", source="ours")
async def handoff_task_call(ctx: Ctx) -> None:
    task, got = await steps.handoff(ctx.a, ctx)
    s.expect_shape(got, s.HANDOFF, "handoff_task")
    expect((got["taskId"], got["status"]) == (task["id"], "offered"), f"{got!r}")


@tool_bad("handoff_task", source="ours")
async def handoff_task_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("handoff_task", taskId=MISSING, from_="alice", to="bob")


@tool_call("accept_handoff", source="ours")
async def accept_handoff_call(ctx: Ctx) -> None:
    task, offered = await steps.handoff(ctx.a, ctx)
    got = await ctx.a.call("accept_handoff", handoffId=offered["id"], agentId="bob")
    s.expect_shape(got, s.HANDOFF, "accept_handoff")
    expect(got["status"] == "accepted", f"{got!r}")
    owner = (await ctx.a.call("get_task", taskId=task["id"]))["owner"]
    expect(owner == "bob", f"after the accept the task is owned by {owner!r}, not bob")


@tool_bad("accept_handoff", source="ours")
async def accept_handoff_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("accept_handoff", handoffId=MISSING, agentId="bob")


@tool_call("decline_handoff", source="ours")
async def decline_handoff_call(ctx: Ctx) -> None:
    task, offered = await steps.handoff(ctx.a, ctx)
    got = await ctx.a.call("decline_handoff", handoffId=offered["id"], agentId="bob", note="busy")
    s.expect_shape(got, s.HANDOFF, "decline_handoff")
    expect(got["status"] == "declined", f"{got!r}")
    owner = (await ctx.a.call("get_task", taskId=task["id"]))["owner"]
    expect(owner == "alice", f"after the decline the task is owned by {owner!r}, not alice")


@tool_bad("decline_handoff", source="ours")
async def decline_handoff_bad(ctx: Ctx) -> str:
    return await ctx.a.refuse("decline_handoff", handoffId=MISSING, agentId="bob")


@tool_call("set_room_mode", source="ours")
async def set_room_mode_call(ctx: Ctx) -> None:
    room = ctx.room("settings")
    got = await room.call("set_room_mode", agentId="alice", evidenceRequired=False, turns="open")
    shape = s.obj({"roomId": s.STR, "evidenceRequired": s.BOOL, "turns": s.STR})
    s.expect_shape(got, shape, "set_room_mode")
    expect(got["roomId"] == room.room_id and got["turns"] == "open", f"{got!r}")


@tool_bad("set_room_mode", source="ours")
async def set_room_mode_bad(ctx: Ctx) -> str:
    return await ctx.room("settings").refuse("set_room_mode", agentId="alice", turns="chaos")


@tool_call("set_room_status", source="ours")
async def set_room_status_call(ctx: Ctx) -> None:
    room = ctx.room("settings")
    got = await room.call("set_room_status", status="active", agentId="alice")
    s.expect_shape(got, s.obj({"roomId": s.STR, "status": s.STR}), "set_room_status")
    expect((got["roomId"], got["status"]) == (room.room_id, "active"), f"{got!r}")


@tool_bad("set_room_status", source="ours")
async def set_room_status_bad(ctx: Ctx) -> str:
    return await ctx.room("settings").refuse("set_room_status", status="deleted", agentId="alice")
