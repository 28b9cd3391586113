"""hooks/roomservice-guard's waiting modes and lease-on-edit modes against the live service:
an idle agent woken by a message addressed to it (Claude Code's asyncRewake Stop hook, the
Codex and Cursor stop loops) and by nothing else; bounded in lifetime, one waiter a
checkout, never holding an agent when the server is away; and Codex's and Cursor's edits
leased for the agent that made them, with the clients' payloads kept under
tests/fixtures/hooks/."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, RunningServer
from tests.e2e.test_hooks import GUARD, guard_env, run
from tests.e2e.test_push import mcp

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
# The waiter's own poll: a wake that came from a poll ending would take this long.
POLL_MS = "20000"


def fixture(client: str, name: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((FIXTURES / client / name).read_text())
    return payload


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    work = tmp_path / "checkout"
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    return work


Start = Callable[[str, Path, dict[str, str], dict[str, Any]], subprocess.Popen[str]]


@pytest.fixture
def start() -> Iterator[Start]:
    """Starts a waiting mode with the hook's JSON on stdin, as the client would; whatever
    is still running when the test ends (it failed) is ended with it."""
    started: list[subprocess.Popen[str]] = []

    def launch(
        mode: str, cwd: Path, env: dict[str, str], payload: dict[str, Any]
    ) -> subprocess.Popen[str]:
        waiter = subprocess.Popen(
            ["sh", str(GUARD), mode],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its curl too, when it has to be ended
        )
        started.append(waiter)
        assert waiter.stdin is not None
        with waiter.stdin:
            waiter.stdin.write(json.dumps(payload))
        return waiter

    yield launch
    for waiter in started:
        if waiter.poll() is None:
            os.killpg(waiter.pid, signal.SIGTERM)
            waiter.wait(timeout=10)


def still_waiting(waiter: subprocess.Popen[str], seconds: float = 2.0) -> bool:
    """True when the waiter has not ended within `seconds` (a bounded wait for an exit that
    must not come)."""
    try:
        waiter.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return True
    return False


def finish(waiter: subprocess.Popen[str], timeout: float = 30) -> tuple[int, str, str]:
    """The waiter's exit: status, stdout, stderr (a few lines each, so the pipes never fill)."""
    status = waiter.wait(timeout=timeout)
    assert waiter.stdout is not None and waiter.stderr is not None
    with waiter.stdout, waiter.stderr:
        return status, waiter.stdout.read(), waiter.stderr.read()


async def call(server: RunningServer, tool: str, **args: Any) -> Any:
    async with httpx.AsyncClient(timeout=30) as http:
        return await mcp(http, server.url, tool, **args)


async def arrive(server: RunningServer, room: str, *agents: str) -> None:
    for agent in agents:
        await call(server, "heartbeat", roomId=room, agentId=agent)


async def say(server: RunningServer, room: str, sender: str, to: str, body: str) -> None:
    sent = await call(server, "send_message", roomId=room, to=to, body=body, **{"from": sender})
    assert sent["count"] >= 1, sent


def claude_stop(active: bool = False) -> dict[str, Any]:
    return {
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": ".",
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        "last_assistant_message": "Done.",
    }


# --- The wake ------------------------------------------------------------------------------


async def test_the_claude_waiter_wakes_for_a_message_to_its_agent_and_nothing_else(
    server: RunningServer,
    checkout: Path,
    start: Start,
    record_property: Callable[[str, object], None],
) -> None:
    room = new_room_id("wait-cc")
    await arrive(server, room, "alice", "bob", "carol")
    env = guard_env(server, room, ROOMSERVICE_WAIT_POLL_MS=POLL_MS)
    waiter = start("claude-wait", checkout, env, claude_stop())
    assert still_waiting(waiter, 1.0)  # nothing for alice yet

    # Not for alice: a message to bob, a broadcast event, a task change.
    await say(server, room, "carol", "bob", "bob only")
    await call(
        server,
        "post_event",
        roomId=room,
        type="announcement",
        payload={"x": 1},
        **{"from": "carol"},
    )
    await call(server, "add_task", roomId=room, title="write the docs")
    assert still_waiting(waiter)

    sent_at = time.monotonic()
    await say(server, room, "bob", "alice", "please review src/api.py")
    status, out, err = finish(waiter)
    latency = time.monotonic() - sent_at

    record_property("wake_latency_ms", round(latency * 1000))
    print(f"claude-wait woke {latency * 1000:.0f} ms after the message was sent")
    assert status == 2, err  # asyncRewake: exit 2 wakes Claude, stderr is the reminder
    assert "1 unread message for alice" in err and "please review src/api.py" in err
    assert "bob only" not in err and out == ""
    # Long before the poll it was in would have ended on its own (20 s): the message woke it.
    assert latency < 5, latency
    # What it reported is marked read: the next stop has nothing to tell.
    assert (
        run(["sh", str(GUARD), "claude-stop"], checkout, env, json.dumps(claude_stop())).returncode
        == 0
    )


