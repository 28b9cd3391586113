"""A coding agent's hook events sent over HTTP (docs/hooks.md, "Claude Code over HTTP"): what
each event does in the room, and what it answers, in words of no client in particular; the
door (mcp_gateway/hooks.py) reads the client's JSON into a `HookEvent` and writes a
`HookAnswer` back in the client's JSON.

Every step is an agent tool, run as the caller through `calls.runner.tool_run`, so budgets,
access checks, actor binding and read-only keys apply exactly as at the tool doors:

- before an edit: `lease_list`; another agent's exclusive lease over the file refuses the
  edit (unless the room's `editRefusals` is off). The file is matched in any letter case:
  on a case-insensitive file system (macOS, Windows) `SRC/App.py` is the leased
  `src/app.py`, and a false refusal on a case-sensitive one is the cheaper mistake. A
  free path gets no decision, never an "allow": Claude Code's "allow" skips the person's
  own permission prompt, which is not ours to skip;
- after an edit: `lease_claim`, exclusive, HOOK_LEASE_SECONDS, for the agent's task in
  progress (unless the room's `autoLeases` is off); the next edit renews it;
- a session starts: what the agent should know (its tasks, its unread messages, the API
  contracts it consumes that changed, who works on what);
- the agent would stop: its unread messages keep it going, once;
- the session ends: its automatic leases go, and the agent is marked idle.

A refusal anywhere (`HookRefusedError`, or any `DomainError` a tool raises) is "no decision"
at the door: a hook never blocks an agent because the room could not answer. What the
person can fix (no agent, a refused key, an unknown room) is told to them once a session
(`HookRefusedError.notice`, the door's `systemMessage`).
"""

from __future__ import annotations

import logging
import ntpath
import posixpath
import re
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

from django.conf import settings

from calls.runner import tool_run
from rooms import paths
from rooms import results as r
from rooms.errors import DomainError
from rooms.names import is_person_name
from rooms.refs import RoomRef
from rooms.store import room as room_store
from tenants import access, budgets, services
from tenants.capabilities import Caller
from tenants.db import db_run

log = logging.getLogger(__name__)

# --- What the agent reads -------------------------------------------------------------------

EDIT_REFUSED = (
    "{path} is leased exclusively by {holder} ({lease_path}, until {until}). Leave it as it "
    'is for now: agree with {holder} first (send_message to "{holder}"), pick other work '
    "(read_plan), or wait for the lease to end (wait_for_events) and try again."
)
EDITED_LEASED = (
    "{path} is leased by {holders} until {until}, so it stays theirs: your edit is in, but "
    "agree with them (send_message) before you change it further."
)
AUTO_LEASE_REASON = "auto-lease: edited in {client} session {session}"
AUTO_LEASE_PREFIX = "auto-lease: "

ORIENTATION_HEAD = 'Roomservice room "{room}": you are "{agent}".'
TASKS_HEAD = "Your tasks:"
TASK_LINE = "- {id} [{status}] {title}"
TASKS_NONE = "You hold no task: read_plan shows what is free, claim_task takes one."
TASKS_MORE = "…and {n} more (get_my_summary)"
MESSAGES_HEAD = "Unread messages (now marked read):"
MESSAGES_MORE = "…and {n} more unread (inbox)"
CONTRACTS_HEAD = "API contracts you consume that changed since you last read them:"
CONTRACT_LINE = "- {id} v{version} by {author}: {summary}"
CONTRACTS_MORE = "…and {n} more you consume (list_context type api_contract)"
WORKING_HEAD = "Who is working on what:"
WORKING_LINE = "- {owner}: {id} {title}"
WORKING_MORE = "…and {n} more (read_plan)"
MORE = "…and {n} more"

STOP_HEAD = "Before you finish: {n} unread message{s} for {agent} in room {room}."
MESSAGE_LINE = "From {sender}{subject} (messageId {id}):"
MESSAGE_SUBJECT = ', subject "{subject}"'
MESSAGE_ACK = "{sender} asked for an acknowledgement: answer with send_message (replyTo {id})."
MESSAGE_CUT = "… (cut here; inbox with unreadOnly false shows it whole)"
STOP_TAIL = "Act on them; answer with send_message (replyTo the messageId) where one asks."

