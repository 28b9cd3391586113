"""hooks/roomservice-guard against the live service: leases enforced outside the server (a
git pre-commit hook in a temporary repository; Claude Code, Cursor and Codex pre-edit hooks
fed each client's JSON), and unread messages reported at session start and when the agent
would stop (Claude Code, Codex, Cursor), each read once."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, RunningServer
from tests.e2e.test_push import mcp

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
GUARD = Path(__file__).resolve().parents[2] / "hooks" / "roomservice-guard"


def run(
    args: list[str], cwd: Path, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    work.mkdir()
    for args in (
        ["git", "init", "-q"],
        ["git", "config", "user.email", "alice@example.com"],
        ["git", "config", "user.name", "alice"],
    ):
        subprocess.run(args, cwd=work, check=True)
    return work


def guard_env(server: RunningServer, room: str, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROOMSERVICE_", "GIT_"))}
    return {
        **env,
        "ROOMSERVICE_URL": server.url,
        "ROOMSERVICE_KEY": TEAM_A_SECRET,
        "ROOM": room,
        "AGENT": "alice",
        **more,
    }


def commit(repo: Path, env: dict[str, str], path: str) -> subprocess.CompletedProcess[str]:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{path} {os.urandom(4).hex()}\n")
    subprocess.run(["git", "add", path], cwd=repo, check=True, env=env)
    return run(["git", "commit", "-q", "-m", f"change {path}"], repo, env)


async def test_the_pre_commit_hook_refuses_a_path_another_agent_leases(
    server: RunningServer, repo: Path
) -> None:
    room = new_room_id("hooks")
    async with httpx.AsyncClient(timeout=30) as http:
        held = await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/**")
        await mcp(
            http,
            server.url,
            "lease_claim",
            roomId=room,
            agentId="bob",
            path="docs/**",
            mode="shared",
        )
        await mcp(http, server.url, "lease_claim", roomId=room, agentId="alice", path="lib/**")
    env = guard_env(server, room)
    installed = run(["sh", str(GUARD), "install"], repo, env)
    assert installed.returncode == 0, installed.stderr
    plain = {
        k: v
        for k, v in env.items()
        if k not in ("ROOMSERVICE_URL", "ROOMSERVICE_KEY", "ROOM", "AGENT")
    }  # git config has them

    refused = commit(repo, plain, "src/app.py")

    assert refused.returncode != 0
    assert "src/app.py is leased exclusively by bob" in refused.stderr
    assert (
        held["lease"]["expiresAt"] in refused.stderr and "agree with the holder" in refused.stderr
    )
    assert "ROOMSERVICE_ALLOW" not in refused.stderr  # the override is for people, not agents
    assert run(["git", "log", "--oneline"], repo, plain).stdout == ""  # nothing committed
    run(["git", "reset", "-q"], repo, plain)  # it stays staged: unstage it
    # Free paths, shared leases and the agent's own leases pass; the override is explicit.
    for path in ("README.md", "docs/guide.md", "lib/util.py"):
        done = commit(repo, plain, path)
        assert done.returncode == 0, done.stderr
    forced = commit(repo, {**plain, "ROOMSERVICE_ALLOW": "1"}, "src/app.py")
    assert forced.returncode == 0 and "letting it through anyway" in forced.stderr


async def test_the_claude_code_hook_refuses_an_edit_of_a_leased_file(
    server: RunningServer, repo: Path
) -> None:
    room = new_room_id("hooks-cc")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/*.py")
    env = guard_env(server, room)

    def edit(path: str) -> subprocess.CompletedProcess[str]:
        payload = {
            "session_id": "s1",
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(repo / path), "old_string": "a", "new_string": "b"},
        }
        return run(["sh", str(GUARD), "claude-code"], repo, env, stdin=json.dumps(payload))

    blocked = edit("src/app.py")
    assert blocked.returncode == 2  # Claude Code's "block this tool call"
    assert "src/app.py is leased exclusively by bob (src/*.py, until" in blocked.stderr
    assert edit("src/deep/app.py").returncode == 0  # * does not cross a /
    assert edit("README.md").returncode == 0


async def test_an_unconfigured_or_unreachable_guard_never_locks_anyone_out(
    server: RunningServer, repo: Path
) -> None:
    unconfigured = {k: v for k, v in os.environ.items() if not k.startswith("ROOMSERVICE_")}
    checked = run(["sh", str(GUARD), "check", "src/app.py"], repo, unconfigured)
    assert checked.returncode == 0 and "Roomservice hooks are off here" in checked.stderr

    away = guard_env(server, new_room_id("hooks"), ROOMSERVICE_URL="http://127.0.0.1:9")
    checked = run(["sh", str(GUARD), "check", "src/app.py"], repo, away)
    assert checked.returncode == 0 and "did not answer" in checked.stderr


# --- Messages: SessionStart / Stop hooks that tell an idle agent what is waiting for it

TRICKY_BODY = 'The schema moved: {"id": 1}, see "v2"\nthen run make migrate, C:\\tmp'


async def bob_tells_alice(
    server: RunningServer, room: str, body: str = TRICKY_BODY, **more: Any
) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=30) as http:
        for agent in ("alice", "bob"):
            await mcp(http, server.url, "heartbeat", roomId=room, agentId=agent)
        sent: dict[str, Any] = await mcp(
            http,
            server.url,
            "send_message",
            roomId=room,
            to="alice",
            body=body,
            **{"from": "bob"},
            **more,
        )
    assert sent["recipients"] == ["alice"]
    return sent


def stop_payload(active: bool = False) -> str:
    return json.dumps(
        {"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": active, "cwd": "."}
    )


async def test_the_session_start_hook_reports_unread_messages_once(
    server: RunningServer, repo: Path
) -> None:
    room = new_room_id("hooks-unread")
    env = guard_env(server, room)
    sent = await bob_tells_alice(server, room, subject="schema change", ackRequired=True)
    start = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})

    first = run(["sh", str(GUARD), "unread"], repo, env, stdin=start)

    assert first.returncode == 0, first.stderr
    assert "1 unread message for alice" in first.stdout
    assert f'From bob, subject "schema change" (messageId {sent["messageId"]})' in first.stdout
    assert TRICKY_BODY in first.stdout  # braces, quotes, a newline and a backslash, as sent
    assert f"answer with send_message (replyTo {sent['messageId']})" in first.stdout
    again = run(["sh", str(GUARD), "unread"], repo, env, stdin=start)
    assert again.returncode == 0 and again.stdout == ""  # the first run marked it read


async def test_the_claude_stop_hook_keeps_the_agent_going_until_its_messages_are_read(
    server: RunningServer, repo: Path
) -> None:
    room = new_room_id("hooks-stop")
    env = guard_env(server, room)
    stop = ["sh", str(GUARD), "claude-stop"]
    await bob_tells_alice(server, room, body="nothing yet")
    run(["sh", str(GUARD), "unread"], repo, env)  # read: the inbox is empty again
    assert run(stop, repo, env, stdin=stop_payload()).returncode == 0
    sent = await bob_tells_alice(server, room, body="please review src/api.py")

    held = run(stop, repo, env, stdin=stop_payload())

    assert held.returncode == 2  # Claude Code's "don't stop": stderr becomes the reason
    assert "please review src/api.py" in held.stderr and sent["messageId"] in held.stderr
    assert "acknowledgement" not in held.stderr  # no ack was asked for
    # Claude Code goes on with stop_hook_active: the messages are read, so it may stop now.
    assert run(stop, repo, env, stdin=stop_payload(active=True)).returncode == 0
    # Unless something new arrived meanwhile: new messages still hold it, once each.
    await bob_tells_alice(server, room, body="one more thing")
    again = run(stop, repo, env, stdin=stop_payload(active=True))
    assert again.returncode == 2 and "one more thing" in again.stderr
    assert "please review" not in again.stderr and "More messages arrived" in again.stderr
    assert run(stop, repo, env, stdin=stop_payload(active=True)).returncode == 0


async def test_the_codex_stop_hook_answers_with_a_block_decision(
    server: RunningServer, repo: Path
) -> None:
    room = new_room_id("hooks-codex")
    env = guard_env(server, room)
    stop = ["sh", str(GUARD), "codex-stop"]
    await bob_tells_alice(server, room)

    held = run(stop, repo, env, stdin=stop_payload())

    assert held.returncode == 0, held.stderr
    decision = json.loads(held.stdout)
    assert decision["decision"] == "block" and TRICKY_BODY in decision["reason"]
    passed = run(stop, repo, env, stdin=stop_payload(active=True))
    assert passed.returncode == 0 and passed.stdout == ""


async def test_the_cursor_hooks_inject_messages_and_refuse_edits_of_leased_files(
    server: RunningServer, repo: Path
) -> None:
    room = new_room_id("hooks-cursor")
    env = guard_env(server, room)
    common = {"conversation_id": "c1", "generation_id": "g1", "workspace_roots": [str(repo)]}

    def cursor(mode: str, **payload: Any) -> dict[str, Any]:
        done = run(["sh", str(GUARD), mode], repo, env, stdin=json.dumps({**common, **payload}))
        assert done.returncode == 0, done.stderr  # Cursor reads the answer from stdout
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    assert cursor("cursor-stop", hook_event_name="stop", status="completed", loop_count=0) == {}
    await bob_tells_alice(server, room)
    started = cursor("cursor-start", hook_event_name="sessionStart")
    assert TRICKY_BODY in started["additional_context"]
    await bob_tells_alice(server, room, body="the build is red")
    stopped = cursor("cursor-stop", hook_event_name="stop", status="completed", loop_count=0)
    assert "the build is red" in stopped["followup_message"]
    assert TRICKY_BODY not in stopped["followup_message"]  # already told at sessionStart
    assert cursor("cursor-stop", hook_event_name="stop", status="completed", loop_count=1) == {}

    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/**")

    def edit(tool: str, path: str) -> dict[str, Any]:
        return cursor(
            "cursor-edit",
            hook_event_name="preToolUse",
            tool_name=tool,
            tool_input={"file_path": str(repo / path), "contents": "x = {1, 2}"},
        )

    refused = edit("Write", "src/app.py")
    assert refused["permission"] == "deny"
    assert "src/app.py is leased exclusively by bob (src/**, until" in refused["agent_message"]
    assert edit("Write", "README.md") == {}
    assert edit("Read", "src/app.py") == {}  # reading a leased file is never refused


async def test_the_codex_edit_hook_refuses_a_patch_touching_a_leased_file(
    server: RunningServer, repo: Path
) -> None:
    room = new_room_id("hooks-codex-edit")
    env = guard_env(server, room)
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/*.py")

    def patch(*files: str) -> subprocess.CompletedProcess[str]:
        body = "".join(f"*** Update File: {f}\n@@\n-a\n+b\n" for f in files)
        payload = {
            "session_id": "s1",
            "hook_event_name": "PreToolUse",
            "tool_name": "apply_patch",
            "tool_input": {"command": f"*** Begin Patch\n{body}*** End Patch\n"},
        }
        return run(["sh", str(GUARD), "codex-edit"], repo, env, stdin=json.dumps(payload))

    blocked = patch("README.md", str(repo / "src" / "app.py"))
    assert blocked.returncode == 2  # Codex's "block this tool call", stderr the reason
    assert "src/app.py is leased exclusively by bob (src/*.py, until" in blocked.stderr
    assert "README.md is leased" not in blocked.stderr
    assert patch("README.md", "src/deep/app.py").returncode == 0


async def test_the_message_hooks_never_hold_an_agent_back_when_the_server_is_away(
    server: RunningServer, repo: Path
) -> None:
    unconfigured = {k: v for k, v in os.environ.items() if not k.startswith("ROOMSERVICE_")}
    away = guard_env(server, new_room_id("hooks"), ROOMSERVICE_URL="http://127.0.0.1:9")
    for env, warning in (
        (unconfigured, "Roomservice hooks are off here"),
        (away, "did not answer"),
    ):
        for mode, answer in (
            ("unread", ""),
            ("claude-stop", ""),
            ("codex-stop", ""),
            ("cursor-stop", "{}\n"),
            ("cursor-start", "{}\n"),
        ):
            done = run(["sh", str(GUARD), mode], repo, env, stdin=stop_payload())
            assert done.returncode == 0, (mode, done.stderr)
            assert done.stdout == answer and warning in done.stderr, (mode, done)


def test_install_claude_prints_the_settings_and_writes_nothing(repo: Path) -> None:
    printed = run(["sh", str(GUARD), "install-claude"], repo, dict(os.environ))
    assert printed.returncode == 0, printed.stderr
    hooks = json.loads(printed.stdout)["hooks"]
    commands = {event: entry["hooks"][0]["command"] for event, [entry] in hooks.items()}
    assert commands["PreToolUse"].endswith("claude-code")
    assert commands["SessionStart"].endswith("unread")
    assert commands["Stop"].endswith("claude-stop")
    assert hooks["PreToolUse"][0]["matcher"] == "Edit|Write|MultiEdit"
    assert not (repo / ".claude").exists()


# --- What the hooks print is never a terminal's instruction -----------------------------------

# Raw bytes a hostile (or old) server could send, and that a payload could hold: ESC
# sequences (clear the screen, set the window title), a bell, CR, C1 CSI, bidi overrides
# and isolates, zero-width characters, a byte order mark.
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\r\u009b31m\u202e\u2066\u200b\u2060\ufeff"
UNSEEN = ("\x1b", "\x07", "\r", "\u009b", "\u202e", "\u2066", "\u200b", "\u2060", "\ufeff")


@pytest.fixture
def hostile_server() -> Iterator[str]:
    """A server answering lease_check with an exclusive lease of another holder, and inbox
    with one message, every string laced with HOSTILE (raw, not JSON-escaped)."""
    lease = (
        '{"path": "src/app.py", "free": false, "leases": [{"id": "l1", "path": "src/'
        + HOSTILE
        + 'app.py", "mode": "exclusive", "holder": "Zo\u00eb'
        + HOSTILE
        + '", "taskId": null, "reason": null, "expiresAt": "2031-01-01T00:00:00Z'
        + HOSTILE
        + '"}]}'
    )
    inbox = (
        '{"messages": [{"messageId": "m1", "from": "Zo\u00eb'
        + HOSTILE
        + '", "subject": "s'
        + HOSTILE
        + '", "body": "hello'
        + HOSTILE
        + ' world", "replyTo": null, "ackRequired": true}], "unread": 0}'
    )

    class Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = (lease if self.path.endswith("/lease_check") else inbox).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # the base class names it `format`
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def hostile_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROOMSERVICE_", "GIT_"))}
    return {**env, "ROOMSERVICE_URL": url, "ROOMSERVICE_KEY": "k", "ROOM": "r", "AGENT": "alice"}


def test_a_hostile_holder_path_or_message_reaches_no_terminal_raw(
    hostile_server: str, repo: Path
) -> None:
    """The attack: a holder's name, a lease path, a message and the edited file's own path
    carrying ESC sequences and bidi overrides, printed by the hook to a terminal or an agent.
    Every mode prints the text without them; the legitimate text ("Zoë", the path, the
    message) is all still there."""
    env = hostile_env(hostile_server)
    edit = json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(repo / ("src/app" + HOSTILE + ".py"))},
        },
        ensure_ascii=False,
    )
    runs = {
        "check": run(["sh", str(GUARD), "check", "src/\u202eyp.evil" + HOSTILE], repo, env),
        "claude-code": run(["sh", str(GUARD), "claude-code"], repo, env, stdin=edit),
        "cursor-edit": run(["sh", str(GUARD), "cursor-edit"], repo, env, stdin=edit),
        "unread": run(["sh", str(GUARD), "unread"], repo, env),
        "claude-stop": run(["sh", str(GUARD), "claude-stop"], repo, env, stdin=stop_payload()),
        "cursor-start": run(["sh", str(GUARD), "cursor-start"], repo, env, stdin=stop_payload()),
    }
    for mode, done in runs.items():
        printed = done.stdout + done.stderr
        assert not [c for c in UNSEEN if c in printed], (mode, printed)
        assert "Zoë" in printed, (mode, printed)
        assert "ROOMSERVICE_ALLOW" not in printed, (mode, printed)
    assert runs["check"].returncode == 1 and runs["claude-code"].returncode == 2
    assert "leased exclusively by Zoë[2J]0;pwned31m (src/[2J]0;pwned31mapp.py" in (
        runs["check"].stderr
    )
    # (The payload's JSON escapes ESC, BEL and CR: they stay as the text "\u001b".)
    assert "31m.py is leased exclusively by Zoë" in runs["claude-code"].stderr
    assert json.loads(runs["cursor-edit"].stdout)["permission"] == "deny"
    assert "hello[2J]0;pwned31m world" in runs["unread"].stdout
    assert runs["claude-stop"].returncode == 2 and "hello" in runs["claude-stop"].stderr
    assert "hello" in json.loads(runs["cursor-start"].stdout)["additional_context"]


def test_install_never_writes_through_a_linked_hooks_folder(repo: Path, tmp_path: Path) -> None:
    """P1, as the attacker: the repository holds `.husky -> elsewhere`, and husky's own
    setup pointed core.hooksPath at it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".husky").symlink_to(elsewhere)
    subprocess.run(["git", "config", "core.hooksPath", ".husky"], cwd=repo, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROOMSERVICE_", "GIT_"))}

    refused = run(["sh", str(GUARD), "install"], repo, {**env, "AGENT": "alice"})

    assert refused.returncode == 1 and ".husky is a symbolic link" in refused.stderr
    assert not list(elsewhere.iterdir())
    # The legitimate path beside it: a plain hooks folder, and the agent this worktree's own.
    subprocess.run(["git", "config", "--unset", "core.hooksPath"], cwd=repo, check=True)
    installed = run(["sh", str(GUARD), "install"], repo, {**env, "AGENT": "alice"})
    assert installed.returncode == 0, installed.stderr
    assert (repo / ".git" / "hooks" / "pre-commit").read_bytes() == GUARD.read_bytes()
    named = run(["git", "config", "--worktree", "--get", "roomservice.agent"], repo, env)
    assert named.stdout == "alice\n"