async def test_the_codex_and_cursor_waiters_answer_in_their_clients_formats(
    server: RunningServer, checkout: Path, start: Start
) -> None:
    room = new_room_id("wait-loops")
    await arrive(server, room, "alice", "bob")
    env = guard_env(server, room, ROOMSERVICE_WAIT_POLL_MS=POLL_MS)

    codex = start(
        "codex-wait", checkout, env, {**fixture("codex", "Stop.json"), "cwd": str(checkout)}
    )
    assert still_waiting(codex, 1.0)
    await say(server, room, "bob", "alice", 'the build is red: {"job": 7}')
    status, out, err = finish(codex)
    assert status == 0, err  # Codex reads the decision from stdout
    decision = json.loads(out)
    assert decision["decision"] == "block"
    assert 'the build is red: {"job": 7}' in decision["reason"]

    stop = {**fixture("cursor", "stop.json"), "workspace_roots": [str(checkout)]}
    cursor = start("cursor-wait", checkout, env, stop)
    assert still_waiting(cursor, 1.0)
    await say(server, room, "bob", "alice", "rebase on main")
    status, out, err = finish(cursor)
    assert status == 0, err
    assert "rebase on main" in json.loads(out)["followup_message"]

    # Messages already waiting need no wait: the loops report them at once, like *-stop.
    await say(server, room, "bob", "alice", "one more")
    done = run(["sh", str(GUARD), "cursor-wait"], checkout, env, json.dumps(stop))
    assert "one more" in json.loads(done.stdout)["followup_message"]


async def test_a_waiter_whose_time_is_up_ends_quietly(
    server: RunningServer, checkout: Path
) -> None:
    room = new_room_id("wait-bound")
    await arrive(server, room, "alice", "bob")
    env = guard_env(server, room, ROOMSERVICE_WAIT_SECONDS="1", ROOMSERVICE_WAIT_POLL_MS=POLL_MS)
    for mode, payload, answer in (
        ("claude-wait", claude_stop(), ""),
        ("codex-wait", fixture("codex", "Stop.json"), ""),
        ("cursor-wait", fixture("cursor", "stop.json"), "{}\n"),
        ("wait", {}, ""),
    ):
        done = run(["sh", str(GUARD), mode], checkout, env, json.dumps(payload))
        assert (done.returncode, done.stdout, done.stderr) == (0, answer, ""), (mode, done)
    assert not (checkout / ".git" / "roomservice-waiter").exists()  # a finished waiter's mark goes


async def test_a_loop_never_waits_twice_in_a_row_nor_after_an_abort(
    server: RunningServer, checkout: Path, start: Start
) -> None:
    """Codex's stop_hook_active and Cursor's status "aborted" end the loops at once: the
    lifetime is an hour, and each run still ends well within the subprocess's timeout."""
    room = new_room_id("wait-active")
    await arrive(server, room, "alice", "bob")
    env = guard_env(server, room, ROOMSERVICE_WAIT_SECONDS="3600")
    active = {**fixture("codex", "Stop.json"), "stop_hook_active": True}
    done = run(["sh", str(GUARD), "codex-wait"], checkout, env, json.dumps(active))
    assert (done.returncode, done.stdout) == (0, "")
    aborted = {**fixture("cursor", "stop.json"), "status": "aborted"}
    done = run(["sh", str(GUARD), "cursor-wait"], checkout, env, json.dumps(aborted))
    assert (done.returncode, done.stdout) == (0, "{}\n")
    # Unless something arrived meanwhile: that is still reported, once.
    await say(server, room, "bob", "alice", "late news")
    done = run(["sh", str(GUARD), "codex-wait"], checkout, env, json.dumps(active))
    reason = json.loads(done.stdout)["reason"]
    assert "late news" in reason and "More messages arrived" in reason

    # claude-wait holds nothing back, so it waits even then: the next stop is the re-arm.
    waiter = start(
        "claude-wait", checkout, {**env, "ROOMSERVICE_WAIT_POLL_MS": POLL_MS}, claude_stop(True)
    )
    assert still_waiting(waiter, 1.0)
    await say(server, room, "bob", "alice", "wake up")
    status, _, err = finish(waiter)
    assert status == 2 and "wake up" in err


