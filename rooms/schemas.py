"""Typed inputs of every tool and the payload schemas of the five context types.

Argument names are roomd's (docs/protocol.md): camelCase, with `depends_on` and `consuming_agents`
in snake_case. Unknown arguments are refused (`extra="forbid"`) so a misspelt `agentID`
fails loudly instead of doing the wrong thing quietly (the refusal names the argument it
most likely meant: rooms.registry). One forgiveness: every tool whose actor is `from`,
`author` or `requestedBy` also takes `agentId` as it (ToolInput._actor_alternate). Size
limits: docs/protocol.md "Conventions".

One module on purpose: the argument vocabulary (agent names, ids, limits, the selectors)
is shared by every tool's input model, and reads as one contract beside docs/tools.md;
a tool's input model is a few lines here, next to its neighbours'.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    model_validator,
)
from pydantic_core import PydanticCustomError

from rooms import names
from rooms.templates import template_get

MAX_TITLE = 500
MAX_TEXT = 16_000
MAX_SUMMARY = 4_000
MAX_PAYLOAD_JSON = 64_000
MAX_CONSUMERS = 50
MAX_VAR_VALUE = 4_096
MAX_DEPENDS_ON = 100
ROOM_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{1,63}$"
_ROOM_ID = re.compile(ROOM_ID_PATTERN)
ROOM_ID_RULE = (
    "2-64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit, with no '__'"
)


def room_id_valid(value: str) -> bool:
    """THE roomId rule (docs/protocol.md "The room"). Checked in one place, the access
    check, so that a malformed id can be answered exactly like a room the caller may not touch."""
    return _ROOM_ID.fullmatch(value) is not None and "__" not in value


@dataclass(frozen=True, slots=True)
class ActorMarker:
    """Marks an argument that names who is acting (agentId, from, author, requestedBy): a
    key or invite bound to an agent acts only as that agent (tenants.access.actors_bind).
    Arguments that name someone else (a task's owner, a message's `to`) are not marked."""


ACTOR = ActorMarker()


def _payload_size(value: Any) -> Any:
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    if size > MAX_PAYLOAD_JSON:
        raise ValueError(f"payload is {size} characters of JSON; the limit is {MAX_PAYLOAD_JSON}")
    return value


# Any string reaches the access check, which applies the rule (room_id_valid); the
# published schema still shows the pattern to clients.
ROOM_ID_TEXT = "The room: 2-64 chars of a-z, 0-9, '_' and '-', starting with a letter or digit."
RoomId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=256),
    Field(
        description=ROOM_ID_TEXT,
        json_schema_extra={"pattern": ROOM_ID_PATTERN},
    ),
]


def _refused(problem: Exception | None) -> None:
    if problem is not None:
        raise PydanticCustomError("name_refused", "{message}", {"message": str(problem)})


def _name_valid(value: str) -> str:
    """rooms.names's rule: no control, invisible or bidi characters, no space at the ends,
    NFKC, no other spelling of a person's name. Refused, never rewritten."""
    _refused(names.name_problem(value, "the name"))
    return value


def _chars_valid(value: str) -> str:
    _refused(names.chars_problem(value, "the text"))
    return value


def _path_valid(value: str) -> str:
    _refused(names.chars_problem(value, "the path"))
    return value


def _owner_valid(value: str | None) -> str | None:
    return _name_valid(value) if value else value  # "" (or null) clears the owner


def _selector_valid(value: str) -> str:
    """A message's `to`: `*`, an agent's name, `tag:<tag>` (a name) or `file:<glob>` (a path
    holding no control, invisible or bidi character)."""
    if value in ("*", "all"):
        return value
    if value.startswith("file:"):
        _refused(names.chars_problem(value, "the selector"))
    elif value.startswith("tag:"):
        _refused(names.name_problem(value[len("tag:") :], "the tag"))
    else:
        _name_valid(value)
    return value


