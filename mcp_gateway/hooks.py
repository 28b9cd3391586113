"""`POST /api/v1/rooms/<roomId>/hooks/<client>`: a coding agent's hook event, posted by the
client itself (Claude Code's `type: "http"` hooks, docs/hooks.md "Claude Code over HTTP"),
answered in that client's JSON. The credential is the bearer, as at the REST tool door; the
agent is the credential's own, or the one `X-Roomservice-Agent` names.

What an event does is calls.hooks' business; this door reads the client's JSON into a
`HookEvent` and writes the `HookAnswer` back (a small table of clients: another is a parse
and a render). Whatever goes wrong — a bad body, an unknown event or client, a refused
credential, another team's room, an empty budget, a store away — the answer is 200 with
no decision, and the reason goes to the log: a hook outage never blocks an agent. What the
person can fix (no agent named, a refused key, a room not theirs, a spent budget) is also
said to them, once a session, in the client's own way (Claude Code: `systemMessage`): hooks
that silently do nothing look exactly like hooks with nothing to say.
"""

from __future__ import annotations

import hashlib
import json
import logging
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from calls import hooks
from calls.hooks import HookAnswer, HookEvent, HookKind, HookRefusedError
from rooms.errors import DomainError
from rooms.store import bearers as bearers_store
from rooms.store import connections as connections_store
from tenants.auth import bearer_from_header, caller_admit

log = logging.getLogger(__name__)

# Claude Code posts one event a request; nothing legitimate comes near this.
MAX_BODY_BYTES = 1_000_000
AGENT_HEADER = "X-Roomservice-Agent"
# The checkout's top, percent-encoded, as the setup wrote it: edits are leased by their path
# from there, whatever folder the session started in.
ROOT_HEADER = "X-Roomservice-Root"
# A session is told why its hooks cannot act once in this long (Redis SET NX with expiry).
NOTICE_SECONDS = 12 * 3600

# Why there is no decision (logged, never answered).
UNKNOWN_CLIENT = "unknown client (known: {known})"
BAD_BODY = "the body is not a JSON object of at most 1 MB"
UNKNOWN_EVENT = "unknown hook_event_name {name!r}"
NO_SESSION = "no session_id"
NO_PATH = "{tool} without a file path"
NOT_ADMITTED = "missing, unknown or revoked credential"
STORE_AWAY = "a store did not answer"
FAILED = "the hook failed"


@dataclass(frozen=True, slots=True)
class Client:
    """One client's hook JSON: `parse` reads an event (None: nothing to decide, such as a
    tool that edits nothing; HookRefusedError: not an event), `render` writes the answer."""

    parse: Callable[[dict[str, Any]], HookEvent | None]
    render: Callable[[HookEvent, HookAnswer], dict[str, Any]]
    notice: Callable[[str], dict[str, Any]]


# --- Claude Code (https://code.claude.com/docs/en/hooks) --------------------------------------

CLAUDE_CODE = "Claude Code"
_CLAUDE_EVENTS: dict[str, HookKind] = {
    "PreToolUse": "before_edit",
    "PostToolUse": "after_edit",
    "SessionStart": "session_start",
    "Stop": "stop",
    "SessionEnd": "session_end",
}
_CLAUDE_NAMES = {kind: name for name, kind in _CLAUDE_EVENTS.items()}
# The tools that edit a file, and where their input names it.
_CLAUDE_EDITS = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}


def _claude_parse(body: dict[str, Any]) -> HookEvent | None:
    name = body.get("hook_event_name")
    kind = _CLAUDE_EVENTS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise HookRefusedError(UNKNOWN_EVENT.format(name=str(name)[:64]))
    session = body.get("session_id")
    if not isinstance(session, str) or not session:
        raise HookRefusedError(NO_SESSION)
    cwd = body.get("cwd") if isinstance(body.get("cwd"), str) else None
    path = None
    if kind in ("before_edit", "after_edit"):
        tool = body.get("tool_name")
        field = _CLAUDE_EDITS.get(tool) if isinstance(tool, str) else None
        if field is None:
            return None  # not an edit: reads and commands are never decided here
        tool_input = body.get("tool_input")
        path = tool_input.get(field) if isinstance(tool_input, dict) else None
        if not isinstance(path, str) or not path:
            raise HookRefusedError(NO_PATH.format(tool=tool))
    return HookEvent(
        kind=kind,
        client=CLAUDE_CODE,
        session_id=session,
        cwd=cwd,
        file_path=path,
        stop_hook_active=body.get("stop_hook_active") is True,
    )


