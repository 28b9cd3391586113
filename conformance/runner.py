"""Running the kit: open the sessions, run every registered check in order, and report.

Checks run one after another, each making the tasks, entries and agents it needs under
names of its own, so none depends on another's outcome; the races inside a check are
concurrent on purpose. The report is a table
with one line per check, a per-tool coverage table, and a one-line summary; the exit code
is 1 when anything FAILed.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Literal

from conformance import checks_core, checks_ours, checks_teams, checks_tools, checks_wire
from conformance.kit import (
    CHECKS,
    KIT_VERSION,
    Check,
    Conn,
    Ctx,
    Failed,
    Kind,
    Skipped,
    Source,
    Tally,
    clip,
    open_conn,
)

# The check modules, in the order their checks run and are reported: each tool's own two
# checks first, then behaviour, and last what is judged over every call of the run.
SUITES = (checks_tools, checks_core, checks_ours, checks_teams, checks_wire)
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


@dataclass
class Report:
    url: str
    room: str
    offered: frozenset[str]
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    calls: int = 0
    rate_waited: float = 0.0

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
        skips = Counter(
            "no KEY_B" if o.detail == NO_KEY_B else "not offered"
            for o in self.outcomes
            if o.status == "SKIP"
        )
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
                f" ({self.rate_waited:.0f} s waiting out the rate limit)"
                if self.rate_waited
                else ""
            )
        )

    def render(self) -> str:
        """The whole report as text: the checks, the coverage table, the summary."""
        lines = [
            f"Room Protocol conformance kit {KIT_VERSION}",
            f"server: {self.url}   room: {self.room}   tools listed: {len(self.offered)}",
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
            lines.append("  in TOOLS.md, not listed by this server: " + ", ".join(absent))
        if self.failed:
            lines += ["", "Failures:"]
            lines += [f"  {o.name} ({o.kind}): {o.detail}" for o in self.failed]
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
    if missing:
        status, detail = "SKIP", "not offered: " + ", ".join(missing)
    elif check.needs_b and ctx.conn_b is None:
        status, detail = "SKIP", NO_KEY_B
    else:
        try:
            async with asyncio.timeout(timeout):
                said = await check.body(ctx)
            status, detail = "PASS", clip(said, 90) if said else ""
        except Skipped as skip:
            status, detail = "SKIP", str(skip)
        except Failed as failure:
            status, detail = "FAIL", clip(str(failure), 400)
        except TimeoutError:
            status, detail = "FAIL", f"no answer within {timeout:.0f} s"
        except Exception as exc:  # a surprise in a check is that check's FAIL
            status, detail = "FAIL", clip(f"{type(exc).__name__}: {exc}", 400)
    return Outcome(
        check.name,
        check.kind,
        check.source,
        check.tools,
        status,
        detail,
        time.monotonic() - started,
    )


def _innermost(exc: BaseException) -> BaseException:
    """The first real failure inside the task groups the client opens a session in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def run_kit(config: Config) -> Report:
    """Run every selected check against `config.url` and return the report. Raises
    ConnectionError when a session cannot be opened at all (wrong URL or key)."""
    started = time.monotonic()
    tally = Tally(rate_budget=config.rate_wait)
    base = f"conf-{secrets.token_hex(4)}"
    async with AsyncExitStack() as stack:

        async def opener(key: str, label: str) -> Conn:
            try:
                return await open_conn(
                    stack,
                    config.url,
                    key,
                    label=label,
                    mode=config.mode,
                    tally=tally,
                    timeout=config.timeout,
                )
            except Exception as exc:
                cause = _innermost(exc)
                raise ConnectionError(
                    f"could not open an MCP session at {config.url} as {label}: "
                    f"{type(cause).__name__}: {clip(str(cause), 300)}"
                ) from exc

        conn_a = await opener(config.key, "team A")
        conn_b = await opener(config.key_b, "team B") if config.key_b else None

        async def open_a(label: str) -> Conn:
            return await opener(config.key, label)

        ctx = Ctx(base=base, a=conn_a, b=conn_b, open_a=open_a)
        report = Report(url=config.url, room=base, offered=conn_a.offered)
        for check in selected(config):
            # A safety net for a hang the per-call timeouts miss, rate-limit waits allowed.
            budget = config.timeout * 3 + config.rate_wait
            report.outcomes.append(await run_one(check, ctx, budget))
    report.calls = tally.calls
    report.rate_waited = tally.rate_waited
    report.seconds = time.monotonic() - started
    return report
