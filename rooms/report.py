"""A room as Markdown: participants, the plan's final state, decisions and contracts with
their versions, change requests, and a timeline — usable as meeting minutes, an ADR
appendix or a PR description."""

from __future__ import annotations

from typing import Any

from rooms.refs import RoomRef
from rooms.results import ContextEntry, Event, Handoff, RoomSnapshot
from rooms.selectors import context as context_selectors
from rooms.selectors import events as events_selectors
from rooms.selectors import handoffs as handoffs_selectors
from rooms.selectors import room as room_selectors

TIMELINE_TYPES = {
    "task_added",
    "task_updated",
    "context_available",
    "context_updated",
    "task_submitted",
    "task_verified",
    "task_rejected",
    "handoff_offered",
    "handoff_accepted",
    "handoff_declined",
    "room_status_changed",
}


def _obj(value: Any) -> dict[str, Any]:
    """A payload as a mapping, whatever an agent stored there (a string, a list, null)."""
    return value if isinstance(value, dict) else {}


def _cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def report_markdown(
    room_id: str,
    snapshot: RoomSnapshot,
    histories: dict[str, list[ContextEntry]],
    timeline: list[Event],
    handoffs: list[Handoff] | None = None,
) -> str:
    plan = snapshot["plan"]
    tasks = plan["tasks"]
    done = sum(1 for t in tasks if t["status"] == "done")
    out = [f"# Room `{room_id}`", ""]
    out += [
        f"Created {plan['created_at']}, last plan change {plan['updated_at']}. "
        f"{done} of {len(tasks)} tasks done.",
        "",
    ]

    out += ["## Participants", ""]
    if snapshot["presence"]:
        out += [
            f"- **{p['agentId']}** — {p['status']}, last seen {p['lastSeen']}"
            for p in snapshot["presence"]
        ]
    else:
        out.append("_No agent has sent a heartbeat._")
    out.append("")

    out += ["## Plan", ""]
    if tasks:
        out += ["| task | status | owner | depends on |", "|---|---|---|---|"]
        titles = {t["id"]: t["title"] for t in tasks}
        for t in tasks:
            deps = ", ".join(_cell(titles.get(d, d)) for d in t.get("depends_on") or [])
            owner = _cell(t.get("owner") or "—")
            out.append(f"| {_cell(t['title'])} | {t['status']} | {owner} | {deps or '—'} |")
    else:
        out.append("_The plan is empty._")
    out.append("")

    by_type: dict[str, list[ContextEntry]] = {}
    for entry in snapshot["context"]:
        by_type.setdefault(entry["type"], []).append(entry)

    out += ["## Decisions", ""]
    for entry in by_type.get("arch_decision", []):
        p = _obj(entry["payload"])
        out += [
            f"### {p.get('title', entry['summary'])} (v{entry['version']}, {entry['author']})",
            "",
            f"**Decision.** {p.get('decision', '')}",
            "",
            f"**Rationale.** {p.get('rationale', '')}",
            "",
        ]
        if p.get("alternatives"):
            out += ["**Alternatives considered.**", *[f"- {a}" for a in p["alternatives"]], ""]
        if p.get("consequences"):
            out += ["**Consequences.**", *[f"- {c}" for c in p["consequences"]], ""]
    if not by_type.get("arch_decision"):
        out += ["_No architecture decisions recorded._", ""]

    out += ["## Contracts", ""]
    for entry in by_type.get("api_contract", []):
        p = _obj(entry["payload"])
        out += [
            f"### {p.get('service', entry['summary'])} — contract v{entry['version']} "
            f"(API version {p.get('version', '?')})",
            "",
        ]
        if p.get("base_url"):
            out += [f"Base URL: `{p['base_url']}`", ""]
        out += ["| method | path | auth | description |", "|---|---|---|---|"]
        for e in p.get("endpoints", []):
            out.append(
                f"| {e.get('method')} | `{_cell(e.get('path'))}` | "
                f"{'yes' if e.get('auth_required') else 'no'} | {_cell(e.get('description'))} |"
            )
        out.append("")
        history = histories.get(entry["id"], [])
        if len(history) > 1:
            out += ["Versions:", ""]
            for version in history:
                changes = "; ".join(version.get("changes") or []) or "first version"
                who = f"{version['author']}, {version['timestamp']}"
                out.append(f"- v{version['version']} ({who}): {changes}")
            out.append("")
    if not by_type.get("api_contract"):
        out += ["_No API contracts recorded._", ""]

    out += ["## Verified work", ""]
    proven = [t for t in tasks if t.get("verification")]
    for t in proven:
        v = t["verification"]
        judged = (
            f", verified by {v['verifiedBy']} at {v['verifiedAt']}"
            if v["state"] == "verified"
            else f", rejected by {v['rejectedBy']} at {v['rejectedAt']}: {v.get('note', '')}"
            if v["state"] == "rejected"
            else ", awaiting verification"
        )
        out.append(f"### {t['title']} — {v['state']}")
        out += ["", f"Submitted by {v['submittedBy']} at {v['at']}{judged}.", ""]
        for item in v["evidence"]:
            ref = f" ({item['ref']})" if item.get("ref") else ""
            out.append(f"- **{item['kind']}**{ref}: {_cell(item['text'])}")
        out.append("")
    if not proven:
        out += ["_No task was submitted for verification._", ""]

    out += ["## Handoffs", ""]
    titles = {t["id"]: t["title"] for t in tasks}
    for h in handoffs or []:
        answered = f" — {h['status']} at {h['resolvedAt']}" if h.get("resolvedAt") else ""
        note = f": {_cell(h['note'])}" if h.get("note") else ""
        out.append(
            f"- “{_cell(titles.get(h['taskId'], h['taskId']))}” {h['from']} → {h['to']} "
            f"({h['at']}){answered}{note}"
        )
    if not handoffs:
        out.append("_No handoffs._")
    out.append("")

    out += ["## Change requests", ""]
    for entry in by_type.get("change_request", []):
        p = _obj(entry["payload"])
        out.append(
            f"- **{p.get('requested_by')} → {p.get('target_agent')}** ({p.get('urgency')}): "
            f"{p.get('description')} — v{entry['version']}"
        )
    if not by_type.get("change_request"):
        out.append("_None._")
    out.append("")

    out += ["## Timeline", ""]
    for event in timeline:
        out.append(f"- {event['timestamp']} — {_timeline_line(event)}")
    if not timeline:
        out.append("_No events._")
    out.append("")
    return "\n".join(out)


