"""The protocol's error vocabulary: every failure an agent can correct is one of these.

Messages are written for the model that reads them: what was wrong and what to do next.
Each error also carries the HTTP status a REST door answers it with (`status`, with
`body()` and `headers()`), so every door maps it the same way: MCP turns it into a tool
error, the REST doors into that status. Nothing here handles a request.
"""

from __future__ import annotations

import json
from typing import Any


class DomainError(Exception):
    """Base of every error a caller can act on. `extra` is structured detail for REST."""

    status: int = 400
    code: str = "invalid"

    def __init_subclass__(
        cls, *, code: str | None = None, status: int | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
        if status is not None:
            cls.status = status

    def __init__(self, message: str, *, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        """What an HTTP door answers (with `status` and `headers()`)."""
        return {"message": self.message, "code": self.code, "extra": self.extra}

    def headers(self) -> dict[str, str]:
        return {}


class RoomError(DomainError): ...


class ToolArgumentsError(RoomError, code="invalid_arguments"): ...


class UnknownToolError(RoomError, code="unknown_tool", status=404): ...


class ToolProfileUnknownError(RoomError, code="unknown_profile"):
    """`?tools=` names no profile (rooms.profiles)."""


class ToolNotInProfileError(RoomError, code="tool_not_in_profile", status=404):
    """A tool of the registry that the connection's profile leaves out: `extra` names the
    profiles that have it."""


class TaskNotFoundError(RoomError, code="task_not_found", status=404): ...


class ContextNotFoundError(RoomError, code="context_not_found", status=404): ...


class EventNotFoundError(RoomError, code="event_not_found", status=404): ...


class ContextVersionConflictError(RoomError, code="version_conflict", status=409): ...


class TaskVersionConflictError(RoomError, code="version_conflict", status=409):
    """expectedVersion is not the task's version: someone changed it since it was read."""


class TaskClaimError(RoomError, code="claim_refused", status=409):
    """A claim, release or takeover the task's state does not allow (another agent owns it,
    it is done, its dependencies are not done). `extra` names the owner and the status."""


class IdempotencyKeyReusedError(RoomError, code="idempotency_key_reused", status=409):
    """An idempotencyKey already used in this room for a different call."""


class ReviewNotFoundError(RoomError, code="review_not_found", status=404): ...


class ReviewRefusedError(RoomError, code="review_refused", status=409):
    """A resolution by someone who is not the reviewer, or of a review resolved already."""


class LeaseNotFoundError(RoomError, code="lease_not_found", status=404): ...


class LeaseRefusedError(RoomError, code="lease_refused", status=409):
    """A lease renewed or released by another agent than its holder."""


LEASE_NOT_FOUND = "No live lease {ref} in this room: it expired, was released, or never was. {hint}"
LEASE_HINT_CLOSEST = "Live leases: {closest}. lease_list shows them all."
LEASE_HINT_EMPTY = "The room has no live lease: take one with lease_claim."
LEASE_NOT_HOLDER = (
    'Lease "{lease_id}" on {path} is held by "{holder}", not "{agent}": only its holder '
    "may {verb} it."
)
LEASE_REFUSED_HINT = (
    "{path} is held by {holders}. Ask them (send_message), claim it again after {until}, or "
    "pick other work (get_unblocked_tasks)."
)
LEASE_UNKNOWN_TASK = 'Unknown taskId "{task_id}" for the lease. {hint}'
TASK_PATHS_LEASED = (
    'Task "{task_id}" was not claimed: {conflicts}. Claim it without those paths, wait for '
    "the leases to end, or agree with their holders."
)
TASK_PATH_CONFLICT = '{wanted} overlaps {path}, leased by "{holder}" ({mode}, until {until})'


class AgentNotFoundError(RoomError, code="agent_not_found", status=404):
    """A message to an agentId the room has never seen (a typo, most likely)."""


class MessageNotFoundError(RoomError, code="message_not_found", status=404): ...


class MessageRefusedError(RoomError, code="message_refused", status=409):
    """An ack by someone the message was not for, or of a message that expired."""


class MessageNotYoursError(RoomError, code="message_not_yours", status=403):
    """A guest naming another agent's messages (rooms.selectors.messages.message_guard)."""


MESSAGE_UNKNOWN_AGENT = (
    "No agent {agent} in this room: nobody by that name has heartbeated or read here. {hint}"
)
MESSAGE_AGENT_CLOSEST = (
    'Closest: {closest}. Send to "*" for everyone, or "tag:<tag>" / "file:<glob>" to reach '
    "agents by what they do."
)
MESSAGE_AGENT_NOBODY = (
    "Nobody has joined the room yet; agents appear once they heartbeat or read events."
)
MESSAGE_SELECTOR_EMPTY = 'A "{kind}:" selector needs a value after the colon (1-64 characters).'
MESSAGE_NOBODY = "Nobody matched {to!r}: the message is kept, but no one will receive it ({why})."
MESSAGE_NOBODY_WHY = {
    "all": "no other agent is in the room's presence yet",
    "agent": "",
    "file": "no other agent holds a live lease overlapping that path",
    "tag": "no agent's heartbeat carried that tag",
}
MESSAGE_NOT_FOUND = "No message {message_id} in this room (or it is too old to be kept). {hint}"
MESSAGE_HINT_CLOSEST = "Closest: {closest}. inbox with unreadOnly: false lists the kept ones."
MESSAGE_HINT_NONE = "inbox with unreadOnly: false lists the kept ones."
MESSAGE_GUEST_READ = (
    "An invite reads only its own agent's messages, and \"{agent}\" is not this invite's "
    "agent (an invite bound to no agent reads none). Ask the room's team for an invite "
    "bound to your agent name."
)
MESSAGE_NOT_RECIPIENT = (
    'Message "{message_id}" was not sent to "{agent}", so only its recipients may ack it '
    "({recipients})."
)
MESSAGE_EXPIRED = (
    'Message "{message_id}" expired unacked at {at}; ask "{sender}" again if it still matters.'
)
INBOX_NEVER = (
    'No messages for "{agent}": none was ever delivered to you in this room. In the room: '
    '{agents}. Messages reach you when sent to you, to "*", to a tag of your heartbeat or '
    "to a file you lease."
)
INBOX_ALL_READ = (
    'No unread messages for "{agent}": {ever} delivered here, {read} of them read; the last '
    "arrived at {last}. unreadOnly: false shows them again."
)


class PlanExistsError(RoomError, code="plan_exists", status=409):
    """create_room_from_template on a room that has tasks: a plan is never overwritten."""


PLAN_EXISTS = (
    "Room {room_id!r} already has a plan ({count} tasks); create_room_from_template never "
    "overwrites or mixes into a plan. Leave roomId out for a new room, or add the tasks "
    "you want with add_task."
)


class QuotaExceededError(DomainError, code="quota_exceeded", status=429):
    """A per-tenant bound of the shared store (a quota) is reached."""

    def __init__(self, *, what: str, quota: str, used: int, limit: int, how: str) -> None:
        super().__init__(
            QUOTA_EXCEEDED.format(what=what, used=used, limit=limit, how=how),
            extra={"quota": quota, "used": used, "limit": limit},
        )


class StoreUnavailableError(DomainError, code="store_unavailable", status=503):
    def headers(self) -> dict[str, str]:
        return {"Retry-After": "2"}


class RoomAccessError(DomainError, code="room_not_found", status=404):
    """The caller may not touch this room. One text whether it exists or not
    (docs/protocol.md "Tenancy and access")."""


class ReadOnlyCallerError(DomainError, code="read_only", status=403): ...


class CredentialLostError(DomainError, code="credential_revoked", status=401):
    """The credential a long call or stream began with was revoked, expired or removed."""


# The one answer to "you may not touch this room", whatever the reason: another team's
# room, an unknown id (when rooms are not claimed on first touch), a malformed id, a room
# outside an invite's scope, a room id that cannot be created. The same text, code and
# status at every door (docs/protocol.md "Tenancy and access").
ROOM_ACCESS_DENIED = (
    "Room not found or access denied. Check the roomId (2-64 characters of a-z, 0-9, '_' "
    "and '-'); a room belongs to one team, and an invite reaches only its own room. "
    "The server's instructions name the rooms you can reach."
)
ROOM_ID_INVALID = (
    'Invalid arguments: roomId "{room_id}" is not a room id: 2-64 characters of a-z, 0-9, '
    "'_' and '-', starting with a letter or digit, with no '__'."
)
QUOTA_EXCEEDED = "Quota reached: {what} ({used} of {limit}). {how}"
STORE_UNAVAILABLE = (
    "The room store (Redis) is not answering, so this call could not run (or its answer "
    "was lost). Retry in a few seconds; reads are safe to retry."
)
DATABASE_UNAVAILABLE = (
    "The account database is not answering, so this call could not run. Retry in a few seconds."
)
CREDENTIAL_LOST = (
    "The credential this call began with was revoked, expired or removed while it waited. "
    "Ask the team for a live key or invite."
)

# --- Messages (templates the tests assert on) ------------------------------------------
TASK_NOT_FOUND = 'Unknown taskId "{task_id}". {hint}'
TASK_HINT_CLOSEST = "Closest existing tasks: {closest}. Call read_plan to see every task."
TASK_HINT_EMPTY = "This room has no tasks yet: add one with add_task, or check the roomId."
TASK_HINT_NONE_CLOSE = "No task id of this room looks like it: call read_plan to see every task."
CONTEXT_NOT_FOUND = 'Unknown context id "{entry_id}". {hint}'
CONTEXT_HINT_CLOSEST = "Closest existing entries: {closest}. Call list_context to see them all."
CONTEXT_HINT_EMPTY = "This room has no context entries yet; write one with write_context."
CONTEXT_HINT_NONE_CLOSE = (
    "No context id of this room looks like it: call list_context to see every entry."
)
EVENT_NOT_FOUND = 'Unknown event id "{event_id}". {hint}'
EVENT_HINT_CLOSEST = (
    "Event ids are stream ids like 1732871234567-0; the nearest events are: {closest}. "
    "Call read_events to list them."
)
EVENT_HINT_EMPTY = "This room's event log is empty."
CONTEXT_VERSION_CONFLICT = (
    'Context entry "{entry_id}" is at version {current}, not {expected}: someone updated it '
    "first. Read its current version, merge your change into its payload, and retry with "
    'expectedVersion "{current}".'
)
TASK_VERSION_CONFLICT = (
    'Task "{task_id}" is at version {current} (status {status}, owner {owner}), not '
    "{expected}: it changed since you read it. Read it again (read_plan), decide, and retry with "
    "expectedVersion {current}."
)
TASK_OWNED = (
    'Task "{task_id}" is {status} and owned by "{owner}" (version {version}): it is not '
    "yours to claim. Pick another with get_unblocked_tasks, or ask {owner} to release it "
    "(release_task)."
)
TASK_TAKEOVER = (
    'Task "{task_id}" is in progress under "{owner}"; update_task will not give it to '
    '"{new_owner}". Claim open tasks with claim_task. To hand it over, {owner} calls '
    'update_task with agentId "{owner}", or releases it with release_task.'
)
TASK_DONE_NO_CLAIM = (
    'Task "{task_id}" is done (owner {owner}): there is nothing to claim. Call '
    "get_unblocked_tasks for open work, or update_task with status pending to reopen it."
)
TASK_DONE_NO_RELEASE = (
    'Task "{task_id}" is done: there is no claim to release. To reopen it, call update_task '
    "with status pending."
)
TASK_DEPENDENCIES_UNMET = (
    'Task "{task_id}" depends on tasks that are not done: {unmet}. Claim it once they are, '
    "or call get_unblocked_tasks for tasks you can start now."
)
TASK_NOT_YOURS = (
    'Task "{task_id}" is owned by {owner}, not "{agent_id}": only its owner releases it.'
)
IDEMPOTENCY_KEY_REUSED = (
    'idempotencyKey "{key}" was used in this room within the last {hours} h for a different '
    "call ({tool} with other arguments), so this call was not run. A retry must repeat the "
    "same call exactly; a new call needs a new key."
)
IDEMPOTENCY_KEY_OUTDATED = (
    'idempotencyKey "{key}" was used in this room within the last {hours} h for this call '
    "({tool}), before the server was upgraded: the call was done then and is not run again, "
    "but its first answer is kept in a form this version cannot replay. Read the room for "
    "its result; a new call needs a new key."
)
DEPENDENCY_UNKNOWN = 'dependsOn "{depends_on}" is not a task of this room. {hint}'
DEPENDENCY_SELF = 'Task "{task_id}" cannot depend on itself.'
DEPENDENCY_CYCLE = (
    'Task "{task_id}" cannot depend on "{depends_on}": that would close the cycle {cycle}. '
    "Remove a dependency along it first, or split the work differently."
)
DEPENDENCY_FULL = 'Task "{task_id}" already has {most} dependencies, the most a task may have.'
REVIEW_NOT_FOUND = 'Unknown reviewId "{review_id}". {hint}'
REVIEW_HINT_CLOSEST = "Reviews of this room: {closest}. Call list_reviews to see them all."
REVIEW_HINT_EMPTY = "This room has no reviews yet: ask for one with request_review."
REVIEW_HINT_NONE_CLOSE = "No review id of this room looks like it: call list_reviews to see them."
REVIEW_NOT_REVIEWER = (
    'Review "{review_id}" asks "{reviewer}" to review it, not "{agent_id}": only the named '
    "reviewer approves or rejects it."
)
REVIEW_RESOLVED = (
    'Review "{review_id}" was {status} by "{by}" at {at}: a review is resolved once. Ask for '
    "a new review if the work changed."
)
REVIEW_OWN_SUBMISSION = (
    'Task "{task_id}" was submitted by "{agent_id}": the submitter cannot verify its own '
    "work. Another agent (or a person) verifies it with verify_task."
)
TASK_NOT_SUBMITTED = (
    'Task "{task_id}" has no submission awaiting verification (status {status}{state}). Its '
    "owner submits evidence with submit_task first."
)
TASK_SUBMIT_NOT_OWNER = (
    'Task "{task_id}" is owned by {owner}, not "{agent_id}": only its owner submits it. '
    "Claim it with claim_task first."
)
TASK_SUBMIT_DONE = 'Task "{task_id}" is done already: there is nothing to submit.'
TASK_SUBMIT_PENDING = (
    'Task "{task_id}" awaits verification of its submission (review "{review_id}", by '
    "{by} at {at}). Wait for verify_task, or ask another agent to verify it."
)
TASK_EVIDENCE_REQUIRED = (
    'Task "{task_id}" cannot be marked done directly: this room requires evidence. Its owner '
    "calls submit_task with evidence (tests, diffs, links, logs, notes), then another agent "
    "calls verify_task with verdict accept, which marks it done."
)
ROOM_MODE_EMPTY = (
    "Nothing to set: give evidenceRequired, turns, moderator, turnOrder, secrets, autoLeases "
    "or editRefusals."
)
HANDOFF_NOT_OWNER = (
    'Task "{task_id}" is owned by {owner}, not "{agent}": only its owner hands it off.'
)
HANDOFF_TASK_DONE = 'Task "{task_id}" is done: there is nothing to hand off.'
HANDOFF_PENDING = (
    'Task "{task_id}" is offered to "{to}" already (handoff "{handoff_id}"): wait for their '
    "answer. One offer at a time."
)
HANDOFF_SELF = 'A handoff goes to another agent: "{agent}" owns the task already.'
HANDOFF_UNKNOWN_CONTEXT = 'contextIds: "{entry_id}" is not a context entry of this room. {hint}'
HANDOFF_NOT_FOUND = 'Unknown handoffId "{handoff_id}". {hint}'
HANDOFF_HINT = "Handoffs offered to you are in get_my_summary (pendingHandoffs)."
HANDOFF_NOT_RECEIVER = (
    'Handoff "{handoff_id}" is offered to "{to}", not "{agent}": only its receiver answers it.'
)
HANDOFF_RESOLVED = (
    'Handoff "{handoff_id}" was {status} by "{by}" at {at}: a handoff is answered once. A '
    "declined handoff is final; the owner offers a new one."
)
HANDOFF_VOID = (
    'Handoff "{handoff_id}" no longer holds: task "{task_id}" {why} since it was offered. '
    "Nothing changed; ask the current owner."
)


ROOM_NOT_WRITABLE = (
    'Room "{room_id}" is {status}: it answers reads, and refuses writes until it is active '
    "again (someone who may manage rooms resumes it, on its dashboard page)."
)
ROOM_ARCHIVED = (
    'Room "{room_id}" is archived: its whole state is kept in the database, reads answer '
    "from the archive, and writes are refused until someone who may manage rooms restores "
    "it: the Restore button on its dashboard page, POST /api/rooms/{room_id}/restore, or "
    "`manage.py room_restore {room_id}`."
)
ROOM_ARCHIVING = (
    'Room "{room_id}" is being archived at this moment; nothing was written. Once it is '
    "archived, restore it (its dashboard page) and write again."
)
ROOM_GONE = (
    'Room "{room_id}" was archived or deleted while this write was on its way; nothing was '
    "written. Call again: an archived room says how to restore it."
)
ROOM_LOADING = (
    'Room "{room_id}" is being loaded from its archive and is not ready yet; retry in a '
    "few seconds."
)
ROOM_DOCUMENT_INVALID = (
    "This room document cannot be imported: {why}. Nothing was created; import a document "
    "exactly as GET /api/rooms/<roomId>/export gave it."
)
ROOM_ARCHIVED_STATUS = (
    'Room "{room_id}" is archived; only status "active" (a restore) or "archived" apply to '
    'it. Restore it first, then set "{status}".'
)


class RoomClosedError(RoomError, code="room_not_active", status=409):
    """A write to a paused, completed, archived (or being archived) room."""


TURN_SEQUENTIAL = (
    'It is "{holder}"\'s turn: this room posts in turn ({order}). Nothing was posted; post '
    "after {holder} has (wait_for_events tells you), or ask someone who may manage rooms to "
    'set turns to "open".'
)
TURN_OUTSIDE = (
    "You are not in this room's turn order ({order}), so you cannot post now; nothing was "
    "posted. {how}"
)
TURN_MODERATOR = (
    'This room is moderated by "{moderator}": you post once the moderator gives you the turn '
    '(by addressing a message to you). Nothing was posted; the turn is with "{holder}".'
)


class TurnRefusedError(RoomError, code="not_your_turn", status=409):
    """A post out of turn (rooms.turns)."""

    @classmethod
    def of(cls, rule: str, holder: str, detail: str) -> TurnRefusedError:
        if rule == "moderator":
            return cls(
                TURN_MODERATOR.format(moderator=detail, holder=holder),
                extra={"turns": "moderator", "turn": holder, "moderator": detail},
            )
        order = json.loads(detail) if detail.startswith("[") else []
        shown = " → ".join(order) or "nobody is present"
        if rule in ("sequential-absent", "sequential-unlisted"):
            how = (
                "Heartbeat to join it: the order is the agents present, by name."
                if rule == "sequential-absent"
                else "Ask someone who may manage rooms to add you to turnOrder (set_room_mode)."
            )
            return cls(
                TURN_OUTSIDE.format(order=shown, how=how),
                extra={"turns": "sequential", "turn": holder, "turnOrder": order},
            )
        return cls(
            TURN_SEQUENTIAL.format(holder=holder, order=shown),
            extra={"turns": "sequential", "turn": holder, "turnOrder": order},
        )


SECRET_REFUSED = (
    "Refused: this room keeps no secrets ({summary}). Nothing was written; write it again "
    "without them, and share secrets through your secret store."
)
SECRET_TOO_LONG = (
    "{summary}, and with the markers in their place the text no longer fits its field. "
    "Nothing was written; write it again without the secrets."
)


class SecretRefusedError(RoomError, code="secret_refused", status=422): ...


ROOM_ID_NEAR = (
    'There is no room "{room_id}" in your team, but there is "{near}". Nothing was written '
    'and no room was created. If you meant "{near}", call again with that roomId; to '
    'create "{room_id}", call again with it within {minutes} minutes.'
)


class RoomIdNearError(RoomError, code="room_id_near", status=409):
    """A first touch of a new room id that looks like one of the team's rooms (a typo)."""


class HandoffNotFoundError(RoomError, code="handoff_not_found", status=404): ...


class HandoffRefusedError(RoomError, code="handoff_refused", status=409):
    """An answer by someone else than the receiver, a second answer, or to a void offer."""


CONTEXT_NO_PRIOR = (
    'No prior versions to diff against: context entry "{entry_id}" has one version '
    "({version}). Publishing it again (write_context with supersedes) makes the next one."
)
REVIEW_SELF = (
    'reviewer "{reviewer}" is the requester: a review asks someone else. Name another agent '
    "(one who is here) or a person."
)
CONTEXT_VERSION_UNKNOWN = (
    'againstVersion "{version}" is not a kept version of context entry "{entry_id}" (kept: '
    "{kept}). Call get_context_history to see them."
)
LEASE_TOO_SHORT = (
    "leaseSeconds must be at least {least} (and at most 86400): a shorter lease would lapse "
    "between two heartbeats."
)
CONTEXT_PAYLOAD_INVALID = "Invalid {type} payload: {problems}."
CONTEXT_SUPERSEDES_TYPE = (
    'supersedes: entry "{entry_id}" is a {stored}, not a {type}: an entry keeps its type. '
    "Leave supersedes out to publish a new {type}, or give the id of one."
)
EVENT_TYPE_RESERVED = (
    'Event type "{type}" is written by the server itself and cannot be posted: use another '
    "type (reserved: {reserved})."
)
SINCE_INVALID = (
    'since "{since}" is neither an ISO-8601 time (2026-01-31T12:00:00Z) nor an event id '
    "(1732871234567-0)."
)
