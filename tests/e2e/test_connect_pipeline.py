"""The one-line setups as people run them: `curl -fsS '<server>/connect/…' | sh` against the
live service, in real git checkouts. A refusal is seen (the server's reason on stderr, the
pipeline failing), one checkout or worktree acts as one agent, and each agent's own hooks
act as that agent (docs/hooks.md, "One command per client")."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, RunningServer
from tests.e2e.test_push import mcp

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
GUARD = settings.BASE_DIR / "hooks" / "roomservice-guard"


@dataclass
class Place:
    """A project checkout beside a home folder, and the environment of its shell."""

    project: Path
    env: dict[str, str]

    def sh(self, command: str, where: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", "-c", command],
            cwd=where or self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )


@pytest.fixture
def place(tmp_path: Path) -> Place:
    project, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ROOMSERVICE_KEY": TEAM_A_SECRET,  # the README exports only the key
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.com",
    }
    subprocess.run(["git", "init", "-q", str(project)], check=True, env=env)
    (project / "src" / "api").mkdir(parents=True)
    (project / "src" / "api" / "users.py").write_text("users = []\n")
    place = Place(project=project, env=env)
    assert place.sh("git add -A && git commit -q -m start").returncode == 0
    return place


def setup(server: RunningServer, client: str, query: str) -> str:
    """The README's command, quoted as it prints it."""
    return f'curl -fsS "{server.url}/connect/{client}?{query}" | sh'


@pytest.mark.parametrize(
    ("client", "query", "reason"),
    [
        ("claude-code", "room=Not_A_Room&agent=backend", "room: a room id is"),
        ("codex", "room=demo&agent=<AGENT_NAME>", "<AGENT_NAME> is the page's placeholder"),
        ("cursor", "room=demo&agent=person:ann@example.com", "names belong to people"),
        ("vscode", "room=demo&agent=backend&tools=everything", "tools: one of"),
        ("claude-code", "room=demo&agent=b%C3%A4ckend", "carries ASCII only"),
        (
            "emacs",
            "room=demo&agent=backend",
            "emacs: not a client this server sets up. Use one of: claude-code, codex, cursor, "
            "vscode",
        ),
    ],
)
def test_a_refused_setup_says_why_and_the_pipeline_fails(
    server: RunningServer, place: Place, client: str, query: str, reason: str
) -> None:
    before = sorted(p.name for p in place.project.iterdir())

    done = place.sh(setup(server, client, query) + "; echo pipeline=$?")

    assert "pipeline=1" in done.stdout  # the pipeline's status is sh's: the script's exit 1
    assert done.stderr.startswith("roomservice-setup: ") and reason in done.stderr, done.stderr
    assert "curl:" not in done.stderr
    assert sorted(p.name for p in place.project.iterdir()) == before  # nothing written


async def test_one_checkout_or_worktree_per_agent_as_the_readme_says(
    server: RunningServer, place: Place
) -> None:
    room = new_room_id("pipeline")
    backend = setup(server, "claude-code", f"room={room}&agent=backend")
    frontend = setup(server, "codex", f"room={room}&agent=frontend")

    # Step 2: the first agent. Its name reaches the hooks with only the key exported.
    first = place.sh(backend)
    assert first.returncode == 0, first.stderr
    local = json.loads((place.project / ".claude" / "settings.local.json").read_text())
    [pre] = local["hooks"]["PreToolUse"][0]["hooks"]
    assert pre["headers"]["X-Roomservice-Agent"] == "backend"
    again = place.sh(backend)  # the same agent again: nothing changes
    assert again.returncode == 0 and "written" not in again.stdout, again.stderr

    # Another agent in the same checkout is refused, saying what to run instead.
    refused = place.sh(frontend)
    assert refused.returncode == 1
    assert "this checkout already acts as the agent backend" in refused.stderr
    assert "git worktree add ../frontend && cd ../frontend" in refused.stderr
    assert not (place.project / ".codex").exists()

    # Step 3: the second agent in a worktree beside it. git copies the first worktree's
    # config into a new one: the copy names no agent, to the guard or to the setup.
    assert place.sh("git worktree add -q ../frontend").returncode == 0
    worktree = place.project.parent / "frontend"
    start = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart"})
    copied = place.sh(f"sh {GUARD} codex-start <<'EOF'\n{start}\nEOF", worktree)
    assert "this checkout acts as no agent" in json.loads(copied.stdout)["systemMessage"]
    second = place.sh(frontend, worktree)
    assert second.returncode == 0, second.stderr
    for where, agent in ((place.project, "backend"), (worktree, "frontend")):
        named = place.sh("git config --get roomservice.agent", where)
        assert named.stdout.strip() == agent

    # Each acts as its own agent: backend commits the file it leases (the pre-commit hook
    # the Codex setup installed serves every worktree of the repository); frontend may not.
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(
            http, server.url, "lease_claim", roomId=room, agentId="backend", path="src/api/users.py"
        )
    for where in (place.project, worktree):
        (where / "src" / "api" / "users.py").write_text(f"users = ['{where.name}']\n")
    own = place.sh("git commit -q -am 'backend: users'")
    assert own.returncode == 0, own.stderr
    theirs = place.sh("git commit -q -am 'frontend: users'", worktree)
    assert theirs.returncode != 0
    assert "src/api/users.py is leased exclusively by backend" in theirs.stderr


async def test_claude_codes_hooks_as_written_act_as_the_agent_from_any_folder(
    server: RunningServer, place: Place
) -> None:
    """What Claude Code posts with the hooks the setup wrote (headers as written, the key
    from the environment), from a session started in a subfolder: refused by the lease of
    the file's path from the checkout's top."""
    room = new_room_id("pipeline-claude")
    assert place.sh(setup(server, "claude-code", f"room={room}&agent=backend")).returncode == 0
    local = json.loads((place.project / ".claude" / "settings.local.json").read_text())
    [pre] = local["hooks"]["PreToolUse"][0]["hooks"]
    headers = {
        name: value.replace("$ROOMSERVICE_KEY", place.env["ROOMSERVICE_KEY"])
        for name, value in pre["headers"].items()
    }
    target = place.project / "src" / "api" / "users.py"
    body = {
        "session_id": "claude-session-1",
        "hook_event_name": "PreToolUse",
        "cwd": str(place.project / "src"),
        "tool_name": "Write",
        "tool_input": {"file_path": str(target), "content": "x"},
    }
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(
            http,
            server.url,
            "lease_claim",
            roomId=room,
            agentId="frontend",
            path="src/api/users.py",
        )
        answer = (await http.post(pre["url"], json=body, headers=headers)).json()
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert reason.startswith("src/api/users.py is leased exclusively by frontend")


def test_hooks_of_an_unset_checkout_say_what_to_fix_in_codexs_own_way(place: Place) -> None:
    guard = GUARD
    start = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "cwd": "."})

    told = subprocess.run(
        ["sh", str(guard), "codex-start"],
        input=start,
        cwd=place.project,
        env=place.env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert told.returncode == 0  # never blocks
    message = json.loads(told.stdout)["systemMessage"]
    assert "this checkout is not set up" in message and TEAM_A_SECRET not in message
