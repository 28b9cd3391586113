"""The one-line setup per client (`curl -fsS '<host>/connect/<client>?room=…' | sh`): the
POSIX sh script that writes a client's MCP configuration and its coordination hooks into
a checkout, and the equivalent one-liners the Connect page prints.

The script holds no secret: the server's URL, the room id and the agent's name only. Every
file it writes names the key's environment variable (ROOMSERVICE_KEY) in that client's own
syntax, never the key, so each can be committed. It merges into a file that exists (with
python3) instead of replacing it, and refuses, saying what to add by hand, when it cannot.
Written against each client's documentation as read in December 2026
(tests/fixtures/clients/<client>/SOURCE.md names the page and version)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings

from rooms import names, profiles, schemas
from rooms.errors import DomainError

Client = Literal["claude-code", "codex", "cursor", "vscode"]
CLIENTS: tuple[Client, ...] = ("claude-code", "codex", "cursor", "vscode")
CLIENT_NAMES: dict[Client, str] = {
    "claude-code": "Claude Code",
    "codex": "Codex",
    "cursor": "Cursor",
    "vscode": "VS Code",
}
KEY_ENV = "ROOMSERVICE_KEY"
SERVER_NAME = "roomservice"
AGENT_MAX = 128

SETUP_ROOM_INVALID = "room: a room id is {rule}. Give ?room=<roomId>."
SETUP_AGENT_INVALID = "agent: {problem}"
SETUP_AGENT_TOO_LONG = "agent: at most 128 characters."
SETUP_AGENT_PLACEHOLDER = (
    "agent: {agent} is the page's placeholder. Put the agent's own name (its agentId, "
    "e.g. backend) in the command."
)
SETUP_AGENT_PERSON = "agent: person:… names belong to people, not agents. Give the agent's name."
SETUP_TOOLS_INVALID = "tools: one of {profiles}."


def client_parse(given: str) -> Client | None:
    """The client named `given`, or None."""
    return next((client for client in CLIENTS if client == given), None)


class SetupRequestError(ValueError):
    """A setup request the script cannot be written for; the message says what to give."""


@dataclass(frozen=True, slots=True)
class SetupRequest:
    room_id: str
    agent: str
    tools: profiles.Profile


def setup_request_parse(room: str, agent: str, tools: str) -> SetupRequest:
    """The room id, the agent and the profile of a setup request, checked by the rules the
    service uses for them (schemas.room_id_valid, names.name_problem, profiles). Nothing is
    looked up: the answer is the same whether the room exists or not."""
    if not schemas.room_id_valid(room):
        raise SetupRequestError(SETUP_ROOM_INVALID.format(rule=schemas.ROOM_ID_RULE))
    if agent:
        if len(agent) > AGENT_MAX:
            raise SetupRequestError(SETUP_AGENT_TOO_LONG)
        if agent.startswith("<") and agent.endswith(">"):
            raise SetupRequestError(SETUP_AGENT_PLACEHOLDER.format(agent=agent))
        problem = names.name_problem(agent, "agent")
        if problem is not None:
            raise SetupRequestError(SETUP_AGENT_INVALID.format(problem=problem.message))
        if names.is_person_name(agent):
            raise SetupRequestError(SETUP_AGENT_PERSON)
    try:
        profile = profiles.profile_parse(tools)
    except DomainError:
        raise SetupRequestError(
            SETUP_TOOLS_INVALID.format(profiles=", ".join(profiles.PROFILES))
        ) from None
    return SetupRequest(room_id=room, agent=agent, tools=profile)


# --- what each client's files hold ------------------------------------------------------


def mcp_entry(client: Client, mcp_url: str) -> dict[str, Any]:
    """The server's entry in the client's MCP configuration, the key named in the client's
    own variable syntax."""
    if client == "claude-code":  # .mcp.json: ${VAR} in url and headers
        return {
            "type": "http",
            "url": mcp_url,
            "headers": {"Authorization": f"Bearer ${{{KEY_ENV}}}"},
        }
    if client == "cursor":  # .cursor/mcp.json: ${env:NAME}
        return {"url": mcp_url, "headers": {"Authorization": f"Bearer ${{env:{KEY_ENV}}}"}}
    if client == "vscode":  # .vscode/mcp.json: ${env:NAME}, a predefined variable
        return {
            "type": "http",
            "url": mcp_url,
            "headers": {"Authorization": f"Bearer ${{env:{KEY_ENV}}}"},
        }
    return {"url": mcp_url, "bearer_token_env_var": KEY_ENV}  # codex: config.toml


def _guard(mode: str) -> str:
    return f"sh hooks/roomservice-guard {mode}"


# The guard script's hooks, as docs/hooks.md gives them ("Cursor", "Codex").
CURSOR_HOOKS: dict[str, Any] = {
    "version": 1,
    "hooks": {
        "sessionStart": [{"command": _guard("cursor-start")}],
        "preToolUse": [
            {"matcher": "Write|Edit|StrReplace|Delete", "command": _guard("cursor-edit")}
        ],
        "afterFileEdit": [{"command": _guard("cursor-after-edit")}],
        "stop": [{"command": _guard("cursor-wait"), "timeout": 180, "loop_limit": 5}],
    },
}
CODEX_HOOKS: dict[str, Any] = {
    "hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": _guard("unread")}]}],
        "PreToolUse": [
            {
                "matcher": "apply_patch",
                "hooks": [{"type": "command", "command": _guard("codex-edit")}],
            }
        ],
        "PostToolUse": [
            {
                "matcher": "apply_patch",
                "hooks": [{"type": "command", "command": _guard("codex-post-edit")}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": _guard("codex-wait"), "timeout": 180}]}],
    },
}


def one_liner(client: Client, mcp_url: str) -> str:
    """The client's own command that adds the MCP server alone (no hooks), the key named,
    not given: single quotes keep the shell from expanding it into the file."""
    if client == "claude-code":
        return (
            f"claude mcp add --transport http --scope project {SERVER_NAME} "
            f"{shlex.quote(mcp_url)} --header 'Authorization: Bearer ${{{KEY_ENV}}}'"
        )
    if client == "codex":
        return (
            f"codex mcp add {SERVER_NAME} --url {shlex.quote(mcp_url)} "
            f"--bearer-token-env-var {KEY_ENV}"
        )
    if client == "vscode":
        entry = {"name": SERVER_NAME, **mcp_entry("vscode", mcp_url)}
        return f"code --add-mcp {shlex.quote(json.dumps(entry, separators=(',', ':')))}"
    return ""  # Cursor has no command that adds a server


# --- the script ---------------------------------------------------------------------------

_HEAD = r"""#!/bin/sh
# Roomservice setup for {client_name}, served by {base}/connect/{client}.
# Run it at the top of a git checkout. It holds no secret: the files it writes name the key's
# environment variable ({key_env}), never the key, and it never prints the key.
set -eu
ROOMSERVICE_URL={base_q}
MCP_URL={mcp_q}
ROOM={room_q}
AGENT={agent_q}