# --- Why there is no decision (logged, never shown) -------------------------------------------

AGENT_MISSING = "no agent: the credential is bound to none and X-Roomservice-Agent is empty"
AGENT_MISMATCH = "X-Roomservice-Agent names {given!r}, but the credential is bound to {bound!r}"
AGENT_PERSON = "X-Roomservice-Agent names a person ({given!r}): hooks act for agents"
ROOM_UNKNOWN = "no such room (a hook never creates one)"

# --- What the person is told, once a session, when the hooks cannot act ---------------------

NOTICE_HEAD = "Roomservice hooks are off in this session (edits are not checked or leased): "
NOTICE_NO_AGENT = NOTICE_HEAD + (
    "no agent's name reached them. Run the Connect page's setup again at the top of this "
    "checkout, with &agent=<name> in its URL."
)
NOTICE_AGENT_MISMATCH = NOTICE_HEAD + (
    "the hooks name the agent {given}, but this key belongs to {bound}. Run the setup again "
    "with &agent={bound}, or use a key that is not bound to an agent."
)
NOTICE_AGENT_PERSON = NOTICE_HEAD + (
    "the hooks name {given}, a person. Run the setup again with the agent's own name."
)
NOTICE_KEY = NOTICE_HEAD + (
    "the server refused the key (missing, unknown or revoked). Start Claude Code with a valid "
    "team key or invite exported as ROOMSERVICE_KEY."
)
NOTICE_ROOM = NOTICE_HEAD + (
    'room "{room}" is not one of this key\'s rooms. Check the room in the hook URL of '
    ".claude/settings.local.json, or run the setup again with the right ?room=."
)
NOTICE_REFUSED = "Roomservice hooks could not act: {message}"
NOTICE_STORE = (
    "Roomservice hooks could not reach the room's store: edits are not checked or leased "
    "until it is back."
)

# How much of the room the orientation and the Stop report carry.
ORIENTATION_MAX = 2_000  # characters of a SessionStart's additionalContext
TASKS_SHOWN = 5
MESSAGES_SHOWN = 3  # at a session start: only these are read (and so marked read)
MESSAGES_STOP = 10  # when the agent would stop
CONTRACTS_CHECKED = 5  # read_context calls at a session start
WORKING_SHOWN = 6
LINE_MAX = 200
BODY_MAX_START = 400
BODY_MAX_STOP = 2_000

HookKind = Literal["before_edit", "after_edit", "session_start", "stop", "session_end"]


