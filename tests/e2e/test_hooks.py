"""Leases enforced outside the server: hooks/roomservice-guard as a git pre-commit hook in a
temporary repository, and as a Claude Code PreToolUse hook fed the hook's JSON, against the
live service."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

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
    assert held["lease"]["expiresAt"] in refused.stderr and "ROOMSERVICE_ALLOW=1" in refused.stderr
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
    assert checked.returncode == 0 and "not configured" in checked.stderr

    away = guard_env(server, new_room_id("hooks"), ROOMSERVICE_URL="http://127.0.0.1:9")
    checked = run(["sh", str(GUARD), "check", "src/app.py"], repo, away)
    assert checked.returncode == 0 and "did not answer" in checked.stderr