# Every name of an agent (who acts, who it is for, reviewers, moderators, consumers) is one.
Name = Annotated[str, StringConstraints(min_length=1, max_length=128), AfterValidator(_name_valid)]
AGENT_ID_TEXT = "Your agent name within the team, e.g. 'backend'."
AgentId = Annotated[Name, ACTOR, Field(description=AGENT_ID_TEXT)]
ActorName = Annotated[Name, ACTOR]
Identifier = Annotated[str, StringConstraints(min_length=1, max_length=128)]
# A caller's own key (a lock's resource, a shared variable's key): any visible text.
Key = Annotated[str, StringConstraints(min_length=1, max_length=128), AfterValidator(_chars_valid)]
Payload = Annotated[JsonValue, AfterValidator(_payload_size)]
TaskStatus = Literal["pending", "in_progress", "done", "blocked"]
ExpectedVersion = Annotated[int, Field(ge=1)] | None
ContextType = Literal["api_contract", "arch_decision", "task", "change_request", "note"]


# Every tool that takes an actor also takes `agentId` as it: the acting agent is roomd's
# `from`, `author` or `requestedBy` on some tools, and agents guess `agentId` (issue 25).
ACTOR_ALTERNATE = "agentId"
ACTOR_CONFLICT = (
    "agentId {given} and {field} {canonical} name different agents: here agentId is "
    "another name for {field}, so give one of them (or the same name in both)"
)
_SHOWN = 64


def _schema_alternates(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """The input schema shows `agentId` as a plain optional property beside the actor field
    it stands for, and neither is required: either satisfies the validator (ToolInput's
    _actor_alternate), and major clients accept no `anyOf` at an inputSchema's top level."""
    wires = actor_alternates(model)
    if not wires:
        return
    properties: dict[str, Any] = schema["properties"]
    for wire in wires:
        said = properties[wire].get("description", "Your agent name.")
        properties[wire]["description"] = f"{said} Required: this or agentId."
    properties[ACTOR_ALTERNATE] = {
        "type": "string",
        "minLength": 1,
        "maxLength": 128,
        "description": f"The same as {' and '.join(wires)}: give either.",
    }
    schema["required"] = [name for name in schema.get("required", []) if name not in wires]


class ToolInput(BaseModel):
    model_config = ConfigDict(
        extra="forbid", populate_by_name=False, json_schema_extra=_schema_alternates
    )

    @model_validator(mode="before")
    @classmethod
    def _actor_alternate(cls, data: Any) -> Any:
        """`agentId` given to a tool whose actor is named otherwise moves into that field, so
        everything downstream (the bound-credential check, presence, idempotency) sees one
        canonical argument; given beside it with another value, it is refused."""
        if not isinstance(data, dict) or ACTOR_ALTERNATE not in data:
            return data
        wires = actor_alternates(cls)
        if not wires:
            return data
        data = dict(data)
        given = data.pop(ACTOR_ALTERNATE)
        if given is None:
            return data
        for wire in wires:
            canonical = data.get(wire)
            if canonical is None:
                data[wire] = given
            elif canonical != given:
                raise PydanticCustomError(
                    "actor_conflict",
                    ACTOR_CONFLICT.format(
                        given=_clipped(given), field=wire, canonical=_clipped(canonical)
                    ),
                    {"fields": [ACTOR_ALTERNATE, wire]},
                )
        return data


def _clipped(value: Any) -> str:
    """A value as an error message shows it: a string's first characters, else its type."""
    return repr(value[:_SHOWN]) if isinstance(value, str) else f"(a {type(value).__name__})"


class RoomInput(ToolInput):
    roomId: RoomId


IDEMPOTENCY_TEXT = (
    "Makes a retry safe: a repeat of this exact call with the same key (in this room, within "
    "24 h) changes nothing and returns the first call's result; the same key with other "
    "arguments is refused."
)


class WriteInput(RoomInput):
    """Every tool that writes takes an idempotencyKey (rooms/idempotency.py)."""

    idempotencyKey: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = Field(
        default=None,
        description=IDEMPOTENCY_TEXT,
    )


class ListRoomsInput(ToolInput):
    pass


# --- Plan -------------------------------------------------------------------------------


class ReadPlanInput(RoomInput):
    pass


class AddTaskInput(WriteInput):
    title: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TITLE)]
    description: Annotated[str, StringConstraints(max_length=MAX_TEXT)] = ""
    depends_on: Annotated[list[Identifier], Field(max_length=MAX_DEPENDS_ON)] = Field(
        default_factory=list, description="Ids of tasks that must be done before this one."
    )
    priority: Annotated[int, Field(ge=0, le=1_000_000)] | None = Field(
        default=None, description="Lower comes first."
    )
    agentId: AgentId | None = None


