"""The README is a test (issue 31, point 1): its "Five minutes: two agents and a room",
followed as a newcomer would on a fresh clone, with the clients' own command-line tools.

Checked with Claude Code 2.1.332 and Codex 0.171.0 (`make clients` installs exactly these
into .venv/clients; without them, or without Chromium, the steps that need them skip saying
why). Each step proves one thing the README promises:

1. A fresh `git clone` of this repository's committed HEAD, then `make run` there: the
   run-time install alone (its own .venv, no dev extras) starts, and its banner prints the
   key, the demo room and the sign-up link that claims the demo team.
2. That link, in headless Chromium, makes an account that owns the demo team (it lands on
   the demo room); as that person, a webhook is registered on the room from the dashboard.
3. The README's ```sh blocks of steps 2 and 3, read from README.md now (a change to them is
   what is tested), run with `sh -c` in a scratch git repository with only what the README
   exports (ROOMSERVICE_KEY) and the throwaway HOME the clients read; only the address
   127.0.0.1:8000 is rewritten to this run's port. Each exits 0 and writes its client's
   config; the lines that start the clients themselves are kept for step 5.
4. The clients read what was written: `claude mcp list` in the first checkout shows the
   roomservice server Connected; `codex mcp get roomservice` in the second shows its entry.
5. The real clients, started as the README starts them, with the README's own prompts,
   driven by scripted stand-ins of their model APIs (tests.e2e.model_standins: Anthropic's
   Messages API for `claude -p`, OpenAI's Responses API for `codex exec`, on loopback) that
   ask to edit a file another agent leases exclusively, then a free one. Claude Code's
   PreToolUse hook (HTTP, to the hook door) refuses its Write of the file frontend leases;
   Codex's (the guard script) refuses its apply_patch of the file backend leases. Each
   model is told the holder's name, the leased file stays unwritten, the free file is
   written (the refusal is the hook's, not a blanket one). Codex's Stop hook then holds the
   turn open until backend sends frontend a message, which the model is told.
6. The webhook of step 2 is delivered to a receiver on loopback: the fresh install's Celery
   worker runs. `/health` answers 200 with every check ok.
7. Ctrl-C (SIGINT to make's process group, as a terminal sends it) stops `make run` and
   leaves nothing it started running.

What a person answers at the clients' prompts is answered here up front, and said where:
Claude Code's approval of the project's MCP server (fixture `home`), its edit permission
(acceptEdits), and Codex's trust of the project and of its hooks (test_5 for Codex).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from ops.chromium import CHROMIUM_ARGS, chromium_path
from tests.e2e.model_standins import StandIn, ToolCall
from tests.e2e.test_orphans import alive, descendants

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.prod]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CLIENTS = ROOT / ".venv" / "clients" / "node_modules" / ".bin"
README_ADDRESS = "http://127.0.0.1:8000"
LEASED = "src/api/users.py"  # the file `frontend` leases; backend's Claude Code is refused it
FREE = "src/api/health.py"  # nobody leases it: the same client writes it
CONTRACT = "src/api/contract.py"  # backend leases it; frontend's Codex is refused it
PAGE = "src/web/login.py"  # nobody leases it: Codex writes it
NEWS = "The login API contract is published."
# The first pip install of the fresh clone is the long part (its wheels come from pip's cache
# on a second run); everything after it answers in seconds.
INSTALL_SECONDS = 900
STEP_SECONDS = 120


# --- The README, read at test time ---------------------------------------------------------


def walkthrough_blocks() -> list[list[str]]:
    """The ```sh blocks of "Five minutes", as lists of command lines, in order."""
    text = README.read_text()
    section = text.split("## Five minutes", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(blocks) >= 2, "the README's walkthrough lost its two setup blocks"
    return [[line.strip() for line in block.splitlines() if line.strip()] for block in blocks]


def client_line(block: list[str], client: str) -> list[str] | None:
    """The line of `block` that starts `client` itself (`claude "…"`), split as sh would."""
    for line in block:
        words = shlex.split(line, comments=True)
        if words and words[0] == client:
            return words
    return None


def setup_script(block: list[str], key: str, base: str) -> str:
    """The block as a person runs it, minus the line starting the client (step 5 starts it
    under the test's control): the banner's key where the README has its placeholder, this
    run's address where the README has 127.0.0.1:8000. `set -e`: a failing line fails."""
    lines = ["set -e"]
    for line in block:
        words = shlex.split(line, comments=True)
        if not words or words[0] in ("claude", "codex"):
            continue
        if words[0] == "export" and words[1].startswith("ROOMSERVICE_KEY="):
            line = f"export ROOMSERVICE_KEY={shlex.quote(key)}"
        lines.append(line.replace(README_ADDRESS, base))
    return "\n".join(lines) + "\n"


# --- make run on a fresh clone -------------------------------------------------------------


@dataclass
class Run:
    """A `make run` of a fresh clone, with what it printed so far."""

    clone: Path
    process: subprocess.Popen[str]
    base: str
    lines: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def output(self) -> str:
        with self.changed:
            return "\n".join(self.lines)

    def banner_wait(self, timeout: float) -> str:
        """The output up to the banner's key line (the last thing the banner prints)."""
        done = re.compile(r"^\s+rs_live_\S+$", re.M)
        with self.changed:
            self.changed.wait_for(
                lambda: done.search("\n".join(self.lines)) or self.process.poll() is not None,
                timeout=timeout,
            )
            return "\n".join(self.lines)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def running_from(folder: Path) -> list[str]:
    """Command lines of live processes that run from `folder` (the clone's .venv, its Redis)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not alive(int(entry.name)):
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(folder) in command:
            found.append(f"{entry.name}: {command}")
    return found


class Receiver:
    """A webhook receiver on loopback: what it was sent, and an event when it was."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.arrived = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.bodies.append(json.loads(raw or b"{}"))
                owner.arrived.set()
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/roomservice"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _run_env(port: int) -> dict[str, str]:
    """What `make run` sees: the person's PATH (not this suite's venv), HOME (pip's cache),
    proxies and pip's settings; none of the suite's REDIS_URL, DATABASE_URL, API_KEYS.
    Receivers on loopback are allowed (WEBHOOK_ALLOW_PRIVATE_NETWORKS): the webhook of step 6
    goes to this machine, as a person trying webhooks locally would configure it."""
    keep = ("HOME", "LANG", "LC_ALL", "TMPDIR", "http_proxy", "https_proxy", "no_proxy")
    env = {
        name: value
        for name, value in os.environ.items()
        if name in keep or name.upper() in keep or name.startswith("PIP_")
    }
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(":") if p != venv_bin]
    env.update(
        PATH=":".join(path),
        PORT=str(port),
        WEBHOOK_ALLOW_PRIVATE_NETWORKS="1",
    )
    return env


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="rs-readme-") as folder:
        yield Path(folder)


@pytest.fixture(scope="module")
def run(place: Path) -> Iterator[Run]:
    clone = place / "roomservice"
    subprocess.run(
        ["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True, timeout=120
    )
    port = free_port()
    process = subprocess.Popen(
        ["make", "run"],
        cwd=clone,
        env=_run_env(port),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: step 7 signals it as a terminal does
    )
    started = Run(clone, process, f"http://127.0.0.1:{port}")
    reader = threading.Thread(target=started.read, daemon=True)
    reader.start()
    yield started
    if process.poll() is None:  # step 7 did not get to stop it
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    for line in running_from(clone):
        os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
    reader.join(timeout=30)  # at the pipe's end once nothing started holds it
    assert process.stdout is not None
    process.stdout.close()


@pytest.fixture(scope="module")
def banner(run: Run) -> dict[str, str]:
    """What the banner printed: the key, the demo room, the claim link."""
    text = run.banner_wait(INSTALL_SECONDS)
    key = re.search(r"^\s+(rs_live_\S+)$", text, re.M)
    room = re.search(r"Demo room\s*:\s*(\S+)", text)
    claim = re.search(rf"{re.escape(run.base)}(/signup\?claim=\S+)", text)
    assert key and room and claim, f"make run printed no banner with a key:\n{text[-4000:]}"
    # The banner is printed just before uvicorn listens: wait until it answers.
    deadline = time.monotonic() + STEP_SECONDS
    while True:
        try:
            httpx.get(f"{run.base}/health", timeout=5)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline and run.process.poll() is None, run.output()[-4000:]
            threading.Event().wait(0.2)
    return {"key": key.group(1), "room": room.group(1), "claim": run.base + claim.group(1)}


@pytest.fixture(scope="module")
def browser_page(run: Run) -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium: install Debian's chromium (make test does when it can)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=run.base)
        context.set_default_timeout(STEP_SECONDS * 1000)
        yield context.new_page()
        browser.close()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    received = Receiver()
    yield received
    received.stop()


@pytest.fixture(scope="module")
def home(place: Path) -> Path:
    """The clients' throwaway HOME: nothing of this machine's user reaches them.

    Claude Code asks before it uses a server a project's .mcp.json names ("New MCP server
    found in .mcp.json"); the person answers yes once, and the answer is kept as the server's
    name in enabledMcpjsonServers. `claude -p` cannot ask, so that answer is given here, in
    the user's settings, exactly as kept: without it `claude mcp list` says "Pending
    approval" and the session has no roomservice tools."""
    folder = place / "home"
    (folder / ".claude").mkdir(parents=True)
    (folder / ".claude" / "settings.json").write_text(
        json.dumps({"enabledMcpjsonServers": ["roomservice"]})
    )
    return folder


def client_env(home: Path, key: str, **extra: str) -> dict[str, str]:
    """A shell of the person's: PATH, the throwaway HOME and what the README exports."""
    return {
        "PATH": f"{CLIENTS}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ROOMSERVICE_KEY": key,
        # No calls home from the clients (no network here, and none is needed).
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        **extra,
    }


def needs(client: str) -> Path:
    path = CLIENTS / client
    if not path.exists():
        pytest.skip(f"{client} is not installed in .venv/clients: `make clients` installs it (npm)")
    return path


@pytest.fixture(scope="module")
def checkouts(place: Path, run: Run, banner: dict[str, str], home: Path) -> dict[str, Path]:
    """Step 3: the project the agents work on, set up by the README's own blocks."""
    project = place / "agents" / "project"
    project.mkdir(parents=True)
    git = ["git", "-c", "user.name=Newcomer", "-c", "user.email=newcomer@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    (project / "README.md").write_text("The project the agents build.\n")
    subprocess.run(["git", "add", "README.md"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], cwd=project, check=True)
    for block in walkthrough_blocks():
        done = subprocess.run(
            ["sh", "-c", setup_script(block, banner["key"], run.base)],
            cwd=project,
            env=client_env(home, ""),  # the key only as the README's own export sets it
            capture_output=True,
            text=True,
            timeout=STEP_SECONDS,
        )
        assert done.returncode == 0, f"{block}\nexit {done.returncode}\n{done.stderr}"
    return {"backend": project, "frontend": place / "agents" / "frontend"}


def tool(run: Run, banner: dict[str, str], name: str, **args: str) -> dict[str, Any]:
    """A tool call through the REST door with the banner's team key (another agent)."""
    answer = httpx.post(
        f"{run.base}/api/v1/rooms/{banner['room']}/tools/{name}",
        headers={"Authorization": f"Bearer {banner['key']}"},
        json=args,
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _added(path: str) -> str:
    """An apply_patch that makes `path`."""
    return f"*** Begin Patch\n*** Add File: {path}\n+made = True\n*** End Patch\n"


# --- The steps -----------------------------------------------------------------------------


def test_1_make_run_on_a_fresh_clone_prints_the_banner(run: Run, banner: dict[str, str]) -> None:
    assert banner["room"] == "demo"
    assert not (run.clone / ".venv" / "bin" / "pytest").exists()  # the run-time install only
    assert httpx.get(f"{run.base}/health", timeout=10).status_code == 200


@pytest.fixture(scope="module")
def claimed(banner: dict[str, str], browser_page: Any, receiver: Receiver) -> Receiver:
    """Step 2's path, taken once in each process that runs a step needing it (the suite's
    workers may share the steps out): the claim link makes a newcomer the demo team's
    owner, who registers a webhook on the room from the dashboard."""
    page = browser_page
    page.goto(banner["claim"])
    page.get_by_label("Email").fill("newcomer@example.com")
    page.get_by_label("Password").fill("a-long-and-good-passphrase")
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(f"**/rooms/{banner['room']}/")
    page.goto(f"/rooms/{banner['room']}/webhooks")
    page.get_by_label("Receiver URL").fill(receiver.url)
    page.get_by_role("button", name="Register").click()
    page.locator("#new-secret").wait_for()
    return receiver


def test_2_the_claim_link_owns_the_demo_team(claimed: Receiver, browser_page: Any) -> None:
    page = browser_page
    page.goto("/team")
    page.get_by_text("you are owner").wait_for()
    assert "newcomer@example.com" in page.content()


def test_3_the_readme_setups_run_as_printed(checkouts: dict[str, Path], home: Path) -> None:
    backend, frontend = checkouts["backend"], checkouts["frontend"]
    assert (backend / ".mcp.json").exists()
    assert "ROOMSERVICE_KEY" in (backend / ".mcp.json").read_text()
    assert (backend / ".claude" / "settings.local.json").exists()  # its hooks, named for it
    assert frontend.is_dir(), "step 3's worktree was not made"
    assert (home / ".codex" / "config.toml").exists()
    # Codex's hooks are the person's own (a worktree's project hooks are not read steadily)
    codex_hooks = json.loads((home / ".codex" / "hooks.json").read_text())
    assert "roomservice-guard" in json.dumps(codex_hooks["hooks"]["PreToolUse"])
    assert (frontend / "hooks" / "roomservice-guard").exists()  # the worktree's own guard
    for folder in (backend, frontend):  # the key stays in the environment, never in a file
        for written in folder.rglob("*"):
            if written.is_file() and ".git" not in written.parts:
                assert "rs_live_" not in written.read_text(errors="replace"), written


def test_4_the_clients_read_what_was_written(
    checkouts: dict[str, Path], home: Path, banner: dict[str, str], run: Run
) -> None:
    claude, codex = needs("claude"), needs("codex")
    listed = subprocess.run(
        [str(claude), "mcp", "list"],
        cwd=checkouts["backend"],
        env=client_env(home, banner["key"]),
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
    )
    line = next((ln for ln in listed.stdout.splitlines() if ln.startswith("roomservice")), "")
    assert run.base in line and "Connected" in line, listed.stdout + listed.stderr

    got = subprocess.run(
        [str(codex), "mcp", "get", "roomservice"],
        cwd=checkouts["frontend"],
        env=client_env(home, banner["key"]),
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
    )
    assert got.returncode == 0, got.stderr
    assert f"{run.base}/mcp" in got.stdout and "ROOMSERVICE_KEY" in got.stdout, got.stdout


def test_5_claude_code_is_refused_a_file_frontend_leases(
    checkouts: dict[str, Path], home: Path, banner: dict[str, str], run: Run
) -> None:
    claude = needs("claude")
    backend = checkouts["backend"]
    leased = tool(run, banner, "lease_claim", agentId="frontend", path=LEASED)
    assert leased.get("granted") is True, leased

    started = client_line(walkthrough_blocks()[0], "claude")
    assert started, "the README no longer starts Claude Code in step 2"
    model = StandIn(
        [
            ToolCall("Write", {"file_path": str(backend / LEASED), "content": "users = []\n"}),
            ToolCall("Write", {"file_path": str(backend / FREE), "content": "ok = True\n"}),
        ]
    ).start()
    try:
        # The README's own command, non-interactive (-p); edits accepted as the person at
        # the prompt would accept them, so only the hook stands between the model and the file.
        done = subprocess.run(
            [str(claude), "-p", *started[1:], "--permission-mode", "acceptEdits"],
            cwd=backend,
            env=client_env(
                home, banner["key"], ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="sk-standin"
            ),
            capture_output=True,
            text=True,
            timeout=STEP_SECONDS,
        )
    finally:
        model.stop()
    told = list(model.anthropic_tool_results())
    assert done.returncode == 0, done.stdout + done.stderr
    assert (backend / FREE).exists(), f"the free file was not written either: {told}"
    assert any("leased exclusively by frontend" in text for text in told), told
    assert not (backend / LEASED).exists(), f"{LEASED} was written: {told}"


def test_5_codex_is_refused_a_file_backend_leases(
    checkouts: dict[str, Path], home: Path, banner: dict[str, str], run: Run
) -> None:
    """The same for Codex in step 3's worktree: its apply_patch is refused a file backend
    leases, a free one is written, and its Stop hook holds the turn open until a message
    from backend comes, which the model is then told."""
    codex = needs("codex")
    frontend = checkouts["frontend"]
    leased = tool(run, banner, "lease_claim", agentId="backend", path=CONTRACT)
    assert leased.get("granted") is True, leased

    started = client_line(walkthrough_blocks()[1], "codex")
    assert started, "the README no longer starts Codex in step 3"
    model = StandIn(
        [ToolCall("apply_patch", _added(CONTRACT)), ToolCall("apply_patch", _added(PAGE))]
    ).start()
    provider = f'{{name="stand-in", base_url="{model.url}/v1", wire_api="responses"}}'
    try:
        # The README's own command, non-interactive (codex exec), on the stand-in (a model
        # Codex knows, so it is offered the tools a real one is). What the person answers
        # when Codex asks, answered up front: the project is trusted (kept in config.toml, as
        # Codex keeps the person's yes: for the repository's top, which Codex resolves a
        # worktree to), its hooks are trusted (Codex reviews a project's hooks at start and
        # keeps the person's yes; exec cannot ask), and a trusted project's workspace-write
        # sandbox. `codex exec --trust` is not enough: it saves the trust after the session
        # has read the project's config, so that session runs without the hooks.
        top = Path(
            subprocess.run(
                ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
                cwd=frontend,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        ).parent
        with (home / ".codex" / "config.toml").open("a") as config:
            config.write(f'\n[projects."{top}"]\ntrust_level = "trusted"\n')
        codex_run = subprocess.Popen(
            [
                str(codex),
                "exec",
                "-c",
                'model_provider="standin"',
                "-c",
                f"model_providers.standin={provider}",
                "-c",
                'model="gpt-5.5"',
                "--dangerously-bypass-hook-trust",
                "--sandbox",
                "workspace-write",
                *started[1:],
            ],
            cwd=frontend,
            env=client_env(home, banner["key"], OPENAI_API_KEY="sk-standin"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # Both edits answered: Codex is at its Stop hook, waiting for a message to frontend.
        deadline = time.monotonic() + STEP_SECONDS
        while len(list(model.openai_tool_outputs())) < 2 and codex_run.poll() is None:
            assert time.monotonic() < deadline, list(model.openai_tool_outputs())
            threading.Event().wait(0.2)
        if codex_run.poll() is None:
            tool(run, banner, "send_message", **{"from": "backend", "to": "frontend", "body": NEWS})
        out, err = codex_run.communicate(timeout=STEP_SECONDS)
    finally:
        model.stop()
    told = list(model.openai_tool_outputs())
    assert codex_run.returncode == 0, out + err
    assert "hook: SessionStart" in err, (
        f"Codex ran none of the project's hooks in the worktree {frontend}\n{err}"
    )
    assert (frontend / PAGE).exists(), f"the free file was not written either: {told}"
    assert any("leased exclusively by backend" in text for text in told), told
    assert not (frontend / CONTRACT).exists(), f"{CONTRACT} was written: {told}"
    assert NEWS in json.dumps(model.requests[-1]["body"]), "the Stop hook did not pass it on"


def test_6_the_webhook_is_delivered_and_health_is_ok(
    run: Run, claimed: Receiver, banner: dict[str, str]
) -> None:
    # The lease of step 5 (and the setup's own traffic) made events since step 2; one more
    # now, in case step 5 skipped.
    tool(run, banner, "lease_claim", agentId="frontend", path="docs/")
    health = httpx.get(f"{run.base}/health", timeout=10)
    assert health.status_code == 200, health.text
    checks = health.json()["checks"]
    assert all(value == "ok" for value in checks.values()), checks
    assert claimed.arrived.wait(STEP_SECONDS), (
        "no webhook delivery: is the fresh install's worker running?\n" + run.output()[-4000:]
    )


def test_7_ctrl_c_stops_everything_make_run_started(run: Run) -> None:
    started = descendants(run.process.pid)
    assert started, "make run has no processes left to stop"
    os.killpg(run.process.pid, signal.SIGINT)
    run.process.wait(timeout=STEP_SECONDS)
    # make has returned; what it started may still be finishing its own exit.
    deadline = time.monotonic() + STEP_SECONDS
    left = [pid for pid in started if alive(pid)]
    while (left or running_from(run.clone)) and time.monotonic() < deadline:
        threading.Event().wait(0.2)
        left = [pid for pid in started if alive(pid)]
    assert not left and not running_from(run.clone), running_from(run.clone)