class HookRefusedError(Exception):
    """No decision, and why (`reason`, for the log); `notice`, when set, says to the person
    what to fix (never the key)."""

    def __init__(self, reason: str, notice: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.notice = notice


@dataclass(frozen=True, slots=True)
class HookEvent:
    """One hook event, as the door read it from the client's JSON."""

    kind: HookKind
    client: str  # how the client is named to the agent ("Claude Code")
    session_id: str
    cwd: str | None = None
    file_path: str | None = None  # an edit's file, as the client gave it
    root: str | None = None  # the checkout's top, as the setup wrote it into the hook
    stop_hook_active: bool = False  # the agent already goes on because of a Stop hook


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """What the hook says; all None: no decision."""

    deny: str | None = None  # refuse the edit, for this reason
    context: str | None = None  # add this to the agent's context
    block: str | None = None  # keep the agent from stopping, for this reason


NO_DECISION = HookAnswer()


@dataclass(frozen=True, slots=True)
class RoomSwitches:
    """The room's hook switches (set_room_mode autoLeases, editRefusals; absent: on)."""

    auto_leases: bool = True
    edit_refusals: bool = True


async def room_switches(room: RoomRef) -> RoomSwitches:
    mode = await room_store.room_mode_get(room.keys)
    return RoomSwitches(
        auto_leases=mode.get("autoLeases") is not False,
        edit_refusals=mode.get("editRefusals") is not False,
    )


def hook_agent(caller: Caller, named: str | None) -> str:
    """Who the hook acts for: a bound credential's own agent (a header naming another is
    refused), else the agent the X-Roomservice-Agent header names."""
    named = named.strip() if named else None
    if caller.agent is not None:
        if named and named != caller.agent:
            raise HookRefusedError(
                AGENT_MISMATCH.format(given=named[:128], bound=caller.agent),
                NOTICE_AGENT_MISMATCH.format(given=plain_line(named, 128), bound=caller.agent),
            )
        return caller.agent
    if not named:
        raise HookRefusedError(AGENT_MISSING, NOTICE_NO_AGENT)
    if is_person_name(named):
        raise HookRefusedError(
            AGENT_PERSON.format(given=named[:128]),
            NOTICE_AGENT_PERSON.format(given=plain_line(named, 128)),
        )
    return named


_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def repo_path(event: HookEvent) -> str | None:
    """The edited file as a repository-relative path: from the checkout's top the setup
    named (so a session started in a subfolder still names `src/app.py`), else from the
    session's cwd; None when it is under neither."""
    full = event.file_path
    if full and event.cwd and not (full.startswith(("/", "\\")) or _DRIVE.match(full)):
        full = f"{event.cwd.rstrip('/')}/{full}"  # a path relative to the session's cwd
    return path_in_cwd(event.root, full) or path_in_cwd(event.cwd, event.file_path)


def path_in_cwd(cwd: str | None, file_path: str | None) -> str | None:
    """`file_path` relative to `cwd`, with / between its parts; None when it is not under
    `cwd` (or either is missing, or `cwd` is not absolute). Windows paths (a drive, or a
    UNC share) are compared as Windows compares them."""
    if not cwd or not file_path:
        return None
    windows = bool(_DRIVE.match(cwd)) or cwd.startswith("\\\\")
    flavour = ntpath if windows else posixpath
    if not flavour.isabs(cwd):
        return None
    base = flavour.normpath(cwd)
    full = flavour.normpath(flavour.join(base, file_path))
    try:
        common = flavour.commonpath([base, full])
    except ValueError:  # another drive
        return None
    if flavour.normcase(common) != flavour.normcase(base):
        return None
    relative = str(flavour.relpath(full, base))
    if relative in ("", ".") or relative.startswith(".."):
        return None
    return relative.replace("\\", "/") if windows else relative


# Characters that change what a reader sees without showing: controls (but tab and
# newline), format characters (zero-width, bidi embeddings, overrides and isolates, U+FEFF,
# U+061C), line and paragraph separators, surrogates, private-use and unassigned code
# points — the set rooms/names.py refuses in names, and hooks/roomservice-guard drops.
_UNSEEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def plain(text: object) -> str:
    """Text from the room (or the payload) as it may reach an agent: nothing unseen."""
    return "".join(c for c in str(text) if c in "\n\t" or unicodedata.category(c) not in _UNSEEN)


def plain_line(text: object, limit: int = LINE_MAX) -> str:
    """`plain`, on one line, at most `limit` characters."""
    return _cut(" ".join(plain(text).split()), limit)


def _cut(text: str, limit: int, tail: str = "…") -> str:
    return text if len(text) <= limit else text[: max(0, limit - len(tail))] + tail


def auto_lease_reason(event: HookEvent) -> str:
    """The reason an automatic lease carries: which session made it, so its end releases
    exactly those."""
    return AUTO_LEASE_REASON.format(
        client=event.client, session=plain_line(event.session_id, 128)[:12]
    )


class _Calls:
    """The tools one hook runs in its room, as its caller. The door's budget step charged
    the first; every further one is charged as its own call."""

    def __init__(self, caller: Caller, room_id: str, charge: budgets.Charge) -> None:
        self.caller = caller
        self.room_id = room_id
        self._charge: budgets.Charge | None = charge

    async def run(self, tool: str, **arguments: Any) -> Any:
        charge, self._charge = self._charge, None
        return await tool_run(
            self.caller, tool, {"roomId": self.room_id, **arguments}, charge=charge
        )


async def _room_reached(caller: Caller, room_id: str, epoch: int | None) -> RoomRef:
    """The room, checked as every tool checks it; an id no team owns is refused here, so a
    hook pointed at a mistyped room never claims it on first touch."""
    notice = NOTICE_ROOM.format(room=plain_line(room_id, 128))
    owner, _ = await db_run(services.room_record_of, room_id)
    if owner is None:
        raise HookRefusedError(ROOM_UNKNOWN, notice)
    try:
        return await access.room_access(caller, room_id, write=False, epoch=epoch)
    except DomainError as exc:  # another team's room answers as a missing one
        raise HookRefusedError(f"{exc.code}: {exc.message}", notice) from None


Handler = Callable[[_Calls, RoomRef, str, HookEvent], Awaitable[HookAnswer]]


async def hook_run(
    caller: Caller,
    charge: budgets.Charge,
    *,
    room_id: str,
    named_agent: str | None,
    event: HookEvent,
) -> HookAnswer:
    """What `event` does in the room for `caller`, and what the hook answers. Raises
    HookRefusedError or DomainError (the door's "no decision")."""
    if charge.refused is not None:
        raise charge.refused
    agent = hook_agent(caller, named_agent)
    if event.kind == "stop" and event.stop_hook_active:
        # Already going on because of a Stop hook: no second hold (its messages stay unread).
        return NO_DECISION
    room = await _room_reached(caller, room_id, charge.epoch)
    return await _HANDLERS[event.kind](_Calls(caller, room_id, charge), room, agent, event)


# --- Edits ----------------------------------------------------------------------------------


async def _before_edit(calls: _Calls, room: RoomRef, agent: str, event: HookEvent) -> HookAnswer:
    path = repo_path(event)
    if path is None or not (await room_switches(room)).edit_refusals:
        return NO_DECISION
    try:
        folded = paths.path_normalize(path).casefold()
    except DomainError:
        return NO_DECISION  # not a path the room could lease
    listed = cast(r.LeaseList, await calls.run("lease_list"))
    for lease in listed["leases"]:
        if (
            lease["holder"] != agent
            and lease["mode"] == "exclusive"
            and paths.paths_overlap(lease["path"].casefold(), folded)
        ):
            holder = plain_line(lease["holder"], 128)
            return HookAnswer(
                deny=EDIT_REFUSED.format(
                    path=plain_line(path),
                    holder=holder,
                    lease_path=plain_line(lease["path"]),
                    until=plain_line(lease["expiresAt"], 64),
                )
            )
    # A free path, a shared lease, the agent's own: no decision — not "allow", which would
    # skip the person's own permission prompt.
    return NO_DECISION


async def _after_edit(calls: _Calls, room: RoomRef, agent: str, event: HookEvent) -> HookAnswer:
    path = repo_path(event)
    if path is None or not (await room_switches(room)).auto_leases:
        return NO_DECISION
    reason = auto_lease_reason(event)
    checked = cast(r.LeaseCheck, await calls.run("lease_check", path=path, agentId=agent))
    others = [lease for lease in checked["leases"] if lease["holder"] != agent]
    if others:
        return HookAnswer(context=_edited_leased(path, others))
    for lease in checked["leases"]:
        own_reason = lease["reason"] or ""
        if lease["mode"] == "exclusive" and not own_reason.startswith(AUTO_LEASE_PREFIX):
            return NO_DECISION  # a lease the agent took itself covers the file: it stays as is
    tasks = cast(list[r.Task], await calls.run("get_my_tasks", agentId=agent))
    task_id = next((t["id"] for t in tasks if t["status"] == "in_progress"), None)
    claimed = cast(
        r.LeaseClaimed,
        await calls.run(
            "lease_claim",
            agentId=agent,
            path=path,
            mode="exclusive",
            ttlSeconds=int(settings.HOOK_LEASE_SECONDS),
            taskId=task_id,
            reason=reason,
        ),
    )
    if claimed["granted"]:
        return NO_DECISION
    return HookAnswer(context=_edited_leased(path, claimed["conflicts"]))


def _edited_leased(path: str, leases: list[r.Lease] | list[r.LeaseConflict]) -> str:
    holders = ", ".join(
        dict.fromkeys(
            f'"{plain_line(c["holder"], 128)}" ({c["mode"]}, {plain_line(c["path"])})'
            for c in leases
        )
    )
    until = max(plain_line(c["expiresAt"], 64) for c in leases)
    return EDITED_LEASED.format(path=plain_line(path), holders=holders, until=until)


# --- A session starts -----------------------------------------------------------------------


async def _session_start(calls: _Calls, room: RoomRef, agent: str, event: HookEvent) -> HookAnswer:
    tasks = cast(list[r.Task], await calls.run("get_my_tasks", agentId=agent))
    inbox = cast(r.Inbox, await calls.run("inbox", agentId=agent, limit=MESSAGES_SHOWN))
    contracts, unchecked = await _contracts_changed(calls, agent)
    plan = cast(r.Plan, await calls.run("read_plan"))
    sections = [
        [ORIENTATION_HEAD.format(room=plain_line(room.room_id), agent=plain_line(agent))],
        _tasks_section(tasks),
        _messages_section(inbox, BODY_MAX_START),
        _contracts_section(contracts, unchecked),
        _working_section(plan, agent),
    ]
    return HookAnswer(context=_fit([line for s in sections for line in s], ORIENTATION_MAX))


def _tasks_section(tasks: list[r.Task]) -> list[str]:
    if not tasks:
        return [TASKS_NONE]
    lines = [TASKS_HEAD]
    lines += [
        TASK_LINE.format(
            id=plain_line(t["id"], 64), status=t["status"], title=plain_line(t["title"])
        )
        for t in tasks[:TASKS_SHOWN]
    ]
    if len(tasks) > TASKS_SHOWN:
        lines.append(TASKS_MORE.format(n=len(tasks) - TASKS_SHOWN))
    return lines


def _messages_section(inbox: r.Inbox, body_max: int) -> list[str]:
    if not inbox["messages"]:
        return []
    lines = [MESSAGES_HEAD, *_message_lines(inbox["messages"], body_max)]
    if inbox["inbox"]["unread"]:
        lines.append(MESSAGES_MORE.format(n=inbox["inbox"]["unread"]))
    return lines


def _message_lines(messages: list[r.Message], body_max: int) -> list[str]:
    lines = []
    for m in messages:
        sender, message_id = plain_line(m["from"], 128), plain_line(m["messageId"], 64)
        subject = MESSAGE_SUBJECT.format(subject=plain_line(m["subject"])) if m["subject"] else ""
        lines.append(MESSAGE_LINE.format(sender=sender, subject=subject, id=message_id))
        lines.append(_cut(plain(m["body"]).strip(), body_max, MESSAGE_CUT))
        if m["ackRequired"]:
            lines.append(MESSAGE_ACK.format(sender=sender, id=message_id))
    return lines


async def _contracts_changed(calls: _Calls, agent: str) -> tuple[list[r.ContextEntry], int]:
    """(the API contracts `agent` consumes whose current version it has not read, among the
    newest CONTRACTS_CHECKED it consumes; how many more it consumes, unchecked). Nothing is
    recorded as read: the agent reads them itself."""
    listed = cast(list[r.ContextEntry], await calls.run("list_context", type="api_contract"))
    consumed = [e for e in listed if agent in e["consuming_agents"]]
    changed = []
    for entry in consumed[:CONTRACTS_CHECKED]:
        read = cast(r.ContextEntry, await calls.run("read_context", id=entry["id"]))
        seen = {reader["agentId"]: reader["version"] for reader in read.get("readBy", [])}
        if seen.get(agent) != read["version"]:
            changed.append(read)
    return changed, max(0, len(consumed) - CONTRACTS_CHECKED)


def _contracts_section(contracts: list[r.ContextEntry], unchecked: int) -> list[str]:
    if not contracts and not unchecked:
        return []
    lines = [CONTRACTS_HEAD] if contracts else []
    lines += [
        CONTRACT_LINE.format(
            id=plain_line(c["id"], 64),
            version=plain_line(c["version"], 16),
            author=plain_line(c["author"], 128),
            summary=plain_line(c["summary"]),
        )
        for c in contracts
    ]
    if unchecked:
        lines.append(CONTRACTS_MORE.format(n=unchecked))
    return lines


def _working_section(plan: r.Plan, agent: str) -> list[str]:
    busy = [
        t for t in plan["tasks"] if t["status"] == "in_progress" and t["owner"] not in (None, agent)
    ]
    if not busy:
        return []
    lines = [WORKING_HEAD]
    lines += [
        WORKING_LINE.format(
            owner=plain_line(t["owner"], 128),
            id=plain_line(t["id"], 64),
            title=plain_line(t["title"]),
        )
        for t in busy[:WORKING_SHOWN]
    ]
    if len(busy) > WORKING_SHOWN:
        lines.append(WORKING_MORE.format(n=len(busy) - WORKING_SHOWN))
    return lines


def _fit(lines: list[str], limit: int) -> str:
    """The lines joined, at most `limit` characters: the lines past it make "…and N more"."""
    kept: list[str] = []
    used = 0
    reserve = len(MORE.format(n=len(lines))) + 1
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if used + len(line) + 1 > limit - (0 if last else reserve):
            kept.append(MORE.format(n=len(lines) - i))
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept)