async def test_one_waiter_a_checkout_and_none_after_the_session_ends(
    server: RunningServer, checkout: Path, start: Start
) -> None:
    room = new_room_id("wait-one")
    await arrive(server, room, "alice", "bob")
    env = guard_env(server, room, ROOMSERVICE_WAIT_POLL_MS="2000")
    first = start("claude-wait", checkout, env, claude_stop())
    assert still_waiting(first, 1.0)
    second = start("claude-wait", checkout, env, claude_stop())  # the next stop
    assert still_waiting(second, 1.0)
    # The first stands down at its next poll; the second is the one left waiting.
    status, out, err = finish(first)
    assert (status, out, err) == (0, "", "")
    await say(server, room, "bob", "alice", "for the second")
    status, _, err = finish(second)
    assert status == 2 and "for the second" in err

    # SessionEnd (stop-waiting): the waiter stands down without taking the messages.
    third = start("claude-wait", checkout, env, claude_stop())
    assert still_waiting(third, 1.0)
    assert run(["sh", str(GUARD), "stop-waiting"], checkout, env).returncode == 0
    await say(server, room, "bob", "alice", "nobody is listening")
    assert finish(third) == (0, "", "")
    left = await call(server, "inbox", roomId=room, agentId="alice")
    assert [m["body"] for m in left["messages"]] == ["nobody is listening"]  # still unread


async def test_a_read_only_wait_key_leaves_the_agents_event_cursor_alone(
    server: RunningServer, checkout: Path, start: Start
) -> None:
    """Waiting with the agent's own key moves its event cursor past what happened meanwhile
    (wait_for_events is get_unread_events that waits); a read-only key reads with a cursor
    of its own, so the agent's get_unread_events still has the rest of it (the message the
    hook showed was read through inbox, and is not given again)."""
    room = new_room_id("wait-key")
    await arrive(server, room, "alice", "bob")
    async with httpx.AsyncClient(timeout=30) as http:
        minted = await http.post(
            f"{server.url}/api/v1/keys",
            json={"name": "alice's waiter", "readOnly": True},
            headers={"authorization": f"Bearer {TEAM_A_SECRET}"},
        )
    assert minted.status_code == 201, minted.text
    events = {"roomId": room, "agentId": "alice", "limit": 100}

    for wait_key, kept in ((minted.json()["secret"], True), ("", False)):
        await call(server, "get_unread_events", **events)  # alice has seen everything so far
        env = guard_env(
            server, room, ROOMSERVICE_WAIT_KEY=wait_key, ROOMSERVICE_WAIT_POLL_MS=POLL_MS
        )
        waiter = start("claude-wait", checkout, env, claude_stop())
        assert still_waiting(waiter, 1.0)
        await call(server, "add_task", roomId=room, title=f"task {kept}")
        await say(server, room, "bob", "alice", f"message {kept}")
        status, _, err = finish(waiter)
        assert status == 2 and f"message {kept}" in err
        seen = await call(server, "get_unread_events", **events)
        types = [e["type"] for e in seen["events"]]
        # The message was shown through inbox, so it is read for the agent's events too (one
        # read position per agent); what else happened is still unread only when the wait
        # used a cursor of its own.
        assert "message" not in types, types
        assert ("task_added" in types) is kept, types


async def test_the_waiting_modes_never_hold_an_agent_when_the_server_is_away(
    server: RunningServer, checkout: Path
) -> None:
    unconfigured = {k: v for k, v in os.environ.items() if not k.startswith("ROOMSERVICE_")}
    away = guard_env(server, new_room_id("wait"), ROOMSERVICE_URL="http://127.0.0.1:9")
    room = new_room_id("wait-badkey")
    await arrive(server, room, "alice")
    wrong_key = guard_env(server, room, ROOMSERVICE_WAIT_KEY="rs_live_not-a-key")
    for env, warning in (
        (unconfigured, "Roomservice hooks are off here"),
        (away, "did not answer"),
        (wrong_key, "wait_for_events failed"),
    ):
        for mode, payload, answer in (
            ("claude-wait", claude_stop(), ""),
            ("codex-wait", fixture("codex", "Stop.json"), ""),
            ("cursor-wait", fixture("cursor", "stop.json"), "{}\n"),
            ("wait", {}, ""),
        ):
            done = run(["sh", str(GUARD), mode], checkout, env, json.dumps(payload))
            assert done.returncode == 0, (mode, done.stderr)
            assert done.stdout == answer and warning in done.stderr, (mode, done)


# --- Lease on edit ---------------------------------------------------------------------------


def files(root: Path, *paths: str) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"{path}\n")


async def leases_of(server: RunningServer, room: str, agent: str) -> dict[str, dict[str, Any]]:
    listed = await call(server, "lease_list", roomId=room, agentId=agent)
    return {lease["path"]: lease for lease in listed["leases"]}


