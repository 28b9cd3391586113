"""The room as a whole: its info and analytics, and the overview, snapshot and live view the
dashboard shows."""

from __future__ import annotations

from django.conf import settings

from rooms import clock
from rooms.records import (
    lease_from_json,
)
from rooms.refs import RoomRef
from rooms.results import (
    AgentAtWork,
    Handoff,
    Review,
    RoomAnalytics,
    RoomInfo,
    RoomLive,
    RoomOverview,
    RoomSnapshot,
    RoomState,
    RoomWaiting,
)
from rooms.selectors.context import context_list, context_readers_attach
from rooms.selectors.events import event_list
from rooms.selectors.handoffs import handoffs_all
from rooms.selectors.leases import lease_list
from rooms.selectors.locks import lock_list
from rooms.selectors.messages import message_rows
from rooms.selectors.plan import plan_get
from rooms.selectors.presence import presence_list
from rooms.selectors.reviews import review_list
from rooms.selectors.vars import var_list
from rooms.store import events as events_store
from rooms.store import leases as leases_store
from rooms.store import room as room_store

SNAPSHOT_MESSAGES = 20  # the newest messages a person watching the room sees


async def room_info(room: RoomRef) -> RoomInfo:
    """Every count exact, in one O(1) step."""
    counts = await room_store.room_counts(room.keys)
    return {
        "roomId": room.room_id,
        "ownerTeamId": str(room.team_id),
        "createdAt": counts.created_at or clock.now_iso(),
        "memberCount": counts.members,
        "taskCount": counts.tasks,
        "contextCount": counts.context,
        "eventCount": counts.events,
    }


async def room_analytics(room: RoomRef, *, days: int) -> RoomAnalytics:
    """Tasks by status, agents, and events per day over the whole retained log: the per-day
    counts are kept with every append, trim and deletion, so this reads O(tasks + days),
    never the log itself."""
    now = clock.now_ms()
    online_ms = int(settings.PRESENCE_ONLINE_SECONDS) * 1000
    activity = await room_store.room_activity(room.keys, online_since_ms=now - online_ms)
    statuses = activity.statuses
    total = len(statuses)
    done = statuses.count("done")
    today = now // 86_400_000
    by_date = {
        clock.iso_from_ms(day * 86_400_000)[:10]: activity.per_day.get(day, 0)
        for day in range(today - days + 1, today + 1)
    }
    in_window = sum(by_date.values())
    return {
        "roomId": room.room_id,
        "ownerTeamId": str(room.team_id),
        "createdAt": activity.created_at or clock.iso_from_ms(now),
        "tasks": {
            "total": total,
            "done": done,
            "pending": statuses.count("pending"),
            "inProgress": statuses.count("in_progress"),
            "blocked": statuses.count("blocked"),
            "completionRate": round(done / total, 4) if total else 0.0,
        },
        "agents": {"total": activity.agents, "online": activity.online},
        "contextCount": activity.context,
        # roomd's meanings (docs/tools.md): lastDays is the window asked for, perDay the average
        # a day over it; the counts by date are ours, beside them.
        "events": {
            "total": activity.events,
            "lastDays": days,
            "perDay": round(in_window / days, 2),
            "inWindow": in_window,
            "byDate": by_date,
        },
    }


async def room_overview(room: RoomRef) -> RoomOverview:
    """A room at a glance: who is online and how far the plan is."""
    plan = await plan_get(room)
    presence = await presence_list(room)
    return {
        "online": [p["agentId"] for p in presence if p["status"] == "online"],
        "done": sum(1 for t in plan["tasks"] if t["status"] == "done"),
        "total": len(plan["tasks"]),
    }


async def room_snapshot(room: RoomRef, *, events: int = 50) -> RoomSnapshot:
    """Everything a person watching the room sees, in one read of each primitive."""
    context = await context_list(room, type_=None, author=None)
    await context_readers_attach(room, context)
    now = clock.now_ms()
    return {
        "plan": await plan_get(room),
        "presence": await presence_list(room),
        "events": await event_list(room, since=None, limit=events, order="desc"),
        "event_count": await events_store.event_count(room.keys),
        "context": context,
        "vars": (await var_list(room))["vars"],
        "locks": await lock_list(room),
        "leases": sorted(
            (lease_from_json(raw) for raw in await leases_store.leases_live(room.keys, now_ms=now)),
            key=lambda lease: (lease["path"], lease["holder"]),
        ),
        "messages": await message_rows(room, sender=None, limit=SNAPSHOT_MESSAGES),
    }


def agents_at_work(snapshot: RoomSnapshot) -> list[AgentAtWork]:
    """Each agent of the room's presence with its tasks in progress, its last action (of
    the events the snapshot holds) and its leases."""
    tasks = snapshot["plan"]["tasks"]
    return [
        {
            "agentId": p["agentId"],
            "status": p["status"],
            "lastSeen": p["lastSeen"],
            "state": p["state"],
            "working_on": [
                t for t in tasks if t.get("owner") == p["agentId"] and t["status"] == "in_progress"
            ],
            "last": next((e for e in snapshot["events"] if e["from"] == p["agentId"]), None),
            "leases": [lease for lease in snapshot["leases"] if lease["holder"] == p["agentId"]],
        }
        for p in snapshot["presence"]
    ]


def room_waiting(
    snapshot: RoomSnapshot, reviews: list[Review], handoffs: list[Handoff]
) -> RoomWaiting:
    """What waits for a person: submissions to verify, pending reviews (a submission is a
    review of kind "submission", listed with its task), offered handoffs, change requests
    nobody answered (an answer sets the entry's payload `status`), blocked tasks."""
    tasks = snapshot["plan"]["tasks"]
    return {
        "submitted": [
            t for t in tasks if dict(t.get("verification") or {}).get("state") == "submitted"
        ],
        "reviews": [
            r for r in reviews if r["status"] == "pending" and r.get("kind") != "submission"
        ],
        "handoffs": [h for h in handoffs if h["status"] == "offered"],
        "change_requests": [
            c
            for c in snapshot["context"]
            if c["type"] == "change_request" and not dict(c.get("payload") or {}).get("status")
        ],
        "blocked": [t for t in tasks if t["status"] == "blocked"],
    }


async def room_live(room: RoomRef) -> RoomLive:
    """The room page's one read: the snapshot, each agent at work, what waits."""
    snapshot = await room_snapshot(room)
    waiting = room_waiting(
        snapshot, await review_list(room, status="pending"), await handoffs_all(room)
    )
    mode = await room_store.room_mode_get(room.keys)
    return {
        "snapshot": snapshot,
        "agents": agents_at_work(snapshot),
        "waiting": waiting,
        "hooks": {
            "autoLeases": mode.get("autoLeases") is not False,
            "editRefusals": mode.get("editRefusals") is not False,
        },
    }


ROOM_STATE_EVENTS = 200  # the newest events room_state looks at for broadcasts


ROOM_STATE_BROADCASTS = 20


async def room_state(room: RoomRef) -> RoomState:
    """Who holds what (live leases), who is here, and the broadcasts among the newest
    ROOM_STATE_EVENTS events: bounded however long the log."""
    recent = await event_list(room, since=None, limit=ROOM_STATE_EVENTS, order="desc")
    return {
        "leases": (await lease_list(room, agent_id=None))["leases"],
        "agents": await presence_list(room),
        "recentBroadcasts": [e for e in recent if e["type"] == "broadcast"][:ROOM_STATE_BROADCASTS],
    }
