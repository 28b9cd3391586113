"""The one-line setup per client (`curl -fsS '<host>/connect/<client>?room=…' | sh`): the
POSIX sh script that writes a client's MCP configuration and its coordination hooks into
a checkout, and the equivalent one-liners the Connect page prints.

One module on purpose: the script it serves is one program, and its parts (the head, the
checks, the merger, each client's files, the tail) are read here in the order it runs them.

The script holds no secret: the server's URL, the room id and the agent's name only. Every
file it writes names the key's environment variable (ROOMSERVICE_KEY) in that client's own
syntax, never the key. It merges into a file that exists (with python3) instead of
replacing it, and refuses, saying what to add by hand, when it cannot.

One checkout or worktree per agent: the agent's name is kept where that checkout's hooks
read it — this worktree's own git config (roomservice.agent, with roomservice.worktree
naming the checkout, since `git worktree add` copies a worktree's config to the new one)
and, for Claude Code, the hooks in `.claude/settings.local.json` (per person and checkout,
not committed). A checkout that already acts as another agent is refused, saying how to
make a worktree for this one.

A checkout is the repository's content, so anyone's: the script never reads or writes
through a symbolic link inside it (a committed `.mcp.json -> ~/.bashrc` would otherwise
have it overwrite a file outside), and writes outside it only Codex's own config.toml.
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
SETUP_AGENT_HEADER = (
    "agent: Claude Code sends the agent's name in an HTTP header, which carries ASCII only: "
    "give a name of ASCII letters, digits and punctuation."
)
SETUP_TOOLS_INVALID = "tools: one of {profiles}."
SETUP_CLIENT_UNKNOWN = (
    "{client}: not a client this server sets up. Use one of: {clients} "
    "(/connect/<client>?room=<roomId>&agent=<name>)."
)
# Where the setup puts the checkout's top in Claude Code's hooks (the script fills it in).
ROOT_PLACEHOLDER = "@ROOMSERVICE_ROOT@"


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


def setup_request_parse(client: Client, room: str, agent: str, tools: str) -> SetupRequest:
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
        if client == "claude-code" and not (agent.isascii() and agent.isprintable()):
            raise SetupRequestError(SETUP_AGENT_HEADER)
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


def _codex_guard(mode: str) -> str:
    """A Codex hook's command, kept in the person's own $CODEX_HOME/hooks.json: Codex 0.171
    does not steadily read a linked worktree's project hooks (openai/codex#27133, #23996),
    while the person's own are read in every checkout. So the command runs the guard only in
    a checkout the person set up (its git config names the server, which no repository can
    commit), and passes over every other folder."""
    return (
        'top=$(git rev-parse --show-toplevel 2>/dev/null) && [ -f "$top/hooks/roomservice-guard" ]'
        ' && [ -n "$(git config --get roomservice.url)" ] || exit 0; '
        f'exec sh "$top/hooks/roomservice-guard" {mode}'
    )


CODEX_HOOKS: dict[str, Any] = {
    "hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": _codex_guard("codex-start")}]}],
        "PreToolUse": [
            {
                "matcher": "apply_patch",
                "hooks": [{"type": "command", "command": _codex_guard("codex-edit")}],
            }
        ],
        "PostToolUse": [
            {
                "matcher": "apply_patch",
                "hooks": [{"type": "command", "command": _codex_guard("codex-post-edit")}],
            }
        ],
        "Stop": [
            {"hooks": [{"type": "command", "command": _codex_guard("codex-wait"), "timeout": 180}]}
        ],
    },
}


def refusal_script(message: str) -> str:
    """What a refused setup request answers: a script that says why on stderr and fails, so
    `curl -fsS … | sh` shows the reason and exits 1 (an HTTP error would leave sh nothing to
    read, and the pipeline would succeed). Two lines a browser shows readably too."""
    shown = "".join(c if c.isprintable() else "?" for c in f"roomservice-setup: {message}")
    return f"printf '%s\\n' {shlex.quote(shown)} >&2\nexit 1\n"


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
# Run it at the top of a git checkout, one checkout or worktree per agent. It holds no
# secret: the files it writes name the key's environment variable ({key_env}), never the key,
# and it never prints the key.
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

# inside PATH (from the top): refuses when PATH, or a folder on the way to it, is a symbolic
# link. The checkout is the repository's content: a committed link would have this script
# read or write outside it.
inside() {{
  at=$1
  while :; do
    if [ -L "$at" ]; then
      fail "$at is a symbolic link (to $(readlink "$at" | tr -d '\000-\037\177')):" \
        "this setup never reads or writes through one, so nothing was written." \
        "Make it a plain file or folder of the checkout, then run this again."
    fi
    case $at in */*) at=${{at%/*}} ;; *) return 0 ;; esac
  done
}}
# checked PATH: `inside` for a path in the checkout; one outside it (Codex's own config, the
# repository's git folder seen from a linked worktree) is the person's, not the checkout's.
checked() {{
  case $1 in
    "$top"/*) inside "${{1#"$top"/}}" ;;
    /*) ;;
    *) inside "$1" ;;
  esac
}}
# The checkout's top as Claude Code's hooks name it (python3 percent-encodes any path).
case $top in *[!A-Za-z0-9/._-]*) root_plain= ;; *) root_plain=$top ;; esac

# The agent this checkout acts as: this worktree's own git config (roomservice.worktree names
# the checkout that wrote it: `git worktree add` copies a worktree's config into the new
# one), else an older setup's roomservice.agent in the repository's config (its main
# checkout only), else the agent Claude Code's hooks here name.
main_checkout=
[ "$(git rev-parse --git-dir)" != "$(git rev-parse --git-common-dir)" ] || main_checkout=1
acting=
undo=
if [ "$(git config --bool --get extensions.worktreeConfig || true)" = true ] &&
  [ "$(git config --worktree --get roomservice.worktree || true)" = "$top" ]; then
  acting=$(git config --worktree --get roomservice.agent || true)
  undo="git config --worktree --unset roomservice.agent"
fi
if [ -z "$acting" ] && [ -n "$main_checkout" ]; then
  acting=$(git config --local --get roomservice.agent || true)
  undo="git config --unset roomservice.agent"
fi
inside .claude/settings.local.json
claude_agent=
if [ -f .claude/settings.local.json ]; then
  claude_agent=$(sed -n 's/.*"X-Roomservice-Agent": *"\([^"$]*\)".*/\1/p' \
    .claude/settings.local.json | head -n 1)
fi
if [ -n "$claude_agent" ]; then
  if [ -z "$acting" ]; then
    acting=$claude_agent
    undo="remove the roomservice hooks from .claude/settings.local.json"
  else
    undo="$undo, and remove the roomservice hooks from .claude/settings.local.json"
  fi
fi
if [ -n "$AGENT" ] && [ -n "$acting" ] && [ "$acting" != "$AGENT" ]; then
  case $AGENT in *[!A-Za-z0-9._-]*) folder='<folder>' ;; *) folder=$AGENT ;; esac
  fail "this checkout already acts as the agent $acting, and one checkout or worktree" \
    "serves one agent. For $AGENT, make a worktree beside it and run this command there:
  git worktree add ../$folder && cd ../$folder
To make this checkout act as $AGENT instead: $undo, then run this command again."
fi

# record: this worktree's settings in its own git config (never the key); the guard script
# and the next setup read them.
record() {{
  git config extensions.worktreeConfig true
  git config --worktree roomservice.url "$ROOMSERVICE_URL"
  git config --worktree roomservice.room "$ROOM"
  [ -n "$AGENT" ] || return 0
  git config --worktree roomservice.agent "$AGENT"
  git config --worktree roomservice.worktree "$top"
  if [ -n "$main_checkout" ]; then
    git config --local --unset-all roomservice.agent 2>/dev/null || true
  fi
  say "this checkout acts as the agent $AGENT (git config --worktree roomservice.agent)."
}}

# merge KIND FILE FRAGMENT [REPLACE] [OURS]: FRAGMENT into FILE (json, or toml for Codex),
# the REPLACE path (a.b) replaced whole, and hook groups whose command or URL holds OURS
# replaced; python3 merges, checks and writes nothing it cannot.
merge() {{
  checked "$2"
  if [ -n "$PYTHON" ]; then
    RS_KIND=$1 RS_FILE=$2 RS_FRAGMENT=$3 RS_REPLACE=${{4:-}} RS_OURS=${{5:-}} \
      "$PYTHON" - <<'ROOMSERVICE_PY_EOF' || exit 1
{merger}
ROOMSERVICE_PY_EOF
  elif [ ! -e "$2" ]; then
    mkdir -p "$(dirname "$2")"
    printf '%s\n' "$3" | sed "s|@ROOMSERVICE_ROOT@|$root_plain|g" > "$2"
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
_MERGER = r"""import json, os, sys, tempfile, urllib.parse
kind, path = os.environ["RS_KIND"], os.environ["RS_FILE"]
fragment, replace = os.environ["RS_FRAGMENT"], os.environ["RS_REPLACE"]
ours = os.environ["RS_OURS"]
fragment = fragment.replace("@ROOMSERVICE_ROOT@", urllib.parse.quote(os.getcwd(), safe="/"))
key = os.environ.get("ROOMSERVICE_KEY", "")

