"""What each tool returns, as typed dictionaries (docs/tools.md's shapes, roomd's field names).

They are plain dicts at run time, so results cost nothing to build and keep exactly the
shapes agents already parse; mypy checks every service against them, and the registry
publishes each tool's `outputSchema` from them (pydantic reads TypedDicts).
`typing_extensions.TypedDict` because pydantic needs it below Python 3.12.

One module on purpose: result shapes nest into one another across domains (a Task in a
Plan, a Handoff, a Summary), and docs/tools.md's field tables are generated from them.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict


class RoomRow(TypedDict):
    roomId: str
    name: str
    project: str  # "" for none
    status: str
    created_at: str | None
    last_active_at: str | None


class Note(TypedDict):
    by: str
    at: str
    text: str


class Task(TypedDict):
    id: str
    title: str
    description: str
    status: Literal["pending", "in_progress", "done", "blocked"]
    owner: str | None
    created_at: str
    updated_at: str
    depends_on: list[str]
    version: int  # +1 on every change of the task (expectedVersion compares against it)
    priority: NotRequired[int]
    note: NotRequired[str]
    notes: NotRequired[list[Note]]
    # A claim taken with leaseSeconds: it lapses at lease_expires_at unless renewed.
    lease_seconds: NotRequired[int]
    lease_expires_at: NotRequired[str]
    leases: NotRequired[list[Lease]]  # its live file leases (claim_task's paths)
    # get_my_tasks: the dependencies not done yet, with who works on them and what they lease
    blockedBy: NotRequired[list[BlockingTask]]
    warnings: NotRequired[list[str]]
    verification: NotRequired[Verification]  # submit_task / verify_task
    handoff: NotRequired[HandoffOffer]  # a handoff offered and not yet answered


class Evidence(TypedDict):
    kind: Literal["test", "diff", "link", "log", "note"]
    text: str
    ref: NotRequired[str | None]


class Verification(TypedDict):
    """The proof a task's owner submitted, and what a different agent made of it."""

    state: Literal["submitted", "verified", "rejected"]
    evidence: list[Evidence]
    submittedBy: str
    at: str
    reviewId: str  # the submission is this review (list_reviews, approve, reject)
    verifiedBy: NotRequired[str]
    verifiedAt: NotRequired[str]
    rejectedBy: NotRequired[str]
    rejectedAt: NotRequired[str]
    note: NotRequired[str]  # the reviewer's, on a rejection


class BlockingTask(TypedDict):
    taskId: str
    title: str
    status: str  # "missing" for a dependency that does not exist
    owner: str | None
    leases: list[Lease]


class Plan(TypedDict):
    project: str
    created_at: str
    updated_at: str
    tasks: list[Task]


class ContextReader(TypedDict):
    agentId: str
    version: str  # the version it last read
    at: str


class ContextEntry(TypedDict):
    id: str
    type: str
    author: str
    timestamp: str
    summary: str
    consuming_agents: list[str]
    payload: Any
    version: str
    changes: NotRequired[list[str]]
    # read_context: who read which version (oldest read first), and who read an older one
    readBy: NotRequired[list[ContextReader]]
    behind: NotRequired[list[str]]
    # update_context: the agents that had read an older version, each sent context_stale
    toldStale: NotRequired[list[str]]
    # list_context(includeInherited): an earlier room's of the project (rooms.memory)
    inherited: NotRequired[InheritedFrom]


class InheritedFrom(TypedDict):
    roomId: str
    project: str


class InheritedSummary(TypedDict):
    """What the room inherited from its project's earlier rooms (get_my_summary)."""

    project: str | None
    count: int
    rooms: list[str]
    how: str


# The wire field is "from", a Python keyword: hence TypedDict's functional form.
Event = TypedDict(
    "Event",
    {
        "id": str,
        "type": str,
        "from": str,
        "to": str,
        "payload": Any,
        "timestamp": str,
        "reply_to_id": NotRequired[str],
        # A message's event: exactly whom it was delivered to (the `to` is its selector).
        "recipients": NotRequired[list[str]],
    },
)


class Unread(TypedDict):
    events: list[Event]
    cursor: str
    count: int
    message: NotRequired[str]


