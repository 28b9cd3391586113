"""Claude Code's HTTP hooks against the live service (POST /api/v1/rooms/<id>/hooks/claude-code,
docs/hooks.md "Claude Code over HTTP"): the payloads are the hooks reference's own examples
(tests/fixtures/hooks/claude-code), with only the session, the working directory and the
edited file's path put in. What the room holds is read back through the agent tools."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from calls import hooks
from config.embedded_redis import EmbeddedRedis
from dashboard.views.connect import claude_http_hooks
from rooms import schemas
from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, TEAM_B_SECRET, WEB_ONLY, RunningServer, start_server
from tests.e2e.test_push import mcp, mcp_call, mcp_error

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "claude-code"
CWD = "/home/alice/checkout"
OVERRIDES = ("ROOMSERVICE_ALLOW", "override", "lease_release", "bypass")
# ESC sequences, a bell, CR, C1 CSI, bidi overrides and isolates, zero-width characters, a BOM.
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\r\u009b31m\u202e\u2066\u200b\u2060\ufeff"
UNSEEN = ("\x1b", "\x07", "\r", "\u009b", "\u202e", "\u2066", "\u200b", "\u2060", "\ufeff")


def payload(name: str, *, session: str = "sess-0123456789abcdef", path: str | None = None) -> Any:
    """The reference's example `name`.json with this session, CWD and (an edit's) file."""
    body = json.loads((FIXTURES / f"{name}.json").read_text())
    body["session_id"] = session
    body["cwd"] = CWD
    if path is not None:
        field = "notebook_path" if "notebook_path" in body["tool_input"] else "file_path"
        body["tool_input"][field] = path
    return body


def in_cwd(relative: str) -> str:
    return f"{CWD}/{relative}"


async def hook(
    http: httpx.AsyncClient,
    server: RunningServer,
    room: str,
    body: Any,
    *,
    secret: str | None = TEAM_A_SECRET,
    agent: str | None = "alice",
    client: str = "claude-code",
    content: bytes | None = None,
    root: str | None = None,
) -> Any:
    """The hook's answer: always a 200 with a JSON object."""
    headers = {"Content-Type": "application/json"}
    if root is not None:
        headers["X-Roomservice-Root"] = root
    if secret is not None:
        headers["Authorization"] = f"Bearer {secret}"
    if agent is not None:
        headers["X-Roomservice-Agent"] = agent
    response = await http.post(
        f"{server.url}/api/v1/rooms/{room}/hooks/{client}",
        content=content if content is not None else json.dumps(body).encode(),
        headers=headers,
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert isinstance(answer, dict)
    return answer


async def leases_of(http: httpx.AsyncClient, server: RunningServer, room: str, agent: str) -> Any:
    return (await mcp(http, server.url, "lease_list", roomId=room, agentId=agent))["leases"]


def denial(answer: Any) -> str:
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny", answer
    reason: str = out["permissionDecisionReason"]
    return reason


# --- Before an edit -----------------------------------------------------------------------------


async def test_an_edit_of_a_file_another_agent_leases_exclusively_is_denied(
    server: RunningServer,
) -> None:
    room = new_room_id("hh-deny")
    async with httpx.AsyncClient(timeout=30) as http:
        held = await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/**")
        until = held["lease"]["expiresAt"]
        for name, path in (
            ("PreToolUse-Edit", in_cwd("src/app.py")),
            ("PreToolUse-Write", in_cwd("src/new.py")),
            ("PreToolUse-MultiEdit", in_cwd("src/deep/app.py")),
            ("PreToolUse-NotebookEdit", in_cwd("src/analysis.ipynb")),
            ("PreToolUse-Edit", "src/app.py"),  # relative to cwd
        ):
            answer = await hook(http, server, room, payload(name, path=path))
            reason = denial(answer)
            assert "bob" in reason and "src/**" in reason and until in reason, reason
            assert "send_message" in reason  # what to do instead: agree with the holder
            assert not [word for word in OVERRIDES if word.lower() in reason.lower()], reason
            assert "allow" not in json.dumps(answer)


async def test_a_free_path_an_own_lease_or_a_shared_one_get_no_decision_never_allow(
    server: RunningServer,
) -> None:
    room = new_room_id("hh-free")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/**")
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
        for path in (
            in_cwd("README.md"),  # free
            in_cwd("lib/util.py"),  # alice's own
            in_cwd("docs/guide.md"),  # shared
            "/elsewhere/src/app.py",  # outside cwd: never read as src/app.py
            in_cwd("../other/src/app.py"),
        ):
            assert await hook(http, server, room, payload("PreToolUse-Edit", path=path)) == {}
        read = payload("PreToolUse-Edit", path=in_cwd("src/app.py"))
        read["tool_name"] = "Read"  # reading a leased file is never refused
        assert await hook(http, server, room, read) == {}
        assert "hookSpecificOutput" in await hook(  # and the same edit is, beside them
            http, server, room, payload("PreToolUse-Edit", path=in_cwd("src/app.py"))
        )


# --- After an edit ------------------------------------------------------------------------------


async def test_an_edit_leases_the_file_to_the_agent_for_its_task_and_renews_it(
    server: RunningServer,
) -> None:
    room = new_room_id("hh-lease")
    session = "f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
    async with httpx.AsyncClient(timeout=30) as http:
        task = await mcp(http, server.url, "add_task", roomId=room, title="the api")
        await mcp(http, server.url, "claim_task", roomId=room, taskId=task["id"], agentId="alice")
        edit = payload("PostToolUse-Edit", session=session, path=in_cwd("src/api.py"))

        assert await hook(http, server, room, edit) == {}

        [lease] = await leases_of(http, server, room, "alice")
        assert (lease["path"], lease["mode"], lease["taskId"]) == (
            "src/api.py",
            "exclusive",
            task["id"],
        )
        assert lease["reason"] == "auto-lease: edited in Claude Code session f3b1c2d4-5e6"
        # Another agent's edit of it is now refused before it happens.
        refused = await hook(
            http, server, room, payload("PreToolUse-Edit", path=in_cwd("src/api.py")), agent="bob"
        )
        assert "alice" in denial(refused)

        assert await hook(http, server, room, edit) == {}  # a later edit renews it

        [renewed] = await leases_of(http, server, room, "alice")
        assert renewed["id"] == lease["id"] and renewed["expiresAt"] > lease["expiresAt"]

        # The task done ends the task's leases.
        await mcp(
            http,
            server.url,
            "update_task",
            roomId=room,
            taskId=task["id"],
            status="done",
            agentId="alice",
        )
        assert await leases_of(http, server, room, "alice") == []


async def test_an_edit_of_a_file_another_agent_holds_says_who_holds_it(
    server: RunningServer,
) -> None:
    room = new_room_id("hh-held")
    async with httpx.AsyncClient(timeout=30) as http:
        held = await mcp(
            http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/*", mode="shared"
        )
        answer = await hook(
            http, server, room, payload("PostToolUse-Write", path=in_cwd("src/app.py"))
        )
        out = answer["hookSpecificOutput"]
        assert out["hookEventName"] == "PostToolUse"
        assert '"bob" (shared, src/*)' in out["additionalContext"]
        assert held["lease"]["expiresAt"] in out["additionalContext"]
        assert await leases_of(http, server, room, "alice") == []  # no lease beside bob's


async def test_session_end_releases_only_that_sessions_automatic_leases(
    server: RunningServer,
) -> None:
    room = new_room_id("hh-end")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(
            http,
            server.url,
            "lease_claim",
            roomId=room,
            agentId="alice",
            path="docs/**",
            reason="mine",
        )
        await mcp(
            http,
            server.url,
            "lease_claim",
            roomId=room,
            agentId="alice",
            path="lib/c.py",
            reason="mine",
        )
        for session, path in (("session-one-0001", "src/a.py"), ("session-two-0002", "src/b.py")):
            edit = payload("PostToolUse-Edit", session=session, path=in_cwd(path))
            assert await hook(http, server, room, edit) == {}
        # A file alice leased herself stays her own lease: the hook neither renames nor ends it.
        covered = payload("PostToolUse-Edit", session="session-one-0001", path=in_cwd("lib/c.py"))
        assert await hook(http, server, room, covered) == {}
        assert len(await leases_of(http, server, room, "alice")) == 4

        assert (
            await hook(http, server, room, payload("SessionEnd", session="session-one-0001")) == {}
        )

        left = {
            (lease["path"], lease["reason"])
            for lease in await leases_of(http, server, room, "alice")
        }
        assert left == {
            ("docs/**", "mine"),
            ("lib/c.py", "mine"),
            ("src/b.py", "auto-lease: edited in Claude Code session session-two-"),
        }


async def test_session_end_marks_the_agent_idle(server: RunningServer) -> None:
    # Waits on heartbeat's optional `idle` argument (rooms/schemas.py HeartbeatInput), which
    # lands with the presence tiers of issue 24; until then the hook's heartbeat is refused
    # (logged) and this one assertion cannot hold.
    if "idle" not in schemas.HeartbeatInput.model_fields:
        pytest.skip("heartbeat(idle) is not in rooms/schemas.py HeartbeatInput yet")
    room = new_room_id("hh-idle")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "heartbeat", roomId=room, agentId="alice")
        assert await hook(http, server, room, payload("SessionEnd")) == {}
        presence = await mcp(http, server.url, "get_presence", roomId=room)
    [alice] = [a for a in presence if a["agentId"] == "alice"]
    assert alice["state"] == "idle"


# --- Messages: session start and stop -----------------------------------------------------------


async def bob_tells_alice(
    http: httpx.AsyncClient, server: RunningServer, room: str, **more: Any
) -> Any:
    for agent in ("alice", "bob"):
        await mcp(http, server.url, "heartbeat", roomId=room, agentId=agent)
    return await mcp(
        http, server.url, "send_message", roomId=room, to="alice", **{"from": "bob"}, **more
    )


async def test_stop_keeps_the_agent_going_once_with_its_unread_messages(
    server: RunningServer,
) -> None:
    room = new_room_id("hh-stop")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "heartbeat", roomId=room, agentId="alice")
        assert await hook(http, server, room, payload("Stop")) == {}  # nothing waiting
        sent = await bob_tells_alice(
            http, server, room, body="please review src/api.py", subject="review", ackRequired=True
        )
        # Already going on because of a Stop hook: no hold, and the message stays unread.
        assert await hook(http, server, room, payload("Stop-active")) == {}

        held = await hook(http, server, room, payload("Stop"))

        assert held["decision"] == "block"
        reason = held["reason"]
        assert "please review src/api.py" in reason and 'From bob, subject "review"' in reason
        assert sent["messageId"] in reason
        assert f"answer with send_message (replyTo {sent['messageId']})" in reason
        assert await hook(http, server, room, payload("Stop")) == {}  # read now: it may stop


async def test_session_start_tells_the_agent_its_tasks_messages_contracts_and_who_works_on_what(
    server: RunningServer,
) -> None:
    room = new_room_id("hh-start")
    async with httpx.AsyncClient(timeout=30) as http:
        mine = await mcp(http, server.url, "add_task", roomId=room, title="build the client")
        await mcp(http, server.url, "claim_task", roomId=room, taskId=mine["id"], agentId="alice")
        theirs = await mcp(http, server.url, "add_task", roomId=room, title="build the api")
        await mcp(http, server.url, "claim_task", roomId=room, taskId=theirs["id"], agentId="bob")
        contract = await mcp(
            http,
            server.url,
            "write_context",
            roomId=room,
            type="api_contract",
            summary="orders api v1",
            consuming_agents=["alice"],
            author="bob",
            payload={
                "service": "orders",
                "version": "1",
                "endpoints": [
                    {
                        "method": "GET",
                        "path": "/orders",
                        "response": {"type": "array"},
                        "auth_required": True,
                        "description": "list",
                    }
                ],
            },
        )
        await bob_tells_alice(http, server, room, body=f"the schema moved{HOSTILE} to v2")

        context = await session_start(http, server, room)

        assert context.startswith(f'Roomservice room "{room}": you are "alice".')
        assert f"- {mine['id']} [in_progress] build the client" in context
        assert "From bob (messageId" in context and "the schema moved" in context
        assert f"- {contract['id']} v1.0 by bob: orders api v1" in context
        assert f"- bob: {theirs['id']} build the api" in context
        assert not [c for c in UNSEEN if c in context], context
        assert len(context) <= 2_000

        # Now read: the message is not told twice, the contract not while alice is current.
        await mcp(http, server.url, "read_context", roomId=room, id=contract["id"], agentId="alice")
        again = await session_start(http, server, room)
        assert "the schema moved" not in again and contract["id"] not in again
        await mcp(
            http,
            server.url,
            "update_context",
            roomId=room,
            id=contract["id"],
            author="bob",
            summary="orders api v1.1",
        )
        assert f"- {contract['id']} v1.1 by bob: orders api v1.1" in await session_start(
            http, server, room
        )


async def session_start(http: httpx.AsyncClient, server: RunningServer, room: str) -> str:
    answer = await hook(http, server, room, payload("SessionStart"))
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    context: str = out["additionalContext"]
    return context


async def test_the_session_start_command_the_connect_page_gives_posts_to_the_room(
    server: RunningServer,
) -> None:
    """Claude Code runs only command hooks at SessionStart: the page's curl command, run as
    Claude Code runs it (sh -c, the payload on stdin, the key in the environment)."""
    room = new_room_id("hh-curl")
    url = f"{server.url}/api/v1/rooms/{room}/hooks/claude-code"
    [entry] = json.loads(claude_http_hooks(url, "alice"))["hooks"]["SessionStart"]
    command = entry["hooks"][0]["command"]
    env = {**os.environ, "ROOMSERVICE_KEY": TEAM_A_SECRET}  # the agent's name is written in
    async with httpx.AsyncClient(timeout=30) as http:
        await bob_tells_alice(http, server, room, body="hello from bob")

    def run(command: str) -> subprocess.CompletedProcess[str]:
        stdin = json.dumps(payload("SessionStart"))
        return subprocess.run(
            ["sh", "-c", command], input=stdin, env=env, capture_output=True, text=True, timeout=60
        )

    done = run(command)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "hello from bob" in context
    away = run(command.replace(server.url, "http://127.0.0.1:9"))
    assert (away.returncode, away.stdout) == (0, "")  # a server away adds nothing, blocks nothing


async def test_a_long_orientation_is_cut_with_how_many_more(server: RunningServer) -> None:
    room = new_room_id("hh-long")
    async with httpx.AsyncClient(timeout=30) as http:
        for i in range(12):
            task = await mcp(
                http, server.url, "add_task", roomId=room, title=f"task {i} " + "x" * 150
            )
            owner = "alice" if i % 2 else f"agent-{i}"
            await mcp(http, server.url, "claim_task", roomId=room, taskId=task["id"], agentId=owner)
        context = await session_start(http, server, room)
    assert len(context) <= 2_000
    assert "…and 1 more (get_my_summary)" in context  # 6 of alice's tasks, 5 shown
    assert "…and" in context.splitlines()[-1]


# --- The room's switches ------------------------------------------------------------------------


def switches_landed() -> bool:
    fields = schemas.SetRoomModeInput.model_fields
    return "autoLeases" in fields and "editRefusals" in fields


@pytest.mark.skipif(
    not switches_landed(),
    reason="set_room_mode(autoLeases, editRefusals) is not in rooms/schemas.py "
    "SetRoomModeInput yet",
)
async def test_the_rooms_switches_turn_automatic_leases_and_edit_refusals_off(
    server: RunningServer,
) -> None:
    room = new_room_id("hh-switch")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/**")
        await mcp(http, server.url, "set_room_mode", roomId=room, agentId="alice", autoLeases=False)
        edit = payload("PostToolUse-Edit", path=in_cwd("lib/x.py"))
        assert await hook(http, server, room, edit) == {}
        assert await leases_of(http, server, room, "alice") == []
        before = payload("PreToolUse-Edit", path=in_cwd("src/app.py"))
        assert "hookSpecificOutput" in await hook(http, server, room, before)  # still refused

        await mcp(
            http, server.url, "set_room_mode", roomId=room, agentId="alice", editRefusals=False
        )

        assert await hook(http, server, room, before) == {}
        await mcp(http, server.url, "set_room_mode", roomId=room, agentId="alice", autoLeases=True)
        assert await hook(http, server, room, edit) == {}
        assert [lease["path"] for lease in await leases_of(http, server, room, "alice")] == [
            "lib/x.py"
        ]


async def test_the_same_file_spelled_differently_is_still_refused(server: RunningServer) -> None:
    """P6: the attacker (or an honest agent) names a leased file from a session started in a
    subfolder, or in another letter case (one file on macOS and Windows)."""
    room = new_room_id("hh-spelled")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(
            http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/api/users.py"
        )
        for cwd, file_path in (
            (f"{CWD}/src", f"{CWD}/src/api/users.py"),  # a session started in src/
            (f"{CWD}/src/api", "users.py"),  # relative to it
            (CWD, f"{CWD}/SRC/Api/Users.py"),  # another letter case
            (f"{CWD}/src", f"{CWD}/src/API/users.PY"),
        ):
            body = {**payload("PreToolUse-Write", path=file_path), "cwd": cwd}
            answer = await hook(http, server, room, body, root="/home/alice/checkout")
            assert "leased exclusively by bob" in denial(answer), (cwd, file_path)

        # The legitimate path beside it: a free file edited from the subfolder is leased by its
        # path from the checkout's top, its letter case kept; the root may be percent-encoded.
        edit = {
            **payload("PostToolUse-Write", path=f"{CWD}/src/api/NewThing.py"),
            "cwd": f"{CWD}/src",
        }
        assert await hook(http, server, room, edit, root="/home/alice/check%6Fut") == {}
        assert [x["path"] for x in await leases_of(http, server, room, "alice")] == [
            "src/api/NewThing.py"
        ]
        free = {**payload("PreToolUse-Write", path=f"{CWD}/src/api/other.py"), "cwd": f"{CWD}/src"}
        assert await hook(http, server, room, free, root=CWD) == {}


# --- Whatever goes wrong is "no decision", and writes nothing -------------------------------------


def told(answer: Any, notice: str) -> None:
    """The answer decides nothing and only tells the person `notice`."""
    assert answer == {"systemMessage": notice}, answer
    assert TEAM_A_SECRET not in notice and TEAM_B_SECRET not in notice


async def test_a_bad_body_an_unknown_event_or_client_is_no_decision(server: RunningServer) -> None:
    room = new_room_id("hh-bad")
    edit = payload("PostToolUse-Edit", path=in_cwd("src/app.py"))
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "heartbeat", roomId=room, agentId="carol")  # the room exists
        unknown_event = {**edit, "hook_event_name": "PreCompact"}
        no_path = {**edit, "tool_input": {"old_string": "a"}}
        for answer in (
            await hook(http, server, room, None, content=b"not json"),
            await hook(http, server, room, None, content=b"[1, 2]"),
            await hook(http, server, room, None, content=b"[" * 100_000),
            await hook(http, server, room, unknown_event),
            await hook(http, server, room, no_path),
            await hook(http, server, room, {k: v for k, v in edit.items() if k != "session_id"}),
            await hook(http, server, room, edit, client="cursor"),
        ):
            assert answer == {}
        # Over 1 MB: 413 before the body is read (config.body_limit), which Claude Code also
        # takes as a non-blocking error.
        big = b'{"a": "' + b"x" * 1_000_001 + b'"}'
        url = f"{server.url}/api/v1/rooms/{room}/hooks/claude-code"
        assert (await http.post(url, content=big)).status_code == 413
        assert (await mcp(http, server.url, "lease_list", roomId=room))["leases"] == []


@pytest.mark.parametrize(
    ("secret", "agent", "notice"),
    [
        (None, "alice", hooks.NOTICE_KEY),
        ("rs_live_not-a-key-0123456789", "alice", hooks.NOTICE_KEY),
        (TEAM_A_SECRET, None, hooks.NOTICE_NO_AGENT),  # the README's old setup: no agent
        (TEAM_A_SECRET, "", hooks.NOTICE_NO_AGENT),
        (
            TEAM_A_SECRET,
            "person:ann@example.com",
            hooks.NOTICE_AGENT_PERSON.format(given="person:ann@example.com"),
        ),
    ],
)
async def test_hooks_that_cannot_act_tell_the_person_once_a_session_and_decide_nothing(
    server: RunningServer, secret: str | None, agent: str | None, notice: str
) -> None:
    room = new_room_id("hh-told")
    session = new_room_id("sess")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/**")
        start = await hook(
            http, server, room, payload("SessionStart", session=session), secret=secret, agent=agent
        )
        told(start, notice)
        for name, path in (("PreToolUse-Edit", "src/app.py"), ("PostToolUse-Edit", "lib/x.py")):
            again = payload(name, session=session, path=in_cwd(path))
            assert await hook(http, server, room, again, secret=secret, agent=agent) == {}
        # Another session is told again; the room is untouched.
        other = payload("Stop", session=session + "-2")
        told(await hook(http, server, room, other, secret=secret, agent=agent), notice)
        assert [x["holder"] for x in await leases_of(http, server, room, "bob")] == ["bob"]
        assert await mcp(http, server.url, "lease_list", roomId=room, agentId="alice") == {
            "leases": [],
            "count": 0,
        }


async def test_an_unknown_room_is_no_decision_and_is_not_created(server: RunningServer) -> None:
    room = new_room_id("hh-nobody")
    session = new_room_id("sess-nobody")
    async with httpx.AsyncClient(timeout=30) as http:
        edit = payload("PostToolUse-Edit", path=in_cwd("a.py"), session=session)
        told(await hook(http, server, room, edit), hooks.NOTICE_ROOM.format(room=room))
        for name in ("SessionStart", "Stop", "SessionEnd"):
            body = payload(name, session=session)
            assert await hook(http, server, room, body) == {}  # told once this session
        rooms = await mcp(http, server.url, "list_rooms")
    assert room not in {r["roomId"] for r in rooms}


async def test_another_teams_key_on_a_room_gets_no_decision_and_changes_nothing(
    server: RunningServer,
) -> None:
    room = new_room_id("hh-cross")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/**")
        task = await mcp(http, server.url, "add_task", roomId=room, title="secret plan of team a")
        await mcp(http, server.url, "claim_task", roomId=room, taskId=task["id"], agentId="bob")
        await bob_tells_alice(http, server, room, body="team a's secret")
        before = await mcp(http, server.url, "lease_list", roomId=room)

        session = new_room_id("sess-b")
        for number, (name, path) in enumerate(
            (
                ("PreToolUse-Edit", in_cwd("src/app.py")),
                ("PostToolUse-Edit", in_cwd("lib/x.py")),
                ("SessionStart", None),
                ("Stop", None),
                ("SessionEnd", None),
            )
        ):
            body = payload(name, path=path, session=session)
            answer = await hook(http, server, room, body, secret=TEAM_B_SECRET)
            if number == 0:  # the same words as for a room that does not exist
                told(answer, hooks.NOTICE_ROOM.format(room=room))
            else:
                assert answer == {}, (name, answer)

        assert await mcp(http, server.url, "lease_list", roomId=room) == before
        # Beside it, team A's own hooks work: the message is still unread, the lease refuses.
        held = await hook(http, server, room, payload("Stop"))
        assert "team a's secret" in held["reason"]
        assert "bob" in denial(
            await hook(http, server, room, payload("PreToolUse-Edit", path=in_cwd("src/app.py")))
        )
        refused = mcp_error(
            await mcp_call(http, server.url, "lease_list", {"roomId": room}, TEAM_B_SECRET)
        )
        assert "src/**" not in refused


@pytest.fixture(scope="module")
def thrifty_server() -> Iterator[RunningServer]:
    """A server where team keys get 4 calls a minute (its budgets under keys of its own)."""
    prefix = os.environ.get("REDIS_KEY_PREFIX", "rs") + "-thrifty"
    running = start_server({"RATE_LIMIT_PER_MINUTE": "4", "REDIS_KEY_PREFIX": prefix, **WEB_ONLY})
    yield running
    running.stop()


async def test_an_exhausted_budget_is_no_decision(thrifty_server: RunningServer) -> None:
    room = new_room_id("hh-budget")
    async with httpx.AsyncClient(timeout=30) as http:
        await mcp(
            http, thrifty_server.url, "lease_claim", roomId=room, agentId="bob", path="src/**"
        )
        before = payload("PreToolUse-Edit", path=in_cwd("src/app.py"))
        answers = [await hook(http, thrifty_server, room, before) for _ in range(5)]
    assert "hookSpecificOutput" in answers[0]
    # Over the limit: no decision, not an error; the person is told why, once.
    notices = [a["systemMessage"] for a in answers if "systemMessage" in a]
    assert len(notices) == 1 and notices[0].startswith("Roomservice hooks could not act: ")
    assert answers[-1] == {}


@pytest.mark.single_redis
async def test_a_store_outage_is_no_decision() -> None:
    own = EmbeddedRedis(folder=Path(tempfile.mkdtemp(prefix="rs-hooks-")), persistent=False)
    url = own.start()
    server = start_server({"REDIS_URL": url, **WEB_ONLY})
    try:
        room = new_room_id("hh-outage")
        before = payload("PreToolUse-Edit", path=in_cwd("src/app.py"))
        async with httpx.AsyncClient(timeout=30) as http:
            await mcp(http, server.url, "lease_claim", roomId=room, agentId="bob", path="src/**")
            assert "hookSpecificOutput" in await hook(http, server, room, before)

            own.stop()  # Redis goes away

            after = payload("PostToolUse-Edit", path=in_cwd("lib/x.py"))
            for body in (before, after, payload("Stop")):
                assert await hook(http, server, room, body) == {}
            # Only a session's start says that the hooks cannot reach the room.
            told(await hook(http, server, room, payload("SessionStart")), hooks.NOTICE_STORE)
    finally:
        server.stop()
        own.stop()