def fail(message):
    sys.stderr.write("roomservice-setup: %s: %s\n" % (path, message))
    sys.exit(1)

def by_hand(why):
    fail("%s; nothing was written. Add this to it by hand, then run again:\n%s" % (why, fragment))

# Never through a symbolic link inside the checkout (the sh side checked too).
at = path
while at and not os.path.isabs(path):
    if os.path.islink(at):
        fail("%s is a symbolic link: this setup never reads or writes through one; "
             "nothing was written." % at)
    at = os.path.dirname(at)

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

def ours_dropped(data):
    # An earlier setup's hook groups (another room, another server) give way to these.
    hooks = data.get("hooks")
    if not ours or not isinstance(hooks, dict):
        return data
    def mine(group):
        return isinstance(group, dict) and any(
            isinstance(h, dict) and ours in str(h.get("url", "")) + str(h.get("command", ""))
            for h in group.get("hooks", []) if isinstance(group.get("hooks"), list))
    kept = {event: [g for g in groups if not mine(g)] if isinstance(groups, list) else groups
            for event, groups in hooks.items()}
    return dict(data, hooks=kept)

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
    merged = merge(ours_dropped(data), json.loads(fragment), "", replace)
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
# A new name of its own (O_EXCL): a name chosen here could be a link the repository holds.
handle, temporary = tempfile.mkstemp(dir=folder or ".", prefix=".roomservice-setup.")
with os.fdopen(handle, "w", encoding="utf-8") as f:
    f.write(text)