class UpdateTaskInput(WriteInput):
    taskId: Identifier
    status: TaskStatus
    owner: (
        Annotated[str, StringConstraints(max_length=128), AfterValidator(_owner_valid)] | None
    ) = Field(default=None, description='"" clears it; left out, kept.')
    note: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = Field(
        default=None, description="Kept on the task and in the event (not the description)."
    )
    description: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = None
    agentId: AgentId | None = Field(default=None, description="Who is making the change.")
    expectedVersion: ExpectedVersion = None


class ClaimTaskInput(WriteInput):
    taskId: Identifier
    agentId: AgentId
    leaseSeconds: Annotated[int, Field(ge=1, le=86_400)] | None = Field(
        default=None,
        description="60-86400 s: the claim lapses (pending again) unless a call naming you "
        "renews it.",
    )
    paths: Annotated[
        list[Annotated[str, StringConstraints(min_length=1, max_length=1024)]], Field(max_length=20)
    ] = Field(
        default_factory=list,
        description="Files or globs the task will change, leased to you exclusively in the "
        "same step (or the claim is refused, naming the holders) until the task ends.",
    )


class ReleaseTaskInput(WriteInput):
    taskId: Identifier
    agentId: AgentId
    note: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = Field(
        default=None, description="Why, for whoever takes it next (kept on the task)."
    )


class SetTaskPriorityInput(WriteInput):
    taskId: Identifier
    priority: Annotated[int, Field(ge=0, le=1_000_000)] = Field(description="Lower comes first.")
    agentId: AgentId | None = Field(default=None, description="Who is making the change.")
    expectedVersion: ExpectedVersion = None


class AddDependencyInput(WriteInput):
    taskId: Identifier
    dependsOn: Identifier = Field(description="The task that must be done first.")
    agentId: AgentId | None = Field(default=None, description="Who is making the change.")
    expectedVersion: ExpectedVersion = None


class DeleteTaskInput(WriteInput):
    taskId: Identifier
    agentId: AgentId | None = Field(default=None, description="Who is deleting it.")
    expectedVersion: ExpectedVersion = None


class GetTaskInput(RoomInput):
    taskId: Identifier


class GetUnblockedTasksInput(RoomInput):
    agentId: AgentId | None = None


class AgentInput(RoomInput):
    agentId: AgentId


class GetMyTasksInput(AgentInput):
    pass


class GetMySummaryInput(AgentInput):
    pass


# --- Context ----------------------------------------------------------------------------

NonEmpty = Annotated[str, StringConstraints(min_length=1)]


