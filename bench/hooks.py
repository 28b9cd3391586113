"""`make bench` section "hooks" (issue 24, point 6): what a hook costs an agent.

1. Hook round trips: POST /api/v1/rooms/<roomId>/hooks/claude-code with the bench team's
   key and X-Roomservice-Agent, the hooks reference's own payloads (tests/fixtures/hooks/
   claude-code, with the session, cwd and file put in as tests/e2e/test_hooks_http.py does),
   one call at a time on one keep-alive connection, the six kinds in turn: PreToolUse on a
   free path (no decision), PreToolUse on a path another agent leases exclusively (deny),
   PostToolUse (an auto-lease, then its renewal), Stop with nothing unread, Stop with one
   unread message (sent, untimed, before each call), SessionStart. Every answer is checked
   (deny names the holder, the Stop holds with exactly that message, ...). p50 / p99 / max,
   and how far the worst p99 is under the hook `timeout` the Connect page sets (10 s).
2. What "every act is presence" (point 1) adds to a write: the post_event step run both ways
   (its call's envelope naming an acting agent or not: rooms/store/engine.py
   `call_envelope`; the script through the engine's `script_source`), with the keys and
   arguments rooms/store/events.py `event_append` and the engine's `run_write` give it, run
   by EVALSHA straight into the bench server's Redis; Redis's own time per call from INFO
   commandstats (cmdstat_evalsha, the change over each run). The agent holds nothing, 1
   leased claim + 1 file lease, or HOLDS_MAX (64) file leases, all taken through the tools
   first. A term is rewritten only once a tenth of it has passed, so at the real clock a
   busy agent's acts rewrite nothing; the "rewrite" runs pass a `now` that moves on by more
   than a tenth of the term every call, so every call rewrites everything held. It runs in a
   child process with the server's settings (so the keys and arguments are the service's
   own). End to end: update_task with and without agentId (the only difference: the present
   wrapper), latency and server CPU per call.
3. Wake latency: hooks/roomservice-guard claude-wait (docs/hooks.md "Waking an idle
   agent") in a git checkout of its own; once its wait_for_events curl is running, a
   message to its agent; the time from just before the send to the waiter's exit 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench import floor, server, wire
from bench.stats import percentile

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "hooks" / "claude-code"
GUARD = ROOT / "hooks" / "roomservice-guard"
CWD = "/home/bench/checkout"
AGENT, HOLDER, SENDER = "alice", "bob", "carol"

WARM = 20
CALLS = 300
# The Connect page's `timeout` for every hook it writes (dashboard/views/connect.py
# HOOK_TIMEOUT_SECONDS); it is the one that applies.
CONNECT_TIMEOUT_S = 10.0
# Claude Code's own default for an http hook with no `timeout`, as third-party summaries of
# the hooks reference give it (the reference gives 600 s for command hooks).
HTTP_DEFAULT_TIMEOUT_S = 30.0

PRESENCE_CALLS = 2_000  # per variant, in PRESENCE_ROUNDS rounds taking turns
PRESENCE_ROUNDS = 5
PRESENCE_WARM = 50
TERM_S = 300  # the holdings' term (claim leaseSeconds, lease ttlSeconds)
HOLDS_MAX = 64  # rooms/scripts.py HOLDS_MAX (not imported: it needs no Django here)
E2E_BLOCKS = 10
E2E_BLOCK = 50

WAKE_RUNS = 20
WAKE_POLL_MS = 20_000  # the waiter's poll: a wake from a poll ending would take this long
WAKE_SETTLE_S = 0.2  # after its wait_for_events curl has started: time to reach the server
WAKE_TARGET_S = 1.0  # the "within 1 s"


class Fails(Protocol):
    def add(self, check: str, detail: str = "", n: int = 1) -> None: ...


@dataclass
class Kind:
    key: str
    label: str
    ms: list[float] = field(default_factory=list)
    failed: int = 0


@dataclass
class HookFigures:
    kinds: list[Kind] = field(default_factory=list)
    # variant -> {"usec": per call, "calls", "holds", "rewrote"}
    presence: dict[str, dict[str, Any]] = field(default_factory=dict)
    presence_problem: str = ""
    e2e_ms: dict[str, list[float]] = field(default_factory=dict)  # "with" / "without"
    e2e_cpu_ms: dict[str, float] = field(default_factory=dict)
    wake_ms: list[float] = field(default_factory=list)
    wake_runs: int = 0
    wake_failed: int = 0


# --- 1. Hook round trips -------------------------------------------------------------------


def payload(name: str, session: str, path: str | None = None) -> dict[str, Any]:
    """The reference's example `name`.json with this session, CWD and (an edit's) file."""
    body: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    body["session_id"] = session
    body["cwd"] = CWD
    if path is not None:
        body["tool_input"]["file_path"] = f"{CWD}/{path}"
    return body


def _hook_request(ep: wire.McpEndpoint, room: str, body: dict[str, Any]) -> bytes:
    return wire.build_request(
        "POST",
        ep.host,
        ep.port,
        f"/api/v1/rooms/{room}/hooks/claude-code",
        headers={
            "Authorization": f"Bearer {ep.token}",
            "X-Roomservice-Agent": AGENT,
            "Content-Type": "application/json",
        },
        body=json.dumps(body).encode(),
    )


def _deny(answer: Any) -> bool:
    out = answer.get("hookSpecificOutput") or {}
    reason = str(out.get("permissionDecisionReason", ""))
    return out.get("permissionDecision") == "deny" and HOLDER in reason and "locked/**" in reason


async def _call(conn: wire.Connection, ep: wire.McpEndpoint, tool: str, **args: Any) -> Any:
    res = await wire.call_tool(conn, ep, tool, args)
    if not res.ok:
        raise RuntimeError(f"hooks setup: {res.describe()}")
    return res.value


async def round_trips(ep: wire.McpEndpoint, fig: HookFigures, fails: Fails) -> None:
    room = f"bench-hooks-{secrets.token_hex(4)}"
    session = f"bench-{secrets.token_hex(8)}"
    conn = ep.connection()
    hook_conn = ep.connection()
    try:
        for agent in (AGENT, HOLDER, SENDER):
            await _call(conn, ep, "heartbeat", roomId=room, agentId=agent)
        await _call(
            conn, ep, "lease_claim", roomId=room, agentId=HOLDER, path="locked/**", ttlSeconds=3600
        )
        kinds: list[tuple[Kind, dict[str, Any]]] = [
            (
                Kind("pre_free", "PreToolUse, free path"),
                payload("PreToolUse-Edit", session, "free/a.py"),
            ),
            (
                Kind("pre_deny", "PreToolUse, leased by another (deny)"),
                payload("PreToolUse-Edit", session, "locked/a.py"),
            ),
            (
                Kind("post", "PostToolUse (auto-lease, renewed)"),
                payload("PostToolUse-Edit", session, "src/edited.py"),
            ),
            (Kind("stop_none", "Stop, nothing unread"), payload("Stop", session)),
            (Kind("stop_one", "Stop, one unread message"), payload("Stop", session)),
            (Kind("start", "SessionStart (orientation)"), payload("SessionStart", session)),
        ]
        fig.kinds = [k for k, _ in kinds]
        raws = {k.key: _hook_request(ep, room, body) for k, body in kinds}
        for i in range(WARM + CALLS):
            for kind, _ in kinds:
                token = ""
                if kind.key == "stop_one":
                    token = f"bench note {i} {secrets.token_hex(3)}"
                    await _call(
                        conn,
                        ep,
                        "send_message",
                        roomId=room,
                        to=AGENT,
                        body=token,
                        **{"from": SENDER},
                    )
                t0 = time.perf_counter()
                try:
                    resp = await hook_conn.request(raws[kind.key])
                except wire.HttpError as exc:
                    kind.failed += 1
                    fails.add(f"hooks: {kind.label}", str(exc))
                    continue
                dt = time.perf_counter() - t0
                problem = _check(kind.key, resp, token)
                if problem:
                    kind.failed += 1
                    fails.add(f"hooks: {kind.label}: wrong answer", problem)
                elif i >= WARM:
                    kind.ms.append(1000 * dt)
        leases = (await _call(conn, ep, "lease_list", roomId=room, agentId=AGENT))["leases"]
        mine = [x for x in leases if x["holder"] == AGENT]
        if [x["path"] for x in mine] != ["src/edited.py"]:
            fails.add(
                "hooks: PostToolUse did not leave exactly one auto-lease", json.dumps(mine)[:400]
            )
    finally:
        await conn.close()
        await hook_conn.close()


def _check(key: str, resp: wire.Response, token: str) -> str:
    """What is wrong with a hook's answer ("" when it is what it should be)."""
    if resp.status != 200:
        return f"HTTP {resp.status} {resp.body[:300]!r}"
    try:
        answer = json.loads(resp.body)
    except ValueError:
        return f"not JSON: {resp.body[:300]!r}"
    if not isinstance(answer, dict):
        return f"not a JSON object: {resp.body[:300]!r}"
    ok = {
        "pre_free": answer == {},
        "pre_deny": _deny(answer),
        "post": answer == {},
        "stop_none": answer == {},
        "stop_one": answer.get("decision") == "block"
        and f"1 unread message for {AGENT}" in str(answer.get("reason"))
        and token in str(answer.get("reason")),
        "start": str(
            (answer.get("hookSpecificOutput") or {}).get("additionalContext", "")
        ).startswith("Roomservice room"),
    }[key]
    return "" if ok else json.dumps(answer)[:400]