def _timeline_line(event: Event) -> str:
    p = _obj(event.get("payload"))
    kind = event["type"]
    if kind == "task_added":
        return f"task added: {p.get('title')}"
    if kind == "task_updated":
        task = _obj(p.get("task"))
        note = f" — {p['note']}" if p.get("note") else ""
        moved = f"{p.get('previousStatus')} → {task.get('status')}"
        return f"{event['from']} moved “{task.get('title')}” {moved}{note}"
    if kind in ("context_available", "context_updated"):
        verb = "wrote" if kind == "context_available" else "updated"
        return f"{event['from']} {verb} {p.get('type')} “{p.get('summary')}” (v{p.get('version')})"
    if kind in ("task_submitted", "task_verified", "task_rejected"):
        task = _obj(p.get("task"))
        verb = {"task_submitted": "submitted", "task_verified": "verified"}.get(kind, "rejected")
        note = f" — {p['note']}" if p.get("note") else ""
        return f"{event['from']} {verb} “{task.get('title')}”{note}"
    if kind.startswith("handoff_"):
        h = _obj(p.get("handoff")) or p
        verb = kind.removeprefix("handoff_")
        return f"handoff of {h.get('taskId')} {h.get('from')} → {h.get('to')} {verb}"
    if kind == "room_status_changed":
        return f"{event['from']} set the room {p.get('status')} (was {p.get('previousStatus')})"
    return f"{event['from']} → {event['to']}: {kind}"


async def room_report(room: RoomRef, *, most_events: int = 2000) -> str:
    """Read the room (its whole retained log, oldest first, page by page) and write the report."""
    snapshot = await room_selectors.room_snapshot(room, events=100)
    histories = {
        entry["id"]: await context_selectors.context_history(room, entry_id=entry["id"])
        for entry in snapshot["context"]
        if entry["type"] == "api_contract"
    }
    timeline: list[Event] = []
    since = None
    while True:
        page = await events_selectors.event_list(room, since=since, limit=100, order="asc")
        timeline += [e for e in page if e["type"] in TIMELINE_TYPES or e.get("reply_to_id")]
        if len(page) < 100 or len(timeline) > most_events:
            break
        since = page[-1]["id"]
    handoffs = await handoffs_selectors.handoffs_all(room)
    return report_markdown(room.room_id, snapshot, histories, timeline, handoffs)