class PayloadModel(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class Endpoint(PayloadModel):
    method: Literal["GET", "POST", "PUT", "DELETE", "PATCH"]
    path: NonEmpty
    response: dict[str, Any]
    auth_required: bool
    description: str
    request: dict[str, Any] | None = None


class ApiContractPayload(PayloadModel):
    service: NonEmpty
    version: NonEmpty
    endpoints: Annotated[list[Endpoint], Field(min_length=1)]
    base_url: str | None = None


class ArchDecisionPayload(PayloadModel):
    title: NonEmpty
    decision: NonEmpty
    rationale: NonEmpty
    alternatives: list[str]
    consequences: list[str]


class TaskContextPayload(PayloadModel):
    task_id: NonEmpty
    acceptance_criteria: list[str]
    technical_notes: str


class ChangeRequestPayload(PayloadModel):
    requested_by: NonEmpty
    target_agent: NonEmpty
    description: NonEmpty
    urgency: Literal["low", "medium", "high"]
    blocking_task_id: str | None = None


class NotePayload(PayloadModel):
    text: NonEmpty
    references: list[str] = Field(default_factory=list)


CONTEXT_PAYLOADS: dict[str, type[PayloadModel]] = {
    "api_contract": ApiContractPayload,
    "arch_decision": ArchDecisionPayload,
    "task": TaskContextPayload,
    "change_request": ChangeRequestPayload,
    "note": NotePayload,
}

Consumers = Annotated[list[Name], Field(max_length=MAX_CONSUMERS)]
Summary = Annotated[str, StringConstraints(max_length=MAX_SUMMARY)]


class WriteContextInput(WriteInput):
    type: ContextType
    summary: Summary
    consuming_agents: Consumers = Field(
        default_factory=list, description="Agents that build against this entry; each is notified."
    )
    payload: Annotated[dict[str, JsonValue], AfterValidator(_payload_size)] = Field(
        description="Shaped by `type`: see the tool description for each type's fields."
    )
    author: AgentId
    supersedes: Identifier | None = Field(
        default=None, description="The id of the entry this is the next version of."
    )


class ReadContextInput(RoomInput):
    id: Identifier
    agentId: AgentId | None = Field(
        default=None,
        description="You: the version you read is recorded, so an update tells you if it "
        "goes out of date (a context_stale event).",
    )


class DeleteContextInput(WriteInput):
    id: Identifier
    agentId: AgentId | None = Field(default=None, description="Who is deleting it.")


class DiffContextInput(RoomInput):
    id: Identifier
    againstVersion: (
        Annotated[str, StringConstraints(pattern=r"^\d+\.\d+$", max_length=16)] | None
    ) = Field(default=None, description='A kept version ("1.0"); default: the one before now.')


class GetContextHistoryInput(RoomInput):
    id: Identifier


class ListContextInput(RoomInput):
    type: ContextType | None = None
    author: Name | None = None
    includeInherited: bool = Field(
        default=False,
        description="Also the decisions and contracts inherited from the project's earlier "
        "rooms (marked `inherited`).",
    )
    agentId: AgentId | None = Field(
        default=None,
        description="You: the versions you read are recorded.",
    )


class UpdateContextInput(WriteInput):
    id: Identifier
    author: AgentId
    summary: Summary | None = None
    consuming_agents: Consumers | None = None
    payload: Annotated[dict[str, JsonValue], AfterValidator(_payload_size)] | None = None
    expectedVersion: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        default=None, description="Refuse the update unless the entry is still at this version."
    )


# --- Events -----------------------------------------------------------------------------

EventType = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class PostEventInput(WriteInput):
    type: EventType
    from_: ActorName = Field(alias="from")
    to: Name = "all"
    payload: Payload = Field(default_factory=dict)


class ReadEventsInput(RoomInput):
    since: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = Field(
        default=None, description="An ISO time or an event id; only events after it."
    )
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    order: Literal["desc", "asc"] = "desc"


def _marked(annotation: Any) -> bool:
    """Whether ACTOR sits on this annotation or inside it (`AgentId | None`)."""
    if any(isinstance(m, ActorMarker) for m in getattr(annotation, "__metadata__", ())):
        return True
    return any(_marked(arg) for arg in get_args(annotation))


@cache
def actor_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The model's fields that name the acting agent (those carrying the ACTOR marker)."""
    return tuple(
        name
        for name, info in model.model_fields.items()
        if any(isinstance(m, ActorMarker) for m in info.metadata) or _marked(info.annotation)
    )


@cache
def actor_alternates(model: type[BaseModel]) -> tuple[str, ...]:
    """The wire names of the actor fields `agentId` also stands for: all of them, for a tool
    that has no argument of its own named agentId; none otherwise."""
    wires = {info.alias or name for name, info in model.model_fields.items()}
    if ACTOR_ALTERNATE in wires:
        return ()
    return tuple(model.model_fields[name].alias or name for name in actor_fields(model))