class Waited(TypedDict):
    events: list[Event]
    cursor: str
    count: int
    timedOut: bool
    timeoutMs: int  # the wait applied: the one asked for, at most the door's most (rooms.refs)
    capped: bool  # the one asked for was longer than that


class EventMarked(TypedDict):
    eventId: str
    agentId: str
    ok: bool


class ReadReceipt(TypedDict):
    agentId: str
    readAt: str


class EventReads(TypedDict):
    eventId: str
    readBy: list[str]
    reads: list[ReadReceipt]


PresenceState = Literal["working", "idle", "gone"]


class AgentPresence(TypedDict):
    agentId: str
    status: Literal["online", "offline"]
    lastSeen: str  # its last act: any call naming it, a heartbeat
    # working: acted within PRESENCE_WORKING_SECONDS; idle: since then (or its session
    # ended) up to PRESENCE_IDLE_SECONDS; gone: past that.
    state: PresenceState


class Heartbeat(TypedDict):
    agentId: str
    # The HEARTBEAT_PRESENCE_MAX (100) agents seen most recently; get_presence lists all.
    presence: list[AgentPresence]
    # How many agents the room remembers (the answer above may show fewer).
    presenceTotal: int


class Left(TypedDict):
    left: bool  # false: the agent was not in the room's presence
    agentId: str
    agents: list[AgentPresence]  # who is still here (the most recently seen first 100)


class RoomInfo(TypedDict):
    roomId: str
    ownerTeamId: str
    createdAt: str
    memberCount: int
    taskCount: int
    contextCount: int
    eventCount: int


class TaskCounts(TypedDict):
    total: int
    done: int
    pending: int
    inProgress: int
    blocked: int
    completionRate: float  # done / total (0 for an empty plan)


class AgentCounts(TypedDict):
    total: int
    online: int


class EventCounts(TypedDict):
    total: int  # in the retained log
    lastDays: int  # the window asked for, in days (roomd's field: `days`, echoed)
    perDay: float  # events a day over the window, on average (roomd's field)
    inWindow: int  # events in the window (ours)
    byDate: dict[str, int]  # "YYYY-MM-DD" -> events of that day, each day of the window (ours)


class RoomAnalytics(TypedDict):
    roomId: str
    ownerTeamId: str
    createdAt: str
    tasks: TaskCounts
    agents: AgentCounts
    contextCount: int
    events: EventCounts


class TaskDeletedResult(TypedDict):
    deleted: bool
    taskId: str
    warnings: NotRequired[list[str]]  # tasks that depended on it, now with an unmet dependency


class ContextDeleted(TypedDict):
    deleted: bool
    id: str


class EventDeleted(TypedDict):
    deleted: bool
    eventId: str


class ContextHistory(TypedDict):
    id: str
    current: ContextEntry
    history: list[ContextEntry]  # every kept earlier version, newest first


class Review(TypedDict):
    id: str
    targetType: Literal["task", "context"]
    targetId: str
    requestedBy: str
    reviewer: str  # "*" for a submission: any agent but the submitter
    kind: NotRequired[Literal["submission"]]  # submit_task's (its evidence below)
    evidence: NotRequired[list[Evidence]]
    note: str | None
    status: Literal["pending", "approved", "rejected"]
    createdAt: str
    resolvedAt: NotRequired[str]
    resolvedBy: NotRequired[str]
    resolutionNote: NotRequired[str]  # the resolver's note (also `note`, roomd's field)
    requestNote: NotRequired[str]  # the request's note, once a resolver's note replaced it


class PayloadDiff(TypedDict):
    added: list[str]  # paths down to the values: endpoints[1].response.currency
    removed: list[str]
    changed: list[str]


class ContextDiffDetail(TypedDict):
    summaryChanged: bool
    fromSummary: str | None
    toSummary: str
    payload: PayloadDiff
    fromVersion: str | None
    toVersion: str


class ContextDiff(TypedDict):
    id: str
    current: ContextEntry
    previous: ContextEntry | None  # None: the entry has no earlier version kept
    diff: ContextDiffDetail


