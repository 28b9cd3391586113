"""What a person can do in a room from the dashboard, each action the agents' own tools.

Every action goes through `tool_run` like an agent's call (the same checks, budgets, turn
rules, secret redaction and events), as the person's own name (tenants.acting): the log
says which person did it. Acting for an agent (accepting a handoff offered to it, resolving
a review asked of it) binds the call to that agent for that one call, only where the team
allows it, and puts the person's name in the note; whom it was for comes from the room,
never from the form. Every field is checked before the first call, writes that follow a
read carry the version read (a change made meanwhile is refused, not undone), and each
action that changed the room is written to the team's audit log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from calls.runner import tool_run
from rooms import registry
from rooms.errors import ToolArgumentsError
from rooms.selectors import handoffs as handoffs_selectors
from rooms.store import engine as engine_store
from tenants import access, acting, services
from tenants.capabilities import Caller
from tenants.models import Room, Team

TASK_STATUSES = ("pending", "in_progress", "blocked", "done")
TEXT_MOST = 10_000
NAME_MOST = 128

UNKNOWN_ACTION = "Unknown action {action!r}: the room page's buttons name the actions there are."
REQUIRED = "{field} is required."
TOO_LONG = "{field} is {length} characters; at most {most}."
NOT_ONE_OF = "{field} must be one of: {choices}."
PRIORITY_NOT_NUMBER = "Priority must be a whole number from 0 (first) to 1,000,000, not “{value}”."
NO_HANDOFF = "No handoff {handoff_id} waits in this room: it was answered, or never offered."
NO_REVIEW = "No review {review_id} in this room: list_reviews shows them."
NOT_A_CHANGE_REQUEST = "Only a change request can be answered; this entry is a {type}."


@dataclass(frozen=True, slots=True)
class Actor:
    """The person acting, and where."""

    caller: Caller  # the session's own caller
    user: User | None
    team: Team
    room: Room

    @property
    def name(self) -> str:
        """The name the person's writes carry (tenants.acting.person_agent)."""
        return acting.person_agent(self.caller, self.user)

    def call(self, tool: str, arguments: dict[str, Any], *, for_agent: str | None = None) -> Any:
        """One tool call as the person (or, with `for_agent`, on that agent's behalf). Every
        argument naming the actor is the bound name: a form cannot choose another."""
        caller = (
            acting.acting_for(self.caller, self.team, for_agent)
            if for_agent is not None
            else acting.acting_as(self.caller, self.user)
        )
        row = registry.tool_get(tool)
        named = {
            row.input_model.model_fields[field].alias or field: caller.agent
            for field in row.actors()
        }
        return engine_store.run_sync(
            tool_run, caller, row, {**arguments, **named, "roomId": self.room.room_id}
        )

    def handoffs(self) -> list[Any]:
        ref = engine_store.run_sync(access.room_access, self.caller, self.room.room_id, write=False)
        return list(engine_store.run_sync(handoffs_selectors.handoffs_all, ref))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to tell the person, and the agent acted for (for the audit row), if any."""

    said: str
    for_agent: str | None = None


def _text(form: dict[str, str], name: str, *, required: bool = True, most: int = TEXT_MOST) -> str:
    value = form.get(name, "").strip()
    label = name.replace("_", " ").capitalize()
    if required and not value:
        raise ToolArgumentsError(REQUIRED.format(field=label))
    if len(value) > most:
        raise ToolArgumentsError(TOO_LONG.format(field=label, length=len(value), most=most))
    return value


def _choice(form: dict[str, str], name: str, choices: tuple[str, ...]) -> str:
    value = form.get(name, "")
    if value not in choices:
        raise ToolArgumentsError(
            NOT_ONE_OF.format(field=name.capitalize(), choices=", ".join(choices))
        )
    return value


def _priority(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= 1_000_000:
        raise ToolArgumentsError(PRIORITY_NOT_NUMBER.format(value=value[:40]))
    return number


def _noted(arguments: dict[str, Any], note: str) -> dict[str, Any]:
    return {**arguments, "note": note} if note else arguments


def person_message(actor: Actor, form: dict[str, str]) -> Outcome:
    """A message to an agent or a selector (send_message), its delivery then visible."""
    args: dict[str, Any] = {"to": _text(form, "to", most=300), "body": _text(form, "body")}
    subject = _text(form, "subject", required=False, most=200)
    if subject:
        args["subject"] = subject
    if form.get("ack_required"):
        args["ackRequired"] = True
    sent = actor.call("send_message", args)
    redacted = " (a secret in it was replaced by a marker)" if sent.get("redacted") else ""
    if not sent.get("count"):
        return Outcome(f"Message stored, but it reached nobody: {sent.get('warning', '')}")
    return Outcome(f"Message sent to {', '.join(sent.get('recipients') or [])}{redacted}.")


def person_broadcast(actor: Actor, form: dict[str, str]) -> Outcome:
    """A broadcast to everyone in the room (room_broadcast)."""
    actor.call("room_broadcast", {"text": _text(form, "text")})
    return Outcome("Broadcast posted to everyone in the room.")


def person_task_add(actor: Actor, form: dict[str, str]) -> Outcome:
    """A new task (add_task), given to an owner when one is named."""
    title = _text(form, "title", most=500)
    description = _text(form, "description", required=False)
    owner = _text(form, "owner", required=False, most=NAME_MOST)
    raw_priority = form.get("priority", "").strip()
    args: dict[str, Any] = {"title": title, "description": description}
    if raw_priority:
        args["priority"] = _priority(raw_priority)
    task = actor.call("add_task", args)
    if owner:
        actor.call(
            "update_task",
            {
                "taskId": task["id"],
                "status": "pending",
                "owner": owner,
                "expectedVersion": task["version"],
            },
        )
    return Outcome(f"Task “{title}” added" + (f" for {owner}." if owner else "."))


def person_task_assign(actor: Actor, form: dict[str, str]) -> Outcome:
    """Give the task to another agent, or to nobody. A task in progress under its owner is
    first handed back (pending, unowned, with a note naming the person), then given: the
    two events say so, and no agent's own takeover rule is relaxed. A task with nobody is
    pending: work in progress always has an owner."""
    task_id = _text(form, "task_id", most=NAME_MOST)
    owner = _text(form, "owner", required=False, most=NAME_MOST)
    task = actor.call("get_task", {"taskId": task_id})
    current = task.get("owner")
    if (current or None) == (owner or None):
        return Outcome(f"“{task['title']}” is already {'with ' + owner if owner else 'unowned'}.")
    note = f"{actor.name} reassigned it from {current or 'nobody'} to {owner or 'nobody'}"
    status, version = task["status"], task["version"]
    if status == "in_progress" and current:
        handed = actor.call(
            "update_task",
            {
                "taskId": task_id,
                "status": "pending",
                "owner": "",
                "note": note,
                "expectedVersion": version,
            },
        )
        if not owner:
            return Outcome(f"“{task['title']}” is now unowned (pending).")
        note, version = "", handed["version"]
    arguments = {
        "taskId": task_id,
        "status": status if owner else ("pending" if status == "in_progress" else status),
        "owner": owner,
        "expectedVersion": version,
    }
    actor.call("update_task", _noted(arguments, note))
    return Outcome(f"“{task['title']}” is now {'with ' + owner if owner else 'unowned'}.")


def person_task_status(actor: Actor, form: dict[str, str]) -> Outcome:
    """Unblock, block, reopen or close: the status, with the person's note."""
    task_id = _text(form, "task_id", most=NAME_MOST)
    status = _choice(form, "status", TASK_STATUSES)
    note = _text(form, "note", required=False)
    task = actor.call("update_task", _noted({"taskId": task_id, "status": status}, note))
    return Outcome(f"“{task['title']}” is {status.replace('_', ' ')}.")