class GetUnreadEventsInput(AgentInput):
    limit: Annotated[int, Field(ge=1, le=100)] = 50
    addressedOnly: bool = Field(default=False, description='Only events to "all" or you.')


class WaitForEventsInput(AgentInput):
    timeoutMs: Annotated[int, Field(ge=0)] = Field(
        default=20_000,
        description="At most 30,000 ms (a longer ask is cut: capped: true).",
    )
    limit: Annotated[int, Field(ge=1, le=100)] = 50
    addressedOnly: bool = Field(default=False, description='Only events to "all" or you.')


class MarkEventReadInput(AgentInput, WriteInput):
    eventId: Identifier


class DeleteEventInput(WriteInput):
    eventId: Identifier
    agentId: AgentId | None = Field(default=None, description="Who is deleting it.")


class GetEventReadsInput(RoomInput):
    eventId: Identifier


class ReplyToEventInput(WriteInput):
    replyToId: Identifier
    type: EventType
    from_: ActorName = Field(alias="from")
    to: Name = "all"
    payload: Payload = Field(default_factory=dict)


# --- Presence, locks, shared variables ----------------------------------------------------


Tag = Annotated[str, StringConstraints(min_length=1, max_length=64), AfterValidator(_name_valid)]


class HeartbeatInput(AgentInput, WriteInput):
    tags: Annotated[list[Tag], Field(max_length=16)] | None = Field(
        default=None,
        description='What you work on (["db"]): messages to "tag:<tag>" reach you. Kept '
        "until you send others.",
    )
    idle: bool = Field(
        default=False,
        description="true: your session ended; idle until your next call.",
    )


class GetPresenceInput(RoomInput):
    pass


class LeaveRoomInput(AgentInput, WriteInput):
    pass


class GetRoomInfoInput(RoomInput):
    pass


class GetRoomAnalyticsInput(RoomInput):
    days: Annotated[int, Field(ge=1, le=90)] = Field(
        default=7,
        description="The window in days (1-90): lastDays echoes it, perDay averages over it.",
    )


class SearchInput(RoomInput):
    q: Annotated[str, StringConstraints(min_length=1, max_length=200)] = Field(
        description='Words (hits holding all of them first), "quoted phrases" and '
        "prefixes (deplo*)."
    )
    limit: Annotated[int, Field(ge=1, le=50)] = 20
    semantic: bool = Field(
        default=False,
        description="Meaning rather than words: not configured on this server (the answer "
        "says so, and holds the full-text hits).",
    )


LeasePath = Annotated[
    str, StringConstraints(min_length=1, max_length=1024), AfterValidator(_path_valid)
]
LeaseSeconds = Annotated[int, Field(ge=10, le=3600)]


class LeaseClaimInput(AgentInput, WriteInput):
    path: LeasePath = Field(
        description="A repository-relative path or glob: src/app.py, src/**, *.md."
    )
    mode: Literal["exclusive", "shared"] = Field(
        default="exclusive",
        description="exclusive keeps every other lease off; shared only exclusive ones.",
    )
    ttlSeconds: LeaseSeconds = Field(default=300, description="How long it lasts (10-3600).")
    taskId: Identifier | None = Field(default=None, description="The task it is for.")
    reason: Annotated[str, StringConstraints(max_length=500)] | None = None


class LeaseRefInput(AgentInput, WriteInput):
    """A lease named by its id, or by its path (the agent's own lease of that path)."""

    leaseId: Identifier | None = None
    path: LeasePath | None = None

    @model_validator(mode="after")
    def _one_named(self) -> LeaseRefInput:
        if self.leaseId is None and self.path is None:
            raise ValueError("give leaseId or path")
        return self


class LeaseRenewInput(LeaseRefInput):
    ttlSeconds: LeaseSeconds = Field(default=300, description="How long from now (10-3600).")