class Summary(TypedDict):
    agentId: str
    roomId: str
    myTasks: list[Task]
    unreadEvents: list[Event]
    newContextCount: int
    unreadMessages: int  # deliveries waiting in the agent's inbox (inbox reads them)
    pendingHandoffs: list[Handoff]  # offered to the agent: accept_handoff / decline_handoff
    inheritedContext: InheritedSummary
    presence: list[AgentPresence]
    cursor: str


class LockGranted(TypedDict):
    acquired: bool
    resource: str
    holder: str | None
    ttlSeconds: int
    expiresAt: str
    fencingToken: int


class LockReleased(TypedDict):
    released: bool
    resource: str
    holder: NotRequired[str | None]
    message: NotRequired[str]


class LockRow(TypedDict):
    resource: str
    owner: str
    expiresAt: str


class VarSet(TypedDict):
    key: str
    value: str


class VarGot(TypedDict):
    key: str
    value: str | None
    found: bool


class VarList(TypedDict):
    vars: dict[str, str]
    count: int


class RoomOverview(TypedDict):
    online: list[str]
    done: int
    total: int


class RoomSnapshot(TypedDict):
    plan: Plan
    presence: list[AgentPresence]
    events: list[Event]
    event_count: int
    context: list[ContextEntry]  # each with readBy and behind
    vars: dict[str, str]
    locks: list[LockRow]
    leases: list[Lease]
    messages: list[SentMessage]  # the newest, with every recipient's state


class AgentAtWork(TypedDict):
    """An agent in the room's presence, with what it is doing."""

    agentId: str
    status: str
    lastSeen: str
    state: PresenceState  # working, idle or gone (AgentPresence)
    working_on: list[Task]  # its tasks in progress
    last: Event | None  # its newest event among the snapshot's
    leases: list[Lease]  # the live leases it holds


class RoomWaiting(TypedDict):
    """What waits for a decision a person can take."""

    submitted: list[Task]  # submissions to verify
    reviews: list[Review]  # pending reviews (submissions are listed with their tasks)
    handoffs: list[Handoff]  # offered, not answered
    change_requests: list[ContextEntry]  # nobody answered them yet
    blocked: list[Task]


class RoomLive(TypedDict):
    """The room as a person watching it sees it: the snapshot, each agent at work, and
    what waits for a person."""

    snapshot: RoomSnapshot
    agents: list[AgentAtWork]
    waiting: RoomWaiting
    hooks: HookSwitches


class HookSwitches(TypedDict):
    """The room's switches for the client hooks (set_room_mode; docs/hooks.md)."""

    autoLeases: bool
    editRefusals: bool


class TaskDetail(TypedDict):
    """One task with everything around it, for a person opening it (the dashboard)."""

    task: Task
    leases: list[Lease]  # live, taken for this task
    handoffs: list[Handoff]  # of this task, oldest first
    reviews: list[Review]  # asked of this task, newest first
    context: list[ContextEntry]  # entries naming the task or handed over with it
    events: list[Event]  # about this task, newest first (of the newest TASK_EVENTS_SCANNED)
    dependents: list[Task]  # tasks waiting for this one


class EventPage(TypedDict):
    """A page of the log, newest first, ending before `before`; `older` continues it."""

    events: list[Event]
    older: str | None  # pass as `before` for the next page; None at the start of the log
    scanned: int


class SearchHit(TypedDict):
    kind: Literal["task", "context", "event"]
    id: str  # the task id, context entry id or event id
    score: float  # higher is more relevant (title and summary words weigh three times)
    snippet: str  # the text around the first word of the query it holds


class SearchResult(TypedDict):
    q: str
    hits: list[SearchHit]  # best first
    count: int
    warnings: NotRequired[list[str]]


class TemplateRow(TypedDict):
    id: str
    name: str
    description: str
    taskCount: int


class TemplateList(TypedDict):
    templates: list[TemplateRow]


class RoomFromTemplate(TypedDict):
    roomId: str
    templateId: str
    taskCount: int


class Lease(TypedDict):
    id: str
    path: str  # normalised, repository-relative; may be a glob
    mode: Literal["exclusive", "shared"]
    holder: str
    taskId: str | None
    reason: str | None
    expiresAt: str