say() {{ printf 'roomservice-setup: %s\n' "$*"; }}
fail() {{ printf 'roomservice-setup: %s\n' "$*" >&2; exit 1; }}

top=$(git rev-parse --show-toplevel 2>/dev/null) ||
  fail "not in a git checkout: run this at the top of the repository the agent works in."
cd "$top"
PYTHON=$(command -v python3 || true)

# merge KIND FILE FRAGMENT [REPLACE]: FRAGMENT into FILE (json, or toml for Codex), the
# REPLACE path (a.b) replaced whole; python3 merges, checks and writes nothing it cannot.
merge() {{
  if [ -n "$PYTHON" ]; then
    RS_KIND=$1 RS_FILE=$2 RS_FRAGMENT=$3 RS_REPLACE=${{4:-}} \
      "$PYTHON" - <<'ROOMSERVICE_PY_EOF' || exit 1
{merger}
ROOMSERVICE_PY_EOF
  elif [ ! -e "$2" ]; then
    mkdir -p "$(dirname "$2")"
    printf '%s\n' "$3" > "$2"
    say "$2: written."
  else
    fail "$2: python3 is not here to merge into it safely; nothing was written." \
      "Add this to it by hand, then run again:
$3"
  fi
}}
"""

# The merger python3 runs. It reads the file, merges the fragment, checks that the key's
# value would not be in what it writes, and replaces the file only when it changes.
_MERGER = r"""import json, os, sys
kind, path = os.environ["RS_KIND"], os.environ["RS_FILE"]
fragment, replace = os.environ["RS_FRAGMENT"], os.environ["RS_REPLACE"]
key = os.environ.get("ROOMSERVICE_KEY", "")

def fail(message):
    sys.stderr.write("roomservice-setup: %s: %s\n" % (path, message))
    sys.exit(1)

def by_hand(why):
    fail("%s; nothing was written. Add this to it by hand, then run again:\n%s" % (why, fragment))