def person_task_priority(actor: Actor, form: dict[str, str]) -> Outcome:
    """The task's priority (set_task_priority): lower goes first."""
    task_id = _text(form, "task_id", most=NAME_MOST)
    priority = _priority(_text(form, "priority"))
    task = actor.call("set_task_priority", {"taskId": task_id, "priority": priority})
    return Outcome(f"“{task['title']}” has priority {task.get('priority')}.")


def person_task_note(actor: Actor, form: dict[str, str]) -> Outcome:
    """A note on the task, its status unchanged (a change made meanwhile is refused)."""
    task_id = _text(form, "task_id", most=NAME_MOST)
    note = _text(form, "note")
    task = actor.call("get_task", {"taskId": task_id})
    actor.call(
        "update_task",
        {
            "taskId": task_id,
            "status": task["status"],
            "note": note,
            "expectedVersion": task["version"],
        },
    )
    return Outcome(f"Note added to “{task['title']}”.")


def person_task_verify(actor: Actor, form: dict[str, str]) -> Outcome:
    """Accept or reject a submission (verify_task): the person is the verifier."""
    task_id = _text(form, "task_id", most=NAME_MOST)
    verdict = _choice(form, "verdict", ("accept", "reject"))
    note = _text(form, "note", required=False)
    task = actor.call("verify_task", _noted({"taskId": task_id, "verdict": verdict}, note))
    judged = "accepted" if verdict == "accept" else "rejected"
    return Outcome(f"Submission of “{task['title']}” {judged}.")


