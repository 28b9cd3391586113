"""Every event of a room as a sentence a person reads, never as JSON: the dashboard's feed
and the task page say what happened in words, and an event type this module has not met
yet still reads as words (its fields named), so a new tool never shows raw payloads.

The sentence leaves out who acted (the page shows `from` beside it) and what it links to
is returned beside the text, so the door decides how a link looks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rooms.results import Event

TEXT_MAX = 200


@dataclass(frozen=True, slots=True)
class EventWords:
    text: str
    task_id: str | None = None
    context_id: str | None = None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _short(value: Any, limit: int = TEXT_MAX) -> str:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quoted(value: Any) -> str:
    return f"“{_short(value)}”" if value else ""


def _task(p: dict[str, Any], titles: Mapping[str, str]) -> tuple[str, str | None]:
    # task_added carries the task itself; the others carry it under "task".
    task = _obj(p.get("task")) or (p if "title" in p else {})
    task_id = task.get("id") or p.get("taskId") or p.get("task_id")
    title = task.get("title") or (titles.get(task_id) if isinstance(task_id, str) else None)
    return (f"“{_short(title, 80)}”" if title else f"task {task_id}"), (
        task_id if isinstance(task_id, str) else None
    )


def _with_note(text: str, p: dict[str, Any], key: str = "note") -> str:
    note = p.get(key)
    return f"{text} — {_quoted(note)}" if isinstance(note, str) and note else text


def _task_updated(p: dict[str, Any], titles: Mapping[str, str]) -> EventWords:
    name, task_id = _task(p, titles)
    changes = _obj(p.get("changes"))
    parts = []
    status = changes.get("status")
    if isinstance(status, list) and len(status) == 2:
        parts.append(f"{status[0]} → {status[1]}")
    elif p.get("previousStatus") and _obj(p.get("task")).get("status") != p.get("previousStatus"):
        parts.append(f"{p.get('previousStatus')} → {_obj(p.get('task')).get('status')}")
    owner = changes.get("owner")
    if isinstance(owner, list) and len(owner) == 2:
        parts.append(f"owner {owner[0] or 'none'} → {owner[1] or 'none'}")
    priority = changes.get("priority")
    if isinstance(priority, list) and len(priority) == 2:
        before = "none" if priority[0] is None else priority[0]
        parts.append(f"priority {before} → {priority[1]}")
    if "description" in changes:
        parts.append("description changed")
    moved = f"updated {name}" + (f": {', '.join(parts)}" if parts else "")
    return EventWords(_with_note(moved, p), task_id=task_id)


def _task_event(verb: str) -> Callable[[dict[str, Any], Mapping[str, str]], EventWords]:
    def words(p: dict[str, Any], titles: Mapping[str, str]) -> EventWords:
        name, task_id = _task(p, titles)
        text = verb.format(task=name, owner=p.get("previousOwner") or "its owner")
        if p.get("dependents"):
            text += f" (it was a dependency of {len(p['dependents'])} task(s))"
        return EventWords(_with_note(text, p), task_id=task_id)

    return words


def _context(verb: str) -> Callable[[dict[str, Any], Mapping[str, str]], EventWords]:
    def words(p: dict[str, Any], titles: Mapping[str, str]) -> EventWords:
        kind = str(p.get("type") or "context").replace("_", " ")
        version = p.get("version")
        text = f"{verb} {kind} {_quoted(p.get('summary')) or p.get('id')}"
        if p.get("previousVersion"):
            text += f" v{p['previousVersion']} → v{version}"
        elif version:
            text += f" (v{version})"
        if p.get("readVersion"):
            text += f" after its reader had v{p['readVersion']}: that copy is stale"
        consumers = p.get("consuming_agents")
        if verb == "wrote" and isinstance(consumers, list) and consumers:
            text += f" for {', '.join(str(c) for c in consumers)}"
        entry = p.get("id")
        return EventWords(text, context_id=entry if isinstance(entry, str) else None)

    return words


def _broadcast(p: dict[str, Any], titles: Mapping[str, str]) -> EventWords:
    text = _quoted(p.get("text"))
    return EventWords(f"broadcast to everyone: {text}" if text else "broadcast to everyone")


def _message(p: dict[str, Any], titles: Mapping[str, str]) -> EventWords:
    subject = p.get("subject")
    body = _quoted(p.get("body") or p.get("text"))
    head = f"sent a message {_quoted(subject)}" if subject else "sent a message"
    return EventWords(f"{head}: {body}" if body else head)


def _handoff(verb: str) -> Callable[[dict[str, Any], Mapping[str, str]], EventWords]:
    def words(p: dict[str, Any], titles: Mapping[str, str]) -> EventWords:
        h = _obj(p.get("handoff")) or p
        task_id = h.get("taskId")
        title = _obj(p.get("task")).get("title") or (
            titles.get(task_id) if isinstance(task_id, str) else None
        )
        name = f"“{_short(title, 80)}”" if title else f"task {task_id}"
        text = verb.format(task=name, source=h.get("from"), target=h.get("to"))
        # An answer's own note (resolutionNote) says who answered for whom; an offer's, why.
        text = _with_note(text, h, "resolutionNote" if h.get("resolutionNote") else "note")
        return EventWords(text, task_id=task_id if isinstance(task_id, str) else None)

    return words


def _review(verb: str) -> Callable[[dict[str, Any], Mapping[str, str]], EventWords]:
    def words(p: dict[str, Any], titles: Mapping[str, str]) -> EventWords:
        review = _obj(p.get("review")) or p
        kind, target = review.get("targetType"), review.get("targetId")
        name = (
            f"“{_short(titles[target], 80)}”"
            if kind == "task" and isinstance(target, str) and target in titles
            else f"{kind} {target}"
        )
        text = verb.format(target=name, reviewer=review.get("reviewer"))
        text = _with_note(
            text, review, "resolutionNote" if review.get("resolutionNote") else "note"
        )
        return EventWords(
            text,
            task_id=target if kind == "task" and isinstance(target, str) else None,
            context_id=target if kind == "context" and isinstance(target, str) else None,
        )

    return words


def _lease(verb: str) -> Callable[[dict[str, Any], Mapping[str, str]], EventWords]:
    def words(p: dict[str, Any], titles: Mapping[str, str]) -> EventWords:
        lease = _obj(p.get("lease")) or p
        mode = lease.get("mode")
        text = verb.format(path=lease.get("path"), mode=f" ({mode})" if mode else "")
        task_id = lease.get("taskId") or lease.get("task_id")  # (the stored lease: task_id)
        return EventWords(text, task_id=task_id if isinstance(task_id, str) else None)

    return words


def _fixed(text: str) -> Callable[[dict[str, Any], Mapping[str, str]], EventWords]:
    return lambda p, titles: EventWords(text.format(**{k: _short(v) for k, v in p.items()}))


WORDS: dict[str, Callable[[dict[str, Any], Mapping[str, str]], EventWords]] = {
    "task_added": _task_event("added task {task}"),
    "task_updated": _task_updated,
    "task_claimed": _task_event("claimed {task}"),
    "task_released": _task_event("released {task}"),
    "task_claim_expired": _task_event("{owner}'s claim on {task} ran out: it is pending again"),
    "task_deleted": _task_event("deleted {task}"),
    "task_submitted": _task_event("submitted {task} for verification"),
    "task_verified": _task_event("verified {task}: it is done"),
    "task_rejected": _task_event("rejected the submission of {task}: back in progress"),
    "context_available": _context("wrote"),
    "context_updated": _context("updated"),
    "context_stale": _context("changed"),
    "context_deleted": _context("deleted"),
    "message": _message,
    "broadcast": _broadcast,
    "message_acked": _fixed("acknowledged a message"),
    "lease_granted": _lease("leased {path}{mode}"),
    "lease_released": _lease("released the lease on {path}"),
    "shared_var_set": _fixed("set {key} = {value}"),
    "handoff_offered": _handoff("offered {task} to {target}"),
    "handoff_accepted": _handoff("accepted {task} from {source}"),
    "handoff_declined": _handoff("declined {task} from {source}"),
    "review_requested": _review("asked {reviewer} to review {target}"),
    "review_approved": _review("approved {target}"),
    "review_rejected": _review("rejected {target}"),
    "room_status_changed": _fixed("set the room {status} (it was {previousStatus})"),
    "agent_left": _fixed("left the room"),
    "event_deleted": _fixed("deleted an event"),
}


def _fields(p: dict[str, Any]) -> str:
    """An event type nobody described yet (an agent's own post_event): its fields, named."""
    parts = []
    for key, value in list(p.items())[:6]:
        if isinstance(value, dict | list):
            shown = f"{len(value)} item(s)" if value else "none"
        else:
            shown = _short(value, 80)
        parts.append(f"{key}: {shown}")
    return "; ".join(parts)


def event_words(event: Event, titles: Mapping[str, str]) -> EventWords:
    """The sentence for `event`; `titles` names tasks by id, for events that carry only one."""
    payload = event.get("payload")
    kind = str(event.get("type") or "event")
    describe = WORDS.get(kind)
    if describe is not None:
        try:
            return describe(_obj(payload), titles)
        except (KeyError, IndexError, TypeError, ValueError):
            pass  # an agent's post_event may reuse a type name with its own payload
    label = kind.replace("_", " ")
    if isinstance(payload, dict):
        detail = _fields(payload)
    elif isinstance(payload, list):
        detail = f"{len(payload)} item(s)"
    else:
        detail = _short(payload)
    return EventWords(f"posted {label}" + (f" — {detail}" if detail else ""))