# --- The agent would stop -------------------------------------------------------------------


async def _stop(calls: _Calls, room: RoomRef, agent: str, event: HookEvent) -> HookAnswer:
    inbox = cast(r.Inbox, await calls.run("inbox", agentId=agent, limit=MESSAGES_STOP))
    messages = inbox["messages"]
    if not messages:
        return NO_DECISION
    head = STOP_HEAD.format(
        n=len(messages),
        s="" if len(messages) == 1 else "s",
        agent=plain_line(agent, 128),
        room=plain_line(room.room_id),
    )
    lines = [head, *_message_lines(messages, BODY_MAX_STOP)]
    if inbox["inbox"]["unread"]:
        lines.append(MESSAGES_MORE.format(n=inbox["inbox"]["unread"]))
    lines.append(STOP_TAIL)
    return HookAnswer(block="\n".join(lines))


# --- The session ends -----------------------------------------------------------------------


async def _session_end(calls: _Calls, room: RoomRef, agent: str, event: HookEvent) -> HookAnswer:
    """The session's automatic leases go (a lease the agent took itself stays), then the
    agent is marked idle. Each step is tried even when one before it was refused."""
    reason = auto_lease_reason(event)
    try:
        listed = cast(r.LeaseList, await calls.run("lease_list", agentId=agent))
    except DomainError as exc:
        _refused(room, event, "lease_list", exc)
        listed = {"leases": [], "count": 0}
    for lease in listed["leases"]:
        if lease["holder"] == agent and lease["reason"] == reason:
            try:
                await calls.run("lease_release", agentId=agent, leaseId=lease["id"])
            except DomainError as exc:
                _refused(room, event, "lease_release", exc)
    try:
        await calls.run("heartbeat", agentId=agent, idle=True)
    except DomainError as exc:
        _refused(room, event, "heartbeat", exc)
    return NO_DECISION


def _refused(room: RoomRef, event: HookEvent, tool: str, exc: DomainError) -> None:
    log.warning(
        "hook %s in room %r: %s refused (%s): %s",
        event.kind,
        room.room_id,
        tool,
        exc.code,
        exc.message,
    )


_HANDLERS: dict[HookKind, Handler] = {
    "before_edit": _before_edit,
    "after_edit": _after_edit,
    "session_start": _session_start,
    "stop": _stop,
    "session_end": _session_end,
}