# --- 2. What presence adds to a write ------------------------------------------------------


async def presence_setup(ep: wire.McpEndpoint) -> dict[str, Any]:
    """A room where p-off, p-none, p-one (a leased claim and a file lease) and p-many
    (HOLDS_MAX file leases) have done what they hold through the tools."""
    room = f"bench-presence-{secrets.token_hex(4)}"
    conn = ep.connection()
    try:
        for agent in ("p-off", "p-none", "p-one", "p-many"):
            await _call(conn, ep, "heartbeat", roomId=room, agentId=agent)
        task = await _call(conn, ep, "add_task", roomId=room, title="held")
        await _call(
            conn,
            ep,
            "claim_task",
            roomId=room,
            taskId=task["id"],
            agentId="p-one",
            leaseSeconds=TERM_S,
        )
        await _call(
            conn,
            ep,
            "lease_claim",
            roomId=room,
            agentId="p-one",
            path="one/a.py",
            ttlSeconds=TERM_S,
        )
        for n in range(HOLDS_MAX):
            await _call(
                conn,
                ep,
                "lease_claim",
                roomId=room,
                agentId="p-many",
                path=f"many/f{n:02d}.py",
                ttlSeconds=TERM_S,
            )
    finally:
        await conn.close()
    return {"room": room}