class LeaseReleaseInput(LeaseRefInput):
    pass


class LeaseCheckInput(RoomInput):
    path: LeasePath
    agentId: Name | None = Field(
        default=None, description="You: your own leases do not make the path unfree."
    )


class LeaseListInput(RoomInput):
    agentId: Name | None = Field(default=None, description="Only this agent's leases.")


Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F]{64}$")]


class NoteReadInput(AgentInput, WriteInput):
    path: LeasePath = Field(description="The file you read (repository-relative).")
    sha256: Sha256 = Field(description="The hex SHA-256 of its content as you read it.")


class DriftCheckInput(AgentInput):
    path: LeasePath = Field(description="The file you are about to edit.")
    sha256: Sha256 = Field(description="The hex SHA-256 of its content now.")


class RoomClaimInput(AgentInput, WriteInput):
    path: LeasePath = Field(description="The file or glob to claim (exclusive, 300 s).")


class RoomReleaseInput(AgentInput, WriteInput):
    path: LeasePath = Field(description="The path you claimed.")


class RoomBroadcastInput(AgentInput, WriteInput):
    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT)]


class RoomStateInput(RoomInput):
    pass


class RoomReadInput(AgentInput):
    limit: Annotated[int, Field(ge=1, le=100)] = 50


class SendMessageInput(WriteInput):
    from_: ActorName = Field(alias="from", description="Your agent name.")
    to: Annotated[
        str, StringConstraints(min_length=1, max_length=1030), AfterValidator(_selector_valid)
    ] = Field(description='"*" (all but you), an agentId, "file:<glob>" or "tag:<tag>".')
    body: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT)]
    subject: Annotated[str, StringConstraints(max_length=200)] | None = None
    replyTo: Identifier | None = Field(default=None, description="The messageId answered.")
    ttlSeconds: Annotated[int, Field(ge=10, le=30 * 86_400)] | None = Field(
        default=None,
        description="Unacked this long, a delivery expires.",
    )
    ackRequired: bool = Field(default=False, description="Ask the recipients to ack_message.")


class InboxInput(AgentInput):
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    unreadOnly: bool = Field(
        default=True, description="Only messages you have not read (false: your newest, any state)."
    )


class AckMessageInput(AgentInput, WriteInput):
    messageId: Identifier


class SentMessagesInput(AgentInput):
    limit: Annotated[int, Field(ge=1, le=100)] = 20


class EvidenceItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["test", "diff", "link", "log", "note"]
    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_SUMMARY)] = Field(
        description="What it shows."
    )
    ref: Annotated[str, StringConstraints(max_length=1000)] | None = Field(
        default=None, description="A URL, commit or file path."
    )


class SubmitTaskInput(AgentInput, WriteInput):
    taskId: Identifier
    evidence: Annotated[list[EvidenceItem], Field(min_length=1, max_length=20)] = Field(
        description="1-20 items proving the work, for another agent to verify."
    )


class VerifyTaskInput(AgentInput, WriteInput):
    taskId: Identifier
    verdict: Literal["accept", "reject"] = Field(
        description="accept: done; reject: back in progress with your note."
    )
    note: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = Field(
        default=None, description="What you checked, or what is missing."
    )


class SetRoomModeInput(AgentInput, WriteInput):
    evidenceRequired: bool | None = Field(
        default=None,
        description="true: a task is done only once another agent verified its evidence "
        "(submit_task, verify_task); update_task(status: done) is refused.",
    )
    turns: Literal["open", "sequential", "moderator"] | None = Field(
        default=None,
        description="Who may post (post_event, reply_to_event, room_broadcast, "
        "send_message) when: open, anyone any time; sequential, in turn order; moderator, "
        "the moderator any time and others once it addressed them.",
    )
    moderator: Name | None = Field(
        default=None, description="With turns moderator: who moderates (default: agentId)."
    )
    secrets: Literal["off", "redact", "refuse"] | None = Field(
        default=None,
        description="What a write holding a secret (a key, a token, a password) meets: "
        "redact (the default) stores a marker in its place and says where; refuse stores "
        "nothing; off checks only for this service's own keys.",
    )
    turnOrder: Annotated[list[Name], Field(max_length=100)] | None = Field(
        default=None,
        description="With turns sequential: the order of turns (default, or []: the agents "
        "present, by name).",
    )
    autoLeases: bool | None = Field(
        default=None,
        description="false: the client hooks stop leasing the files an agent edits (on by "
        "default; docs/hooks.md).",
    )
    editRefusals: bool | None = Field(
        default=None,
        description="false: the client hooks stop refusing an edit of a file another agent "
        "leases exclusively (on by default; docs/hooks.md).",
    )