def merge(old, new, at, replace):
    if replace and at == replace:
        return new
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(old)
        for name, value in new.items():
            where = at + "." + name if at else name
            out[name] = merge(old[name], value, where, replace) if name in old else value
        return out
    if isinstance(old, list) and isinstance(new, list):
        return old + [item for item in new if item not in old]
    if isinstance(old, (dict, list)) or isinstance(new, (dict, list)):
        by_hand("%s holds a %s where a %s belongs"
                % (at or "the file", type(old).__name__, type(new).__name__))
    return new

old = None
if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
        old = f.read()
if kind == "json":
    data = {}
    if old is not None and old.strip():
        try:
            data = json.loads(old)
        except ValueError:
            by_hand("it is not plain JSON (comments or trailing commas?)")
        if not isinstance(data, dict):
            by_hand("it does not hold a JSON object")
    merged = merge(data, json.loads(fragment), "", replace)
    if merged == data and old is not None:
        print("roomservice-setup: %s: unchanged." % path)
        sys.exit(0)
    text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
else:
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            tomllib = None
    want = json.loads(os.environ["RS_ENTRY"])
    block = fragment
    data = {}
    if old is not None and old.strip():
        if tomllib is None:
            by_hand("this python3 cannot read TOML (3.11 or later can)")
        try:
            data = tomllib.loads(old)
        except Exception:
            by_hand("it is not valid TOML")
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        by_hand("mcp_servers is not a table")
    if servers.get("roomservice") == want:
        print("roomservice-setup: %s: unchanged." % path)
        sys.exit(0)
    if "roomservice" in servers:
        by_hand("it has another [mcp_servers.roomservice]: replace that table with this one")
    text = (old or "")
    if text and not text.endswith("\n"):
        text += "\n"
    text += ("\n" if text.strip() else "") + block + "\n"
    back = {"roomservice": want}
    if tomllib is not None:
        back = tomllib.loads(text).get("mcp_servers", {})
    if back.get("roomservice") != want:
        by_hand("adding the table would not read back as written")
if len(key) >= 8 and key in text:
    fail("it would hold the key itself, which is in it in clear already. Move the key out of "
         "it (into the environment variable ROOMSERVICE_KEY), then run again; nothing was written.")
folder = os.path.dirname(path)
if folder:
    os.makedirs(folder, exist_ok=True)
temporary = path + ".roomservice-setup.tmp"
with open(temporary, "w", encoding="utf-8") as f:
    f.write(text)
if old is not None:
    os.chmod(temporary, os.stat(path).st_mode & 0o777)
os.replace(temporary, path)
print("roomservice-setup: %s: %s." % (path, "written" if old is None else "merged"))"""

_GUARD = r"""
# The guard script (docs/hooks.md), its settings in git config (never the key), and the
# git pre-commit hook that refuses a commit of a file another agent leases.
mkdir -p hooks
cat > hooks/.roomservice-guard.new <<'ROOMSERVICE_GUARD_EOF'
@GUARD@ROOMSERVICE_GUARD_EOF
if [ -f hooks/roomservice-guard ] &&
  cmp -s hooks/.roomservice-guard.new hooks/roomservice-guard; then
  rm -f hooks/.roomservice-guard.new
  say "hooks/roomservice-guard: unchanged."
elif [ -f hooks/roomservice-guard ] && ! grep -q 'roomservice-guard' hooks/roomservice-guard; then
  rm -f hooks/.roomservice-guard.new
  fail "hooks/roomservice-guard is another program: move it away, then run again."
else
  mv hooks/.roomservice-guard.new hooks/roomservice-guard
  chmod +x hooks/roomservice-guard
  say "hooks/roomservice-guard: written."
fi
git config roomservice.url "$ROOMSERVICE_URL"
git config roomservice.room "$ROOM"
[ -z "$AGENT" ] || git config roomservice.agent "$AGENT"
hooks_dir=$(git rev-parse --git-path hooks)
mkdir -p "$hooks_dir"
pre_commit=$hooks_dir/pre-commit
if [ ! -e "$pre_commit" ] || { ! cmp -s hooks/roomservice-guard "$pre_commit" &&
  grep -q 'roomservice-guard' "$pre_commit"; }; then
  cp hooks/roomservice-guard "$pre_commit" && chmod +x "$pre_commit"
  say "git pre-commit hook: installed."
elif cmp -s hooks/roomservice-guard "$pre_commit"; then
  say "git pre-commit hook: unchanged."
else
  say "git pre-commit hook: yours is kept; to refuse commits of leased files," \
    "add to it: sh hooks/roomservice-guard pre-commit"