# (label, agent, present, the clock moves on by over a tenth of the term each call)
VARIANTS = (
    ("without present", "p-off", False, False),
    ("present, holding nothing", "p-none", True, False),
    ("present, 1 claim + 1 lease, no rewrite", "p-one", True, False),
    ("present, 1 claim + 1 lease, rewrite", "p-one", True, True),
    (f"present, {HOLDS_MAX} leases, no rewrite", "p-many", True, False),
    (f"present, {HOLDS_MAX} leases, rewrite", "p-many", True, True),
)


def presence_costs(srv: server.BenchServer, room: str) -> dict[str, dict[str, Any]]:
    """Runs `python -m bench.hooks` with the server's settings (its key prefix, its Redis)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "REDIS_KEY_PREFIX": srv.key_prefix,
        "REDIS_URL": srv.redis_url,
        "ROOMSERVICE_VAR_DIR": str(srv.var_dir),
    }
    spec = {"redis_url": srv.redis_url, "room": room}
    done = subprocess.run(
        [sys.executable, "-m", "bench.hooks"],
        cwd=ROOT,
        env=env,
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench.hooks (presence) failed: {done.stderr[-2000:]}")
    found: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return found


def post_event_step(
    room_id: str, agent: str, *, present: bool, now_ms: int | None = None
) -> tuple[str, list[str], list[Any]]:
    """The post_event write step as rooms/store/events.py `event_append` and the engine's
    `run_write` build it for a post by `agent` to all, without an idempotencyKey or a trace:
    (the script as Redis runs it, KEYS, ARGV). `present`: the call's envelope names `agent`
    as acting (the present wrapper acts), at `now_ms` (the clock's now when None).
    tests/test_bench_steps.py runs it against a real room, so a change of the step's
    arguments fails there, not in `make bench`."""
    from rooms import lua, scripts, turns
    from rooms.keys import RoomKeys
    from rooms.store.engine import (
        call_envelope,
        event_args,
        event_keys,
        idle_ttl_ms,
        room_tail,
        script_source,
    )

    room = RoomKeys(room_id)
    script = script_source(lua.write_step(scripts.POST_EVENT_SCRIPT, wrote="ok", post=True))
    envelope = json.loads(
        call_envelope(
            keyed=None, turn=turns.turn_of_post(agent, "all"), actor=agent if present else None
        )
    )
    if present and now_ms is not None:
        envelope["present"]["now"] = now_ms
    args: list[Any] = [
        "bench_presence",
        agent,
        "all",
        '{"i":1}',
        "",
        idle_ttl_ms(),
        *event_args(room),
        json.dumps(envelope),
    ]
    return script, [*event_keys(room), *room_tail(room)], args


def _presence_here(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """In the child: the post_event step with and without its present wrapper, EVALSHA."""
    import django

    django.setup()
    import redis

    from rooms import clock, scripts
    from rooms.keys import RoomKeys

    assert scripts.HOLDS_MAX == HOLDS_MAX, "rooms/scripts.py HOLDS_MAX changed"
    r = redis.Redis.from_url(spec["redis_url"])
    room = RoomKeys(spec["room"])
    steps = {
        flag: post_event_step(spec["room"], VARIANTS[0][1], present=flag) for flag in (False, True)
    }
    shas = {flag: r.script_load(script) for flag, (script, _, _) in steps.items()}
    keys = steps[False][1]
    step_ms = TERM_S * 100 + 1_000  # a tenth of the term, and a second
    moved = {agent: clock.now_ms() for _, agent, _, _ in VARIANTS}

    def arguments(agent: str, present: bool, advance: bool) -> list[Any]:
        if present and advance:
            moved[agent] += step_ms
        now = moved[agent] if advance else None
        return post_event_step(spec["room"], agent, present=present, now_ms=now)[2]

    def held(agent: str) -> list[str]:
        raw = r.hget(room.holds, agent)
        return list(json.loads(raw)) if raw else []

    def terms(agent: str) -> list[Any]:
        """When each thing the agent holds ends, as Redis has it now."""
        out: list[Any] = []
        for entry in held(agent):
            ident = entry.split(":")[1]  # "c:<task id>", "l:<lease id>:<term ms>"
            if entry.startswith("c:"):
                out.append(r.zscore(room.claims, ident))
            else:
                raw = r.hget(room.leases, ident)
                out.append(json.loads(raw).get("expires_ms") if raw else None)
        return out

    def run(agent: str, present: bool, advance: bool, n: int) -> None:
        sha = shas[present]
        for start in range(0, n, 200):
            pipe = r.pipeline(transaction=False)
            for _ in range(min(200, n - start)):
                pipe.evalsha(sha, len(keys), *keys, *arguments(agent, present, advance))
            for res in pipe.execute(raise_on_error=True):
                if not (isinstance(res, list) and res[0] == b"ok"):
                    raise RuntimeError(f"post_event answered {res!r}")

    def evalsha_stats() -> tuple[int, int]:
        stat = r.info("commandstats").get("cmdstat_evalsha", {})
        return int(stat.get("calls", 0)), int(stat.get("usec", 0))

    out: dict[str, dict[str, Any]] = {
        label: {"usec": 0, "calls": 0, "sent": 0, "holds": len(held(agent)), "rewrote": False}
        for label, agent, _, _ in VARIANTS
    }
    for _label, agent, present, advance in VARIANTS:
        run(agent, present, advance, PRESENCE_WARM)
    per_round = PRESENCE_CALLS // PRESENCE_ROUNDS
    for _ in range(PRESENCE_ROUNDS):
        for label, agent, present, advance in VARIANTS:
            before = terms(agent)
            calls0, usec0 = evalsha_stats()
            run(agent, present, advance, per_round)
            calls1, usec1 = evalsha_stats()
            out[label]["calls"] += calls1 - calls0
            out[label]["usec"] += usec1 - usec0
            out[label]["rewrote"] = bool(out[label]["rewrote"] or terms(agent) != before)
            out[label]["sent"] += per_round
    r.close()
    return out


async def update_task_with_and_without_agent(
    srv: server.BenchServer, ep: wire.McpEndpoint, fig: HookFigures, fails: Fails
) -> None:
    """update_task (a status, no note) with agentId and without, in alternating blocks."""
    room = f"bench-presence-e2e-{secrets.token_hex(4)}"
    conn = ep.connection()
    try:
        task = (await _call(conn, ep, "add_task", roomId=room, title="toggled"))["id"]
        fig.e2e_ms = {"with": [], "without": []}
        cpu = {"with": 0.0, "without": 0.0}
        n = 0
        for block in range(E2E_BLOCKS * 2 + 2):  # the first two blocks warm up
            kind = "with" if block % 2 else "without"
            before = floor.cpu_seconds(srv.process.pid)
            times = []
            for _ in range(E2E_BLOCK):
                n += 1
                args: dict[str, Any] = {
                    "roomId": room,
                    "taskId": task,
                    "status": "in_progress" if n % 2 else "pending",
                }
                if kind == "with":
                    args["agentId"] = "e2e-agent"
                res = await wire.call_tool(conn, ep, "update_task", args)
                if not res.ok:
                    fails.add("hooks: update_task (presence end to end)", res.describe())
                    continue
                times.append(1000 * res.seconds)
            if block >= 2:
                fig.e2e_ms[kind] += times
                cpu[kind] += floor.cpu_seconds(srv.process.pid) - before
        for kind in cpu:
            fig.e2e_cpu_ms[kind] = 1000 * cpu[kind] / max(1, len(fig.e2e_ms[kind]))
    finally:
        await conn.close()


# --- 3. Wake latency -----------------------------------------------------------------------


def _polling(group: int) -> bool:
    """A process of `group` is the waiter's wait_for_events curl."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if (
                int(fields[2]) == group
                and b"wait_for_events" in (stat.parent / "cmdline").read_bytes()
            ):
                return True
        except (OSError, IndexError, ValueError):
            continue
    return False