mask = os.umask(0)
os.umask(mask)
os.chmod(temporary, os.stat(path).st_mode & 0o777 if old is not None else 0o666 & ~mask)
os.replace(temporary, path)
print("roomservice-setup: %s: %s." % (path, "written" if old is None else "merged"))"""

_GUARD = r"""
# The guard script (docs/hooks.md) and the git pre-commit hook that refuses a commit of a
# file another agent leases; their settings are this worktree's git config (record).
inside hooks/roomservice-guard
inside hooks/.roomservice-guard.new
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
hooks_dir=$(git rev-parse --git-path hooks)
pre_commit=$hooks_dir/pre-commit
checked "$pre_commit"
mkdir -p "$hooks_dir"
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

# Claude Code reads its hooks from every settings file: hooks an older setup wrote into the
# shared .claude/settings.json would run beside these, without the agent's name.
_CLAUDE_LOCAL = r"""
inside .claude/settings.json
if [ -f .claude/settings.json ] && grep -q '/hooks/claude-code' .claude/settings.json; then
  say "note: .claude/settings.json holds Roomservice hooks of an older setup, which run" \
    "beside these without the agent's name: remove them from it."
fi
if ! git check-ignore -q .claude/settings.local.json; then
  exclude=$(git rev-parse --git-path info/exclude)
  checked "$exclude"
  mkdir -p "$(dirname "$exclude")"
  printf '%s\n' '/.claude/settings.local.json' >> "$exclude"
  say "$exclude: .claude/settings.local.json is this checkout's own (not committed)."
fi
"""