class LeaseConflict(TypedDict):
    path: str
    holder: str
    mode: Literal["exclusive", "shared"]
    expiresAt: str


class LeaseClaimed(TypedDict):
    granted: bool
    lease: Lease | None  # None when refused
    conflicts: list[LeaseConflict]  # the other agents' leases that refused it
    renewed: NotRequired[bool]  # the agent's own lease of that path, made to last longer
    hint: NotRequired[str]  # when refused: who holds it, until when, and what to do instead


class LeaseReleased(TypedDict):
    released: bool
    path: str


class LeaseCheck(TypedDict):
    path: str
    free: bool  # no live lease of another agent (of anyone, without agentId) overlaps it
    leases: list[Lease]  # the live leases overlapping it, other holders first


class LeaseList(TypedDict):
    leases: list[Lease]
    count: int


class FileRead(TypedDict):
    path: str
    sha256: str
    at: str


class Drift(TypedDict):
    path: str
    severity: Literal["SAFE", "MINOR", "CRITICAL"]
    changed: bool  # the hash differs from the one noted (False without a noted read)
    holder: str | None  # another agent leasing the path now
    since: str | None  # when the noted read was made
    message: str


class RoomState(TypedDict):
    """AgentRoom's room_state: who holds what, who is here, what was said."""

    leases: list[Lease]
    agents: list[AgentPresence]
    recentBroadcasts: list[Event]


DeliveryState = Literal["stored", "read", "acked", "expired"]

Message = TypedDict(
    "Message",
    {
        "messageId": str,
        "from": str,
        "to": str,  # the selector it was sent to
        "subject": str | None,
        "body": str,
        "replyTo": str | None,
        "at": str,
        "state": DeliveryState,  # this recipient's delivery (inbox)
        "ackRequired": bool,
        "expiresAt": str | None,
    },
)


class MessageSent(TypedDict):
    messageId: str
    recipients: list[str]
    count: int
    warning: NotRequired[str]


class InboxSummary(TypedDict):
    """Why an inbox holds what it holds: an empty one explains itself."""

    deliveries: int  # messages ever delivered to the agent in this room
    read: int  # of them read (or acked)
    unread: int  # still unread after this call
    lastDeliveryAt: str | None
    agents: list[str]  # who is in the room (the most recently seen)
    message: NotRequired[str]


class Inbox(TypedDict):
    messages: list[Message]
    inbox: InboxSummary


class MessageAcked(TypedDict):
    messageId: str
    state: Literal["acked"]
    at: str


class Delivery(TypedDict):
    agentId: str
    state: DeliveryState
    at: str  # since when it is in that state


SentMessage = TypedDict(
    "SentMessage",
    {
        "messageId": str,
        "from": str,
        "to": str,
        "subject": str | None,
        "body": str,
        "at": str,
        "ackRequired": bool,
        "recipients": list[Delivery],  # each recipient's delivery, as of now
    },
)


class SentMessages(TypedDict):
    messages: list[SentMessage]


class RoomMode(TypedDict):
    roomId: str
    evidenceRequired: bool  # update_task(done) refused: submit_task, then verify_task
    turns: Literal["open", "sequential", "moderator"]
    moderator: str | None
    turnOrder: list[str]
    turn: str | None  # who holds the turn now (None: nobody yet, or open)
    secrets: Literal["off", "redact", "refuse"]  # rooms.redaction
    # The client hooks' switches (docs/hooks.md): leasing what an agent edits, and refusing
    # an edit of what another agent leases exclusively. Both on unless turned off.
    autoLeases: bool
    editRefusals: bool


class HandoffOffer(TypedDict):
    id: str
    to: str
    at: str


Handoff = TypedDict(
    "Handoff",
    {
        "id": str,
        "taskId": str,
        "from": str,
        "to": str,
        "note": str | None,
        "contextIds": list[str],  # what the receiver needs to read
        "status": Literal["offered", "accepted", "declined", "void"],
        "at": str,
        "resolvedAt": NotRequired[str],
        "resolvedBy": NotRequired[str],
        "resolutionNote": NotRequired[str],
    },
)


class RoomStatus(TypedDict):
    roomId: str
    status: Literal["active", "paused", "completed", "archived"]
    previousStatus: str
