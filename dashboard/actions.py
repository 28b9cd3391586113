"""What a person can do in a room from the dashboard, each action one or two tool calls.

Every action goes through `tool_run` like an agent's call (the same checks, budgets, turn
rules, secret redaction and events), as the person's own name (tenants.acting): the log
says which person did it. Acting for an agent (accepting a handoff offered to it, resolving
a review asked of it) binds the call to that agent for that one call, only where the team
allows it, and puts the person's name in the note. Each action that changed the room is
also written to the team's audit log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from mcp_gateway.dispatch import tool_run
from rooms import registry, store
from rooms.errors import DomainError
from tenants import acting, services
from tenants.capabilities import Caller
from tenants.models import Room, Team

TASK_STATUSES = ("pending", "in_progress", "blocked", "done")
VERDICTS = ("accept", "reject")
FIELD_MAX = 10_000


class ActionInputError(ValueError):
    """A form field the person must correct; the message says which and how."""


@dataclass(frozen=True, slots=True)
class Actor:
    """The person acting, and where."""

    caller: Caller  # the session's own caller (unbound)
    user: User | None
    team: Team
    room: Room

    @property
    def name(self) -> str:
        return acting.person_agent(self.caller, self.user)

    def call(self, tool: str, arguments: dict[str, Any], *, for_agent: str | None = None) -> Any:
        """One tool call as the person (or, with `for_agent`, on that agent's behalf)."""
        caller = (
            acting.acting_for(self.caller, self.team, for_agent)
            if for_agent is not None
            else acting.acting_as(self.caller, self.user)
        )
        # Every argument naming the actor is the bound name (a form cannot choose another).
        model = registry.tool_get(tool).input_model
        named = {
            model.model_fields[field].alias or field: caller.agent
            for field in registry.tool_get(tool).actors()
        }
        return store.run_sync(
            tool_run, caller, tool, {**arguments, **named, "roomId": self.room.room_id}
        )


def _text(form: dict[str, str], name: str, *, required: bool = True, most: int = FIELD_MAX) -> str:
    value = form.get(name, "").strip()
    if required and not value:
        raise ActionInputError(f"{name.replace('_', ' ').capitalize()} is required.")
    if len(value) > most:
        raise ActionInputError(f"{name.capitalize()} is {len(value)} characters; at most {most}.")
    return value


def _choice(form: dict[str, str], name: str, choices: tuple[str, ...]) -> str:
    value = form.get(name, "")
    if value not in choices:
        raise ActionInputError(f"{name.capitalize()} must be one of: {', '.join(choices)}.")
    return value


def _task(actor: Actor, task_id: str) -> dict[str, Any]:
    task: dict[str, Any] = actor.call("get_task", {"taskId": task_id})
    return task


def message_send(actor: Actor, form: dict[str, str]) -> str:
    to = _text(form, "to", most=300)
    args: dict[str, Any] = {"to": to, "body": _text(form, "body")}
    subject = _text(form, "subject", required=False, most=200)
    if subject:
        args["subject"] = subject
    if form.get("ack_required"):
        args["ackRequired"] = True
    sent = actor.call("send_message", args)
    if not sent.get("count"):
        return f"Message stored, but it reached nobody: {sent.get('warning', 'no recipient')}"
    return f"Message sent to {', '.join(sent.get('recipients') or [])}."


def broadcast_post(actor: Actor, form: dict[str, str]) -> str:
    actor.call("room_broadcast", {"text": _text(form, "text")})
    return "Broadcast posted to everyone in the room."


def task_add(actor: Actor, form: dict[str, str]) -> str:
    title = _text(form, "title", most=500)
    task = actor.call(
        "add_task", {"title": title, "description": _text(form, "description", required=False)}
    )
    owner = _text(form, "owner", required=False, most=128)
    if owner:
        actor.call("update_task", {"taskId": task["id"], "status": "pending", "owner": owner})
    priority = form.get("priority", "").strip()
    if priority:
        actor.call("set_task_priority", {"taskId": task["id"], "priority": _int(priority)})
    return f"Task “{title}” added" + (f" for {owner}." if owner else ".")


def _int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ActionInputError(f"Priority must be a whole number, not “{value[:40]}”.") from None
    if not 0 <= number <= 1_000_000:
        raise ActionInputError("Priority must be between 0 (first) and 1,000,000.")
    return number


def task_assign(actor: Actor, form: dict[str, str]) -> str:
    """Give the task to another agent. A task in progress under its owner is first handed
    back (pending, unowned, with a note naming the person), then given: the two events say
    so, and no agent's own takeover rule is relaxed."""
    task_id = _text(form, "task_id", most=128)
    owner = _text(form, "owner", required=False, most=128)
    task = _task(actor, task_id)
    current = task.get("owner")
    if (current or None) == (owner or None):
        return f"“{task['title']}” is already {'with ' + owner if owner else 'unowned'}."
    note = f"{actor.name} reassigned it from {current or 'nobody'} to {owner or 'nobody'}"
    status = task["status"]
    if status == "in_progress" and current:
        actor.call(
            "update_task", {"taskId": task_id, "status": "pending", "owner": "", "note": note}
        )
        note = ""
    arguments: dict[str, Any] = {"taskId": task_id, "status": status, "owner": owner}
    if note:
        arguments["note"] = note
    actor.call("update_task", arguments)
    return f"“{task['title']}” is now {'with ' + owner if owner else 'unowned'}."


def task_status(actor: Actor, form: dict[str, str]) -> str:
    """Unblock, block, reopen or close: the status, with the person's note."""
    task_id = _text(form, "task_id", most=128)
    status = _choice(form, "status", TASK_STATUSES)
    arguments: dict[str, Any] = {"taskId": task_id, "status": status}
    note = _text(form, "note", required=False)
    if note:
        arguments["note"] = note
    task = actor.call("update_task", arguments)
    return f"“{task['title']}” is {status.replace('_', ' ')}."


def task_priority(actor: Actor, form: dict[str, str]) -> str:
    task_id = _text(form, "task_id", most=128)
    task = actor.call(
        "set_task_priority", {"taskId": task_id, "priority": _int(_text(form, "priority"))}
    )
    return f"“{task['title']}” has priority {task.get('priority')}."


def task_note(actor: Actor, form: dict[str, str]) -> str:
    task_id = _text(form, "task_id", most=128)
    task = _task(actor, task_id)
    actor.call(
        "update_task", {"taskId": task_id, "status": task["status"], "note": _text(form, "note")}
    )
    return f"Note added to “{task['title']}”."


def task_verify(actor: Actor, form: dict[str, str]) -> str:
    """Accept or reject a submission (verify_task): the person is the verifier."""
    task_id = _text(form, "task_id", most=128)
    verdict = _choice(form, "verdict", VERDICTS)
    arguments: dict[str, Any] = {"taskId": task_id, "verdict": verdict}
    note = _text(form, "note", required=False)
    if note:
        arguments["note"] = note
    task = actor.call("verify_task", arguments)
    return f"Submission of “{task['title']}” {'accepted' if verdict == 'accept' else 'rejected'}."


def review_resolve(actor: Actor, form: dict[str, str]) -> str:
    """Approve or reject a review: as the person when it was asked of them, else on the
    reviewer's behalf (where the team allows it)."""
    review_id = _text(form, "review_id", most=128)
    verdict = _choice(form, "verdict", ("approve", "reject"))
    reviews = actor.call("list_reviews", {})
    review = next((r for r in reviews if r["id"] == review_id), None)
    if review is None:
        raise ActionInputError(f"No review {review_id} in this room.")
    note = _text(form, "note", required=False)
    arguments: dict[str, Any] = {"reviewId": review_id}
    # A submission (kind "submission", reviewer "*") is anyone's to judge but its submitter's.
    anyone = review.get("kind") == "submission"
    for_agent = None if anyone or review["reviewer"] == actor.name else review["reviewer"]
    if for_agent is not None:
        note = f"{verdict}d by {actor.name} on {for_agent}'s behalf" + (f": {note}" if note else "")
    if note:
        arguments["note"] = note
    actor.call(verdict, arguments, for_agent=for_agent)
    return f"Review {'approved' if verdict == 'approve' else 'rejected'}."


def handoff_accept(actor: Actor, form: dict[str, str]) -> str:
    """Accept a handoff on the receiving agent's behalf (where the team allows it)."""
    handoff_id = _text(form, "handoff_id", most=128)
    to = _text(form, "to", most=128)
    note = f"accepted by {actor.name} on {to}'s behalf"
    extra = _text(form, "note", required=False)
    handoff = actor.call(
        "accept_handoff",
        {"handoffId": handoff_id, "note": f"{note}: {extra}" if extra else note},
        for_agent=to,
    )
    return f"Handoff accepted for {handoff['to']}: the task is theirs now."


def change_request_answer(actor: Actor, form: dict[str, str]) -> str:
    """Answer a change request: the entry gets the answer (a new version, so its requester
    and consumers are told through context_updated), by the person."""
    entry_id = _text(form, "entry_id", most=128)
    answer = _choice(form, "answer", ("accepted", "declined", "done"))
    # (Its history, not read_context: a person answering is not one of the entry's readers.)
    entry = actor.call("get_context_history", {"id": entry_id})["current"]
    if entry.get("type") != "change_request":
        raise ActionInputError("Only a change request can be answered.")
    payload = {
        **entry["payload"],
        "status": answer,
        "response": _text(form, "response", required=False),
        "answered_by": actor.name,
    }
    actor.call("update_context", {"id": entry_id, "payload": payload})
    return f"Change request {answer}."


ACTIONS: dict[str, Callable[[Actor, dict[str, str]], str]] = {
    "message": message_send,
    "broadcast": broadcast_post,
    "task-add": task_add,
    "task-assign": task_assign,
    "task-status": task_status,
    "task-priority": task_priority,
    "task-note": task_note,
    "task-verify": task_verify,
    "review": review_resolve,
    "handoff-accept": handoff_accept,
    "change-request": change_request_answer,
}


def room_act(actor: Actor, action: str, form: dict[str, str]) -> str:
    """Run `action`; returns what to tell the person. Raises ActionInputError or
    DomainError (each with a message to show); the audit row is written only on success."""
    run = ACTIONS.get(action)
    if run is None:
        raise ActionInputError(f"Unknown action {action[:40]!r}.")
    said = run(actor, form)
    services.audit_record(
        team=actor.team,
        actor=actor.caller.actor,
        action=f"room.{action}",
        object_type="room",
        object_id=actor.room.room_id,
        detail={
            "as": actor.name,
            **{
                k: form[k][:128]
                for k in ("task_id", "review_id", "handoff_id", "entry_id", "to")
                if form.get(k)
            },
        },
    )
    return said


__all__ = ["ACTIONS", "ActionInputError", "Actor", "DomainError", "room_act"]