_CODEX_PROJECT = r"""
inside .codex/hooks.json
if [ -f .codex/hooks.json ] && grep -q 'roomservice-guard' .codex/hooks.json; then
  say "note: .codex/hooks.json holds Roomservice hooks of an older setup, which run beside" \
    "those in your own Codex hooks.json: remove them from it."
fi
"""

_TAIL = r"""
record
[ -n "$AGENT" ] ||
  say "no agent given: run this again with &agent=<name> in its URL, or {client_name}'s" \
    "hooks cannot act (a key bound to one agent needs none)."
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
    `claude_hooks` is `.claude/settings.local.json`'s hooks block for the room and agent,
    the checkout's top left as ROOT_PLACEHOLDER (the script fills it in)."""
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
        steps.append(
            _merge(
                "json",
                ".claude/settings.local.json",
                json.loads(claude_hooks),
                ours="/hooks/claude-code",
            )
        )
        steps.append(_CLAUDE_LOCAL)
        after = (
            "Start Claude Code here with ROOMSERVICE_KEY in its environment; approve the "
            "project's roomservice server when it asks."
        )
    elif client == "codex":
        block = "\n".join(
            [f"[mcp_servers.{SERVER_NAME}]"]
            + [f"{name} = {json.dumps(value)}" for name, value in entry.items()]
        )
        steps.append(_CODEX_PROJECT)
        steps.append(f"RS_ENTRY={shlex.quote(json.dumps(entry))}; export RS_ENTRY")
        steps.append(
            _merge("toml", '"${CODEX_HOME:-$HOME/.codex}/config.toml"', block, quoted=True)
        )
        steps.append(_GUARD.replace("@GUARD@", _guard_text()))
        steps.append(
            _merge(
                "json",
                '"${CODEX_HOME:-$HOME/.codex}/hooks.json"',
                CODEX_HOOKS,
                quoted=True,
                ours="roomservice-guard",
            )
        )
        after = (
            "Start Codex here with ROOMSERVICE_KEY in its environment, and trust the "
            "roomservice hooks when it asks (/hooks; older Codex: [features] codex_hooks = "
            "true)."
        )
    elif client == "cursor":
        steps.append(_merge("json", ".cursor/mcp.json", {"mcpServers": {SERVER_NAME: entry}}))
        steps.append(_GUARD.replace("@GUARD@", _guard_text()))
        steps.append(_merge("json", ".cursor/hooks.json", CURSOR_HOOKS))
        after = "Start Cursor from a shell with ROOMSERVICE_KEY in its environment."
    else:
        steps.append(_merge("json", ".vscode/mcp.json", {"servers": {SERVER_NAME: entry}}))
        steps.append(_GUARD.replace("@GUARD@", _guard_text()))
        after = "Start VS Code from a shell with ROOMSERVICE_KEY in its environment (code .)."
    tail = _TAIL.format(client_name=CLIENT_NAMES[client], after=after)
    return head + "\n".join(steps) + tail


def _merge(
    kind: str,
    path: str,
    fragment: dict[str, Any] | str,
    *,
    quoted: bool = False,
    ours: str = "",
) -> str:
    """The script's line that merges `fragment` into `path` (a path the shell expands when
    `quoted`, i.e. already written as shell text); the server's entry is replaced whole, and
    so are the hook groups that hold `ours`."""
    text = fragment if isinstance(fragment, str) else _json(fragment)
    replace = ""
    if isinstance(fragment, dict):
        top = next(iter(fragment))
        if top in ("mcpServers", "servers"):
            replace = f"{top}.{SERVER_NAME}"
    where = path if quoted else shlex.quote(path)
    line = f"merge {kind} {where} {shlex.quote(text)}"
    if replace or ours:
        line += f" {shlex.quote(replace)}"
    return line + (f" {shlex.quote(ours)}" if ours else "")


def _guard_text() -> str:
    text = (settings.BASE_DIR / "hooks" / "roomservice-guard").read_text(encoding="utf-8")
    return text if text.endswith("\n") else text + "\n"