def _claude_render(event: HookEvent, answer: HookAnswer) -> dict[str, Any]:
    """Claude Code's JSON output. A free edit answers {}, never permissionDecision "allow":
    "allow" skips the person's own permission prompt."""
    name = _CLAUDE_NAMES[event.kind]
    if event.kind == "before_edit" and answer.deny:
        return {
            "hookSpecificOutput": {
                "hookEventName": name,
                "permissionDecision": "deny",
                "permissionDecisionReason": answer.deny,
            }
        }
    if event.kind in ("after_edit", "session_start") and answer.context:
        return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": answer.context}}
    if event.kind == "stop" and answer.block:
        return {"decision": "block", "reason": answer.block}
    return {}


def _claude_notice(text: str) -> dict[str, Any]:
    """A warning Claude Code shows the person; it decides nothing."""
    return {"systemMessage": text}


CLIENTS: dict[str, Client] = {
    "claude-code": Client(parse=_claude_parse, render=_claude_render, notice=_claude_notice),
}


# --- The door ---------------------------------------------------------------------------------


@csrf_exempt
async def hook_door(request: HttpRequest, room_id: str, client: str) -> HttpResponse:
    if request.method != "POST":
        return JsonResponse(
            {"message": "Use POST.", "code": "method_not_allowed", "extra": {}}, status=405
        )
    adapter = CLIENTS.get(client)
    event: HookEvent | None = None
    notice: str | None = None
    answer: dict[str, Any] = {}
    try:
        if adapter is None:
            raise HookRefusedError(UNKNOWN_CLIENT.format(known=", ".join(CLIENTS)))
        body = _body(request)
        if body is None:
            raise HookRefusedError(BAD_BODY)
        event = adapter.parse(body)
        if event is not None:
            event = replace(event, root=_root(request))
            answer = await _answer(request, room_id, adapter, event)
    except HookRefusedError as exc:
        _no_decision(client, room_id, exc.reason)
        notice = exc.notice
    except DomainError as exc:
        _no_decision(client, room_id, f"{exc.code}: {exc.message}")
        notice = hooks.NOTICE_REFUSED.format(message=hooks.plain_line(exc.message, 400))
    except connections_store.StoreDown:
        _no_decision(client, room_id, STORE_AWAY)
        # Said only when a session starts: the mark that says it once lives in the store.
        if adapter is not None and event is not None and event.kind == "session_start":
            answer = adapter.notice(hooks.NOTICE_STORE)
    except Exception:
        log.warning(
            "hook %s for room %r: no decision: %s", client[:32], room_id, FAILED, exc_info=True
        )
    if notice and adapter is not None and event is not None:
        answer = await _noticed(adapter, client, event, notice)
    return JsonResponse(answer, json_dumps_params={"ensure_ascii": False})


async def _answer(
    request: HttpRequest, room_id: str, adapter: Client, event: HookEvent
) -> dict[str, Any]:
    admitted = await caller_admit(
        bearer_from_header(request.headers.get("Authorization")), charge=True
    )
    if admitted is None:
        raise HookRefusedError(NOT_ADMITTED, hooks.NOTICE_KEY)
    answer = await hooks.hook_run(
        admitted.caller,
        admitted.charge,
        room_id=room_id,
        named_agent=request.headers.get(AGENT_HEADER),
        event=event,
    )
    return adapter.render(event, answer)


async def _noticed(adapter: Client, client: str, event: HookEvent, text: str) -> dict[str, Any]:
    """The notice as the client shows it, the first time this session is told; else no
    decision. A store that does not answer says so at a session start only."""
    digest = hashlib.sha256(f"{client}\0{event.session_id}".encode()).hexdigest()
    try:
        due = await bearers_store.hook_notice_due(digest, seconds=NOTICE_SECONDS)
    except connections_store.StoreDown:
        due = event.kind == "session_start"
    return adapter.notice(text) if due else {}


def _root(request: HttpRequest) -> str | None:
    given = request.headers.get(ROOT_HEADER)
    return urllib.parse.unquote(given) if given else None


def _body(request: HttpRequest) -> dict[str, Any] | None:
    """The JSON object posted, or None: a body over MAX_BODY_BYTES is refused by its
    Content-Length before it is read, and read no further than one byte past the limit."""
    try:
        declared = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        return None
    if declared > MAX_BODY_BYTES:
        return None
    raw = request.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        return None
    try:
        found = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


def _no_decision(client: str, room_id: str, reason: str) -> None:
    log.warning("hook %s for room %r: no decision: %s", client[:32], room_id, reason)