async def test_codex_post_edit_leases_every_file_the_patch_wrote(
    server: RunningServer, checkout: Path
) -> None:
    room = new_room_id("lease-codex")
    await arrive(server, room, "alice", "bob")
    files(checkout, "docs/notes.md", "src/app.py", "src/new_name.py")
    env = guard_env(server, room)
    payload = {**fixture("codex", "PostToolUse-apply_patch.json"), "cwd": str(checkout)}

    done = run(["sh", str(GUARD), "codex-post-edit"], checkout, env, json.dumps(payload))

    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done
    held = await leases_of(server, room, "alice")
    # Added, updated and moved-to files; not the moved-from name nor the deleted file.
    assert sorted(held) == ["docs/notes.md", "src/app.py", "src/new_name.py"]
    for lease in held.values():
        assert lease["mode"] == "exclusive" and lease["reason"] == "auto-lease: edited in Codex"
    # A patch from a subdirectory names paths from there; the lease is from the top.
    inner = {**payload, "cwd": str(checkout / "src")}
    inner["tool_input"] = {
        "command": "*** Begin Patch\n*** Update File: app.py\n@@\n-a\n+b\n*** End Patch\n"
    }
    again = run(["sh", str(GUARD), "codex-post-edit"], checkout / "src", env, json.dumps(inner))
    assert (again.returncode, again.stderr) == (0, "")  # renewing its own lease is quiet
    assert sorted(await leases_of(server, room, "alice")) == sorted(held)

    # Another agent's exclusive lease: a warning, never a failure; the rest still leased.
    await call(server, "lease_claim", roomId=room, agentId="bob", path="lib/**")
    files(checkout, "lib/util.py", "README.md")
    mixed = {
        **payload,
        "tool_input": {
            "command": (
                "*** Begin Patch\n*** Update File: lib/util.py\n@@\n-a\n+b\n"
                "*** Add File: README.md\n+hi\n*** End Patch\n"
            )
        },
    }
    warned = run(["sh", str(GUARD), "codex-post-edit"], checkout, env, json.dumps(mixed))
    assert warned.returncode == 0 and warned.stdout == ""
    assert (
        'lib/util.py was edited but not leased to alice: lib/util.py is held by "bob"'
        in warned.stderr
    )
    assert "README.md" in await leases_of(server, room, "alice")
    assert "lib/util.py" not in await leases_of(server, room, "alice")


async def test_cursor_after_edit_leases_the_edited_file(
    server: RunningServer, checkout: Path
) -> None:
    room = new_room_id("lease-cursor")
    await arrive(server, room, "alice", "bob")
    files(checkout, "src/main.ts", "vendor/lib.ts")
    env = guard_env(server, room, ROOMSERVICE_LEASE_SECONDS="120")

    def edit(path: Path) -> subprocess.CompletedProcess[str]:
        payload = {
            **fixture("cursor", "afterFileEdit.json"),
            "workspace_roots": [str(checkout)],
            "file_path": str(path),
        }
        return run(["sh", str(GUARD), "cursor-after-edit"], checkout, env, json.dumps(payload))

    done = edit(checkout / "src" / "main.ts")
    assert (done.returncode, done.stdout, done.stderr) == (0, "{}\n", ""), done
    lease = (await leases_of(server, room, "alice"))["src/main.ts"]
    assert lease["mode"] == "exclusive" and lease["reason"] == "auto-lease: edited in Cursor"

    await call(server, "lease_claim", roomId=room, agentId="bob", path="vendor/**")
    refused = edit(checkout / "vendor" / "lib.ts")
    assert (refused.returncode, refused.stdout) == (0, "{}\n")  # Cursor goes on
    assert "vendor/lib.ts was edited but not leased to alice" in refused.stderr
    outside = edit(Path("/etc/hosts"))  # not in the repository: nothing to lease
    assert (outside.returncode, outside.stdout, outside.stderr) == (0, "{}\n", "")


def test_install_claude_arms_the_waiter_in_the_background(checkout: Path) -> None:
    printed = run(["sh", str(GUARD), "install-claude"], checkout, dict(os.environ))
    assert printed.returncode == 0, printed.stderr
    hooks = json.loads(printed.stdout)["hooks"]
    [stop] = hooks["Stop"]
    waiter = stop["hooks"][1]
    assert waiter["command"].endswith("claude-wait")
    # asyncRewake wakes Claude on exit 2; async keeps a client that ignores it from waiting.
    assert (waiter["async"], waiter["asyncRewake"], waiter["timeout"]) == (True, True, 600)
    assert hooks["SessionEnd"][0]["hooks"][0]["command"].endswith("stop-waiting")