def person_review(actor: Actor, form: dict[str, str]) -> Outcome:
    """Approve or reject a review: as the person when it was asked of them (or is a
    submission, anyone's to judge but its submitter's), else on the reviewer's behalf
    where the team allows it."""
    review_id = _text(form, "review_id", most=NAME_MOST)
    verdict = _choice(form, "verdict", ("approve", "reject"))
    note = _text(form, "note", required=False)
    review = next((r for r in actor.call("list_reviews", {}) if r["id"] == review_id), None)
    if review is None:
        raise ToolArgumentsError(NO_REVIEW.format(review_id=review_id))
    anyone = review.get("kind") == "submission"
    for_agent = None if anyone or review["reviewer"] == actor.name else review["reviewer"]
    if for_agent is not None:
        done = "approved" if verdict == "approve" else "rejected"
        note = f"{done} by {actor.name} on {for_agent}'s behalf" + (f": {note}" if note else "")
    actor.call(verdict, _noted({"reviewId": review_id}, note), for_agent=for_agent)
    return Outcome(
        f"Review {'approved' if verdict == 'approve' else 'rejected'}.", for_agent=for_agent
    )


def person_handoff_accept(actor: Actor, form: dict[str, str]) -> Outcome:
    """Accept a handoff: the person's own when offered to them, else on the receiving
    agent's behalf where the team allows it. Whom it is for is read from the room."""
    handoff_id = _text(form, "handoff_id", most=NAME_MOST)
    extra = _text(form, "note", required=False)
    offered = next(
        (h for h in actor.handoffs() if h["id"] == handoff_id and h["status"] == "offered"),
        None,
    )
    if offered is None:
        raise ToolArgumentsError(NO_HANDOFF.format(handoff_id=handoff_id))
    to = offered["to"]
    for_agent = None if to == actor.name else to
    note = f"accepted by {actor.name} on {to}'s behalf" if for_agent else ""
    note = f"{note}: {extra}" if note and extra else note or extra
    actor.call("accept_handoff", _noted({"handoffId": handoff_id}, note), for_agent=for_agent)
    return Outcome(f"Handoff accepted for {to}: the task is theirs now.", for_agent=for_agent)


def person_change_request_answer(actor: Actor, form: dict[str, str]) -> Outcome:
    """Answer a change request: the entry gets the answer (a new version, so its requester
    and consumers are told through context_updated), by the person. Read from its history,
    not read_context: a person answering is not one of the entry's readers."""
    entry_id = _text(form, "entry_id", most=NAME_MOST)
    answer = _choice(form, "answer", ("accepted", "declined", "done"))
    response = _text(form, "response", required=False)
    entry = actor.call("get_context_history", {"id": entry_id})["current"]
    if entry.get("type") != "change_request":
        raise ToolArgumentsError(NOT_A_CHANGE_REQUEST.format(type=entry.get("type")))
    payload = {**entry["payload"], "status": answer, "response": response}
    payload["answered_by"] = actor.name
    actor.call(
        "update_context",
        {"id": entry_id, "payload": payload, "expectedVersion": entry["version"]},
    )
    return Outcome(f"Change request {answer}.")


PERSON_ACTIONS: dict[str, Callable[[Actor, dict[str, str]], Outcome]] = {
    "message": person_message,
    "broadcast": person_broadcast,
    "task-add": person_task_add,
    "task-assign": person_task_assign,
    "task-status": person_task_status,
    "task-priority": person_task_priority,
    "task-note": person_task_note,
    "task-verify": person_task_verify,
    "review": person_review,
    "handoff-accept": person_handoff_accept,
    "change-request": person_change_request_answer,
}
AUDITED_FIELDS = ("task_id", "review_id", "handoff_id", "entry_id", "to")


def person_act(actor: Actor, action: str, form: dict[str, str]) -> str:
    """Run `action`; returns what to tell the person. Raises DomainError (its message says
    what to correct); the audit row is written only when the action went through."""
    run = PERSON_ACTIONS.get(action)
    if run is None:
        raise ToolArgumentsError(UNKNOWN_ACTION.format(action=action[:40]))
    outcome = run(actor, form)
    detail: dict[str, Any] = {"as": actor.name}
    if outcome.for_agent is not None:
        detail["for"] = outcome.for_agent
    detail.update({k: form[k][:NAME_MOST] for k in AUDITED_FIELDS if form.get(k)})
    services.audit_record(
        team=actor.team,
        actor=actor.caller.actor,
        action=f"room.{action}",
        object_type="room",
        object_id=actor.room.room_id,
        detail=detail,
    )
    return outcome.said
