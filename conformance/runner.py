"""Running the kit: open the sessions, run every registered check in order, and report.

Checks run one after another, each making the tasks, entries and agents it needs under
names of its own, so none depends on another's outcome; the races inside a check are
concurrent on purpose. The report is a table
with one line per check, a per-tool coverage table, and a one-line summary; the exit code
is 1 when anything FAILed.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Literal

from conformance import checks_core, checks_ours, checks_teams, checks_tools, checks_wire, kit
from conformance.kit import (
    CHECKS,
    KIT_VERSION,
    Check,
    Conn,
    Ctx,
    Failed,
    Kind,
    Rest,
    SessionFailed,
    Skipped,
    Source,
    Tally,
    clip,
    open_conn,
)

# The check modules, in the order their checks run and are reported: each tool's own two
# checks first, then behaviour, and last what is judged over every call of the run.
SUITES = (checks_tools, checks_core, checks_ours, checks_teams, checks_wire)

# roomd's 44 tools (docs/protocol.md "Whose tools": the paper's 25 and roomd's other 19).
ROOMD_TOOLS = frozenset(
    [
        "read_plan",
        "add_task",
        "update_task",
        "get_task",
        "get_unblocked_tasks",
        "get_my_tasks",
        "get_my_summary",
        "write_context",
        "read_context",
        "list_context",
        "update_context",
        "post_event",
        "read_events",
        "get_unread_events",
        "mark_event_read",
        "get_event_reads",
        "reply_to_event",
        "heartbeat",
        "get_presence",
        "acquire_lock",
        "release_lock",
        "list_locks",
        "set_shared_var",
        "get_shared_var",
        "list_shared_vars",
        "wait_for_events",
        "list_rooms",
        "leave_room",
        "get_room_info",
        "get_room_analytics",
        "delete_task",
        "set_task_priority",
        "add_dependency",
        "delete_context",
        "get_context_history",
        "diff_context",
        "delete_event",
        "search",
        "list_templates",
        "create_room_from_template",
        "request_review",
        "approve",
        "reject",
        "list_reviews",
    ]
)
Status = Literal["PASS", "FAIL", "SKIP"]
NO_KEY_B = "no KEY_B given: a key of a second team is needed for this check"


@dataclass(frozen=True, slots=True)
class Config:
    """Where and as whom the kit runs."""

    url: str
    key: str
    key_b: str = ""
    mode: str = "legacy"
    timeout: float = 20.0
    only: str = ""  # run only checks whose name or tool contains this
    # Judge only these of the tools the server lists (the others as not offered): say,
    # ROOMD_TOOLS, to see a server through roomd's tool surface. None: every listed tool.
    surface: frozenset[str] | None = None
    rate_wait: float = 180.0  # how long in all to wait out the server's rate limit


@dataclass(frozen=True, slots=True)
class Outcome:
    name: str
    kind: Kind
    source: Source
    tools: tuple[str, ...]
    status: Status
    detail: str
    seconds: float
    reason: str = ""  # a SKIP's, in a few words (kit.NOT_OFFERED, NO_KEY_B, NO_BOUND_KEY)


@dataclass
class Cleanup:
    """What became of the rooms the run used and the keys it minted."""

    rooms: dict[str, list[str]] = field(default_factory=dict)  # deleted/archived/left -> ids
    keys_left: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        said = []
        for how in ("deleted", "archived", "left"):
            ids = self.rooms.get(how, [])
            if not ids:
                continue
            line = f"{len(ids)} {how}: {', '.join(ids)}"
            if how == "archived":
                line += (
                    " (the server offers no way to delete a room: archived, they are out of "
                    "use but still the team's)"
                )
            if how == "left":
                line += (
                    " (the server offers no way to delete or archive a room: remove them "
                    "by hand, or let them expire)"
                )
            said.append(line)
        if self.keys_left:
            said.append("keys minted and not revoked: " + ", ".join(self.keys_left))
        return said


@dataclass
class Report:
    url: str
    room: str
    offered: frozenset[str]
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    calls: int = 0
    rate_waited: float = 0.0
    rate_waits: int = 0
    notes: list[str] = field(default_factory=list)
    cleanup: Cleanup = field(default_factory=Cleanup)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "FAIL"]

    @property
    def counts(self) -> Counter[str]:
        return Counter(o.status for o in self.outcomes)

    @property
    def known(self) -> frozenset[str]:
        """Every tool the kit has a call check for."""
        return frozenset(c.name for c in CHECKS if c.kind == "call")

    def coverage(self) -> dict[str, tuple[str, str]]:
        """Each listed tool: the status of its valid call and of its bad-input call ("-"
        when the kit has no such check or did not run it)."""
        rows: dict[str, dict[str, str]] = {}
        for o in self.outcomes:
            if o.kind in ("call", "bad input"):
                rows.setdefault(o.name, {})[o.kind] = o.status
        return {
            tool: (rows.get(tool, {}).get("call", "-"), rows.get(tool, {}).get("bad input", "-"))
            for tool in sorted(self.offered)
        }

    @property
    def unexercised(self) -> list[str]:
        """Listed tools whose valid call or bad-input call did not PASS (or did not run, or
        the kit has no checks for): none, for a server the kit covers completely."""
        return [t for t, pair in self.coverage().items() if pair != ("PASS", "PASS")]

    def summary(self) -> str:
        counts = self.counts
        skips = Counter(o.reason for o in self.outcomes if o.status == "SKIP")
        why = ", ".join(f"{reason}: {n}" for reason, n in sorted(skips.items()))
        exercised = len(self.offered) - len(self.unexercised)
        verdict = "FAILED" if counts["FAIL"] else "OK"
        return (
            f"conformance {verdict}: {len(self.outcomes)} checks, {counts['PASS']} passed, "
            f"{counts['FAIL']} failed, {counts['SKIP']} skipped"
            + (f" ({why})" if why else "")
            + f"; {exercised} of {len(self.offered)} listed tools exercised; "
            f"{self.calls} tool calls in {self.seconds:.1f} s"
            + (
                f" ({self.rate_waited:.0f} s of it pacing for the server's rate limit: "
                f"{self.rate_waits} calls held back and sent again)"
                if self.rate_waits
                else ""
            )
        )

    def render(self) -> str:
        """The whole report as text: the checks, the coverage table, the summary."""
        lines = [
            f"Room Protocol conformance kit {KIT_VERSION}",
            f"server: {self.url}   room: {self.room}   tools listed: {len(self.offered)}",
            *self.notes,
            "",
        ]
        width = min(max((len(o.name) for o in self.outcomes), default=5), 72)
        lines.append(f"{'STATUS':<6}  {'KIND':<9}  {'SOURCE':<8}  {'CHECK':<{width}}  DETAIL")
        for o in self.outcomes:
            detail = o.detail or f"{o.seconds * 1000:.0f} ms"
            lines.append(f"{o.status:<6}  {o.kind:<9}  {o.source:<8}  {o.name:<{width}}  {detail}")
        lines += ["", "Tool coverage (valid call / bad input):"]
        for tool, (call, bad) in self.coverage().items():
            lines.append(f"  {tool:<28} {call:<4} / {bad}")
        unknown = sorted(self.offered - self.known)
        if unknown:
            lines.append("  listed, but the kit has no checks for: " + ", ".join(unknown))
        absent = sorted(self.known - self.offered)
        if absent:
            lines.append("  in docs/tools.md, not listed by this server: " + ", ".join(absent))
        if self.failed:
            lines += ["", "Failures:"]
            lines += [f"  {o.name} ({o.kind}): {o.detail}" for o in self.failed]
        cleanup = self.cleanup.lines()
        if cleanup:
            lines += ["", "Rooms of this run:"] + [f"  {line}" for line in cleanup]
        lines += ["", self.summary()]
        return "\n".join(lines)


def all_checks() -> list[Check]:
    """Every registered check, suite by suite, in the order each suite registered them."""
    order = [suite.__name__ for suite in SUITES]
    return sorted(CHECKS, key=lambda c: order.index(c.module))


def selected(config: Config) -> list[Check]:
    if not config.only:
        return all_checks()
    return [c for c in all_checks() if config.only in c.name or config.only in c.tools]


async def run_one(check: Check, ctx: Ctx, timeout: float) -> Outcome:
    started = time.monotonic()
    missing = [t for t in check.tools if t not in ctx.conn_a.offered]
    status: Status
    reason = ""
    if missing:
        status, detail, reason = "SKIP", "not offered: " + ", ".join(missing), kit.NOT_OFFERED
    elif check.needs_b and ctx.conn_b is None:
        status, detail, reason = "SKIP", NO_KEY_B, kit.NO_KEY_B
    else:
        try:
            async with asyncio.timeout(timeout):
                said = await check.body(ctx)
            status, detail = "PASS", clip(said, 90) if said else ""
        except Skipped as skip:
            status, detail, reason = "SKIP", str(skip), skip.reason
        except Failed as failure:
            status, detail = "FAIL", clip(str(failure), 400)
        except TimeoutError:
            status, detail = "FAIL", f"no answer within {timeout:.0f} s"
        except Exception as exc:  # a surprise in a check is that check's FAIL
            status, detail = "FAIL", clip(f"{type(exc).__name__}: {exc}", 400)
        finally:
            await ctx.undo(timeout)
    return Outcome(
        check.name,
        check.kind,
        check.source,
        check.tools,
        status,
        detail,
        time.monotonic() - started,
        reason,
    )


def candidates(url: str) -> list[str]:
    """Where the MCP endpoint may be: the URL as given, then (unless it already ends so)
    the URL with `/mcp`, the path every Room Protocol server the kit knows uses."""
    given = url.strip()
    tried = [given]
    if not given.rstrip("/").endswith("/mcp"):
        tried.append(given.rstrip("/") + "/mcp")
    return tried


async def _open_first(
    stack: AsyncExitStack, urls: list[str], key: str, label: str, config: Config, tally: Tally
) -> Conn:
    """The first of `urls` where a session opens, or ConnectionError naming every place the
    kit looked and what each answered."""
    failures = []
    for url in urls:
        try:
            conn = await open_conn(
                stack, url, key, label=label, mode=config.mode, tally=tally, timeout=config.timeout
            )
            if config.surface is not None:
                conn.offered &= config.surface
            return conn
        except SessionFailed as failed:
            answered = f" ({failed.answered})" if failed.answered else ""
            failures.append(f"{url}: {failed.why}{answered}")
    raise ConnectionError(
        f"could not open an MCP session as {label}; looked at "
        + "; ".join(failures)
        + ". Give the server's MCP endpoint (…/mcp) and a key it accepts."
    )


async def remove_rooms(ctx: Ctx) -> Cleanup:
    """Take away every room the run used, as far as the server allows: deleted (REST
    `DELETE /api/v1/rooms/<id>`, or a `delete_room` tool), else archived (REST
    `POST …/<id>/archive`, or set_room_status), else left, saying why."""
    done = Cleanup()
    for room_id in ctx.touched:
        how = await _remove_room(ctx, room_id)
        done.rooms.setdefault(how, []).append(room_id)
    for key in ctx.minted:
        method, path = key.way.revoke
        answer = (
            await ctx.rest.send(method, path.format(id=key.key_id), at_root=key.way.at_root)
            if ctx.rest
            else None
        )
        if answer is None or answer.status_code >= 300:
            done.keys_left.append(f"{key.what} (id {key.key_id})")
    return done


async def _remove_room(ctx: Ctx, room_id: str) -> str:
    if ctx.rest is not None:
        answer = await ctx.rest.send("DELETE", f"/rooms/{room_id}")
        if answer is not None and answer.status_code in (200, 202, 204):
            return "deleted"
    conn = ctx.conn_a
    if "delete_room" in conn.offered:
        with contextlib.suppress(Exception):
            if (await conn.attempt("delete_room", roomId=room_id)).ok:
                return "deleted"
    if ctx.rest is not None:
        answer = await ctx.rest.send("POST", f"/rooms/{room_id}/archive")
        if answer is not None and answer.status_code in (200, 202, 204):
            return "archived"
    if "set_room_status" in conn.offered:
        with contextlib.suppress(Exception):
            moved = await conn.attempt(
                "set_room_status", roomId=room_id, status="archived", agentId="conformance"
            )
            if moved.ok:
                return "archived"
    return "left"


async def run_kit(config: Config) -> Report:
    """Run every selected check against `config.url` (or, when nothing answers there, the
    URL with `/mcp`) and return the report, having removed the rooms the run used. Raises
    ConnectionError, naming every place it looked, when no session can be opened."""
    started = time.monotonic()
    tally = Tally(rate_budget=config.rate_wait)
    base = f"conf-{secrets.token_hex(4)}"
    async with AsyncExitStack() as stack:
        conn_a = await _open_first(
            stack, candidates(config.url), config.key, "team A", config, tally
        )
        url = conn_a.url
        conn_b = (
            await _open_first(stack, [url], config.key_b, "team B", config, tally)
            if config.key_b
            else None
        )

        async def open_key(key: str, label: str) -> Conn:
            return await _open_first(stack, [url], key, label, config, tally)

        async def open_a(label: str) -> Conn:
            return await open_key(config.key, label)

        rest = Rest(url, config.key, tally, config.timeout)
        ctx = Ctx(base=base, a=conn_a, b=conn_b, open_a=open_a, open_key=open_key, rest=rest)
        report = Report(url=url, room=base, offered=conn_a.offered)
        if url != config.url.strip():
            report.notes.append(f"no MCP endpoint at {config.url}; found it at {url}")
        if config.surface is not None:
            report.notes.append(
                f"judged through a tool surface of {len(config.surface)} tools: the server's "
                "other tools count as not offered"
            )
        try:
            for check in selected(config):
                # A safety net for a hang the per-call timeouts miss, rate-limit waits allowed.
                budget = config.timeout * 3 + config.rate_wait
                report.outcomes.append(await run_one(check, ctx, budget))
        finally:
            report.cleanup = await remove_rooms(ctx)
    report.calls = tally.calls
    report.rate_waited = tally.rate_waited
    report.rate_waits = tally.rate_waits
    report.seconds = time.monotonic() - started
    return report