class HandoffTaskInput(WriteInput):
    taskId: Identifier
    from_: ActorName = Field(alias="from", description="You, the task's owner.")
    to: Name = Field(description="The agent to hand it to (it must accept).")
    note: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = Field(
        default=None, description="Where you stopped, what is left."
    )
    contextIds: Annotated[list[Identifier], Field(max_length=50)] = Field(
        default_factory=list, description="Context entries it needs."
    )


class HandoffAnswerInput(AgentInput, WriteInput):
    handoffId: Identifier
    note: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = None


class AcceptHandoffInput(HandoffAnswerInput):
    pass


class DeclineHandoffInput(HandoffAnswerInput):
    pass


class SetRoomStatusInput(WriteInput):
    status: Literal["active", "paused", "completed", "archived"] = Field(
        description="paused and completed rooms answer reads and refuse writes; archived "
        "moves the whole room to the database (reads answer from the archive); active opens "
        "a room again, and restores an archived one exactly."
    )
    agentId: AgentId | None = Field(default=None, description="Who is changing it.")


class ListTemplatesInput(ToolInput):
    pass


def _template_known(template_id: str) -> str:
    """Raises ToolArgumentsError (naming the closest templates) for an unknown one."""
    return template_get(template_id).id


class CreateRoomFromTemplateInput(WriteInput):
    """roomId may be left out: the door makes a new room for the caller's team (its id from
    the template's and, with an idempotencyKey, from the team and the key, so a retry
    reaches the same room and no other team's call can take it first)."""

    roomId: RoomId = Field(
        default="", description="The room to create it in (left out: a new room)."
    )
    # An unknown template is refused here, before the access check claims a room for it:
    # a typo never leaves an empty room behind.
    templateId: Annotated[Identifier, AfterValidator(_template_known)] = Field(
        description="A template id from list_templates."
    )
    agentId: AgentId | None = Field(default=None, description="Who is creating it.")


class RequestReviewInput(WriteInput):
    targetType: Literal["task", "context"] = Field(description="What is to be reviewed.")
    targetId: Identifier = Field(description="The task id or context entry id.")
    requestedBy: ActorName = Field(description="Your agent name.")
    reviewer: Name = Field(description="The agent who is to review it.")
    note: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = Field(
        default=None, description="What to look at."
    )


class ResolveReviewInput(AgentInput, WriteInput):
    reviewId: Identifier
    note: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = Field(
        default=None, description="Why (for the one who asked)."
    )


class ApproveInput(ResolveReviewInput):
    pass


class RejectInput(ResolveReviewInput):
    pass


class ListReviewsInput(RoomInput):
    status: Literal["pending", "approved", "rejected"] | None = None


class AcquireLockInput(AgentInput, WriteInput):
    resource: Key
    ttlSeconds: Annotated[int, Field(ge=1, le=300)] = 30


class ReleaseLockInput(AgentInput, WriteInput):
    resource: Key


class ListLocksInput(RoomInput):
    pass


class SetSharedVarInput(AgentInput, WriteInput):
    key: Key
    value: Annotated[str, StringConstraints(max_length=MAX_VAR_VALUE)]


class GetSharedVarInput(RoomInput):
    key: Key


class ListSharedVarsInput(RoomInput):
    pass