async def wake_latency(
    srv: server.BenchServer, ep: wire.McpEndpoint, fig: HookFigures, fails: Fails
) -> None:
    room = f"bench-wake-{secrets.token_hex(4)}"
    agent = "waiter"
    conn = ep.connection()
    work = Path(tempfile.mkdtemp(prefix="rs-bench-wake-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROOMSERVICE_", "GIT_"))}
    env |= {
        "ROOMSERVICE_URL": srv.base_url,
        "ROOMSERVICE_KEY": ep.token,
        "ROOM": room,
        "AGENT": agent,
        "ROOMSERVICE_WAIT_POLL_MS": str(WAKE_POLL_MS),
    }
    stop = json.dumps(
        {
            "session_id": "bench-wake",
            "transcript_path": "/tmp/t.jsonl",
            "cwd": str(work),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "Done.",
        }
    ).encode()
    try:
        subprocess.run(["git", "init", "-q"], cwd=work, check=True, env=env)
        for who in (agent, SENDER):
            await _call(conn, ep, "heartbeat", roomId=room, agentId=who)
        for i in range(WAKE_RUNS):
            fig.wake_runs += 1
            waiter = await asyncio.create_subprocess_exec(
                "sh",
                str(GUARD),
                "claude-wait",
                cwd=work,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            try:
                assert waiter.stdin is not None
                waiter.stdin.write(stop)
                await waiter.stdin.drain()
                waiter.stdin.close()
                deadline = time.monotonic() + 10
                while not _polling(waiter.pid) and time.monotonic() < deadline:
                    if waiter.returncode is not None:
                        break
                    await asyncio.sleep(0.01)
                await asyncio.sleep(WAKE_SETTLE_S)
                body = f"wake {i} {secrets.token_hex(3)}"
                t0 = time.perf_counter()
                await _call(
                    conn, ep, "send_message", roomId=room, to=agent, body=body, **{"from": SENDER}
                )
                async with asyncio.timeout(15):
                    _out, err = await waiter.communicate()
                dt = time.perf_counter() - t0
                text = err.decode(errors="replace")
                if waiter.returncode != 2 or body not in text:
                    fig.wake_failed += 1
                    fails.add(
                        "hooks: claude-wait did not wake with the message",
                        f"exit {waiter.returncode}, stderr {text[:300]!r}",
                    )
                else:
                    fig.wake_ms.append(1000 * dt)
            except TimeoutError:
                fig.wake_failed += 1
                fails.add("hooks: claude-wait did not exit within 15 s of the message")
            finally:
                if waiter.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(waiter.pid, signal.SIGTERM)
                    await waiter.wait()
    finally:
        await conn.close()
        shutil.rmtree(work, ignore_errors=True)


# --- The section ---------------------------------------------------------------------------


async def measure(srv: server.BenchServer, ep: wire.McpEndpoint, fails: Fails) -> HookFigures:
    fig = HookFigures()
    await round_trips(ep, fig, fails)
    held = await presence_setup(ep)
    try:
        fig.presence = presence_costs(srv, held["room"])
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
        fig.presence_problem = str(exc)[:500]
        fails.add("hooks: the presence cost could not be measured", fig.presence_problem)
    for label, stats in fig.presence.items():
        if stats["calls"] != stats["sent"]:
            fails.add(
                "hooks: presence cost: other EVALSHA calls ran meanwhile",
                f"{label}: {stats['calls']} counted, {stats['sent']} sent",
            )
    await update_task_with_and_without_agent(srv, ep, fig, fails)
    await wake_latency(srv, ep, fig, fails)
    return fig


def _times(x: float) -> str:
    return f"{x:,.0f}x" if x >= 10 else f"{x:.1f}x"


def _wrap(*sentences: str) -> list[str]:
    return textwrap.wrap(
        " ".join(sentences), width=98, initial_indent="     ", subsequent_indent="     "
    )


def section(fig: HookFigures) -> list[str]:
    lines = ["Hooks (section hooks; issue 24, point 6)"]
    lines.append("  1. Claude Code's HTTP hooks (ms)")
    lines += _wrap(
        "POST /api/v1/rooms/<id>/hooks/claude-code with the reference's payloads, one keep-alive",
        f"connection, the six kinds in turn, {CALLS} timed calls each after {WARM}; every answer",
        "checked (deny names the holder, the Stop holds with exactly the message sent).",
    )
    for k in fig.kinds:
        lines.append(
            f"     {k.label:<37} p50 {percentile(k.ms, 50):5.2f}  p99 {percentile(k.ms, 99):5.2f}  "
            f"max {max(k.ms, default=float('nan')):5.2f}  {len(k.ms)} ok, {k.failed} failed"
        )
    worst = max(fig.kinds, key=lambda k: percentile(k.ms, 99), default=None)
    if worst is not None and worst.ms:
        p99 = percentile(worst.ms, 99)
        lines += _wrap(
            f"Worst p99 {p99:.1f} ms ({worst.label}):",
            f"{_times(CONNECT_TIMEOUT_S * 1000 / p99)} under the {CONNECT_TIMEOUT_S:.0f} s",
            "`timeout` the Connect page sets (the one that applies);",
            f"{_times(HTTP_DEFAULT_TIMEOUT_S * 1000 / p99)} under the",
            f"{HTTP_DEFAULT_TIMEOUT_S:.0f} s default third-party summaries give for http hooks.",
        )
    lines.append("  2. What presence adds to a write: post_event's step in Redis (µs per call)")
    lines += _wrap(
        "EVALSHA straight into the server's Redis, keys and arguments as event_append builds",
        "them (turn wrapper on, as every post); Redis's own time from INFO commandstats.",
        f"{PRESENCE_CALLS:,} calls per variant, in {PRESENCE_ROUNDS} rounds taking turns. At the",
        "real clock a term is rewritten only once a tenth of it has passed (nothing, here);",
        f"rewrite = a `now` {TERM_S // 10 + 1} s further on each call, so every call rewrites",
        f"all held (terms {TERM_S} s).",
    )
    if fig.presence_problem:
        lines.append(f"     not measured: {fig.presence_problem}")
    per = {
        label: s["usec"] / s["calls"] if s["calls"] else float("nan")
        for label, s in fig.presence.items()
    }
    base = per.get("without present")
    for label, s in fig.presence.items():
        extra = (
            f"(+{per[label] - base:.1f})" if base is not None and label != VARIANTS[0][0] else ""
        )
        done = "rewrote" if s["rewrote"] else "rewrote nothing"
        lines.append(
            f"     {label:<39} {per[label]:6.1f} {extra:<9} holds {s['holds']:2d}, {done}, "
            f"{s['calls']:,} calls"
        )
    if fig.e2e_ms.get("with"):
        w, wo = fig.e2e_ms["with"], fig.e2e_ms["without"]
        lines += _wrap(
            f"End to end, update_task (a status, no note), {len(w)} calls each in alternating",
            f"blocks: with agentId p50 {statistics.median(w):.2f} ms, server CPU",
            f"{fig.e2e_cpu_ms['with']:.2f} ms a call; without, p50 {statistics.median(wo):.2f}",
            f"ms, {fig.e2e_cpu_ms['without']:.2f} ms.",
        )
    ok = fig.wake_ms
    met = ok and max(ok) < WAKE_TARGET_S * 1000 and not fig.wake_failed
    lines.append("  3. Waking an idle agent: roomservice-guard claude-wait")
    lines += _wrap(
        f"A message to its agent once its wait_for_events is out (poll {WAKE_POLL_MS // 1000} s),",
        f"to its exit 2: {len(ok)}/{fig.wake_runs} woke; p50 {percentile(ok, 50):.0f} ms, p99",
        f'{percentile(ok, 99):.0f} ms, max {max(ok, default=float("nan")):.0f} ms. Target "within',
        f'{WAKE_TARGET_S:.0f} s": {"met" if met else "NOT met"}.',
    )
    lines.append("")
    return lines


if __name__ == "__main__":
    print(json.dumps(_presence_here(json.load(sys.stdin))))