fi
"""

_TAIL = r"""
[ -n "$AGENT" ] ||
  say "no agent given: set the agent's name with {agent_hint} before starting {client_name}."
if [ -z "${{ROOMSERVICE_KEY:-}}" ]; then
  say "ROOMSERVICE_KEY is not set in this shell. {client_name} reads the key from it:" \
    "export ROOMSERVICE_KEY=<your key> before starting {client_name}" \
    "(not in a file of the repository)."
fi
say "done. {after}"
"""


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2)


def setup_script(client: Client, request: SetupRequest, base: str, claude_hooks: str) -> str:
    """The sh script that sets `client` up for `request` against the server at `base`.
    `claude_hooks` is the Connect page's `.claude/settings.json` hooks block for the room."""
    mcp_url = f"{base}/mcp?tools={request.tools}"
    entry = mcp_entry(client, mcp_url)
    head = _HEAD.format(
        client=client,
        client_name=CLIENT_NAMES[client],
        base=base,
        key_env=KEY_ENV,
        base_q=shlex.quote(base),
        mcp_q=shlex.quote(mcp_url),
        room_q=shlex.quote(request.room_id),
        agent_q=shlex.quote(request.agent),
        merger=_MERGER,
    )
    steps: list[str] = []
    if client == "claude-code":
        steps.append(_merge("json", ".mcp.json", {"mcpServers": {SERVER_NAME: entry}}))
        steps.append(_merge("json", ".claude/settings.json", json.loads(claude_hooks)))
        agent_hint = "export ROOMSERVICE_AGENT=<name>"
        after = (
            "Start Claude Code here with ROOMSERVICE_KEY and ROOMSERVICE_AGENT in its "
            "environment"
            # $AGENT expands when the script runs: the name never becomes shell text.
            + (" (export ROOMSERVICE_AGENT='$AGENT')" if request.agent else "")
            + "; approve the project's roomservice server when it asks."
        )
    elif client == "codex":
        block = "\n".join(
            [f"[mcp_servers.{SERVER_NAME}]"]
            + [f"{name} = {json.dumps(value)}" for name, value in entry.items()]
        )
        steps.append(f"RS_ENTRY={shlex.quote(json.dumps(entry))}; export RS_ENTRY")
        steps.append(
            _merge("toml", '"${CODEX_HOME:-$HOME/.codex}/config.toml"', block, quoted=True)
        )
        steps.append(_GUARD.replace("@GUARD@", _guard_text()))
        steps.append(_merge("json", ".codex/hooks.json", CODEX_HOOKS))
        agent_hint = "git config roomservice.agent <name>"
        after = (
            "Start Codex here with ROOMSERVICE_KEY in its environment, and trust the "
            "project's hooks when it asks (older Codex: [features] codex_hooks = true)."
        )
    elif client == "cursor":
        steps.append(_merge("json", ".cursor/mcp.json", {"mcpServers": {SERVER_NAME: entry}}))
        steps.append(_GUARD.replace("@GUARD@", _guard_text()))
        steps.append(_merge("json", ".cursor/hooks.json", CURSOR_HOOKS))
        agent_hint = "git config roomservice.agent <name>"
        after = "Start Cursor from a shell with ROOMSERVICE_KEY in its environment."
    else:
        steps.append(_merge("json", ".vscode/mcp.json", {"servers": {SERVER_NAME: entry}}))
        steps.append(_GUARD.replace("@GUARD@", _guard_text()))
        agent_hint = "git config roomservice.agent <name>"
        after = "Start VS Code from a shell with ROOMSERVICE_KEY in its environment (code .)."
    tail = _TAIL.format(client_name=CLIENT_NAMES[client], agent_hint=agent_hint, after=after)
    return head + "\n".join(steps) + tail


def _merge(kind: str, path: str, fragment: dict[str, Any] | str, *, quoted: bool = False) -> str:
    """The script's line that merges `fragment` into `path` (a path the shell expands when
    `quoted`, i.e. already written as shell text); the server's entry is replaced whole."""
    text = fragment if isinstance(fragment, str) else _json(fragment)
    replace = ""
    if isinstance(fragment, dict):
        top = next(iter(fragment))
        if top in ("mcpServers", "servers"):
            replace = f"{top}.{SERVER_NAME}"
    where = path if quoted else shlex.quote(path)
    line = f"merge {kind} {where} {shlex.quote(text)}"
    return line + (f" {shlex.quote(replace)}" if replace else "")


def _guard_text() -> str:
    text = (settings.BASE_DIR / "hooks" / "roomservice-guard").read_text(encoding="utf-8")
    return text if text.endswith("\n") else text + "\n"
