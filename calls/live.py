"""Live uses of a credential — an open event stream, a waiting call — end when it does.

A use registers here and gets an `asyncio.Event` that is set once its credential is no
longer live: revoked, expired, its member removed, its account or team deleted. Three
things trigger a check: a revocation signal naming one of the caller's references (sent
by every revocation, through Redis, to every process: the usual case, within
milliseconds), the credential's own expiry time, and a sweep every
CREDENTIAL_RECHECK_SECONDS that re-checks everything held. A reconnection of the signal
subscription re-checks everything at once, so the sweep bounds only a signal lost some
other way; it is slow (5 minutes) because with one key per agent each pass is a query per
agent, the largest cost of an idle agent when it ran at every keep-alive. Checks are
grouped by credential, so a thousand waiters of one key cost one query.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass, field

from django.conf import settings

from rooms import clock
from rooms.flag import Flag
from rooms.store import wakeups as wakeups_store
from tenants.auth import caller_recheck
from tenants.capabilities import Caller
from tenants.db import db_run

log = logging.getLogger(__name__)


@dataclass(eq=False)
class LiveUse:
    caller: Caller
    refs: frozenset[str]
    lost: Flag = field(default_factory=Flag)
    timer: asyncio.TimerHandle | None = None


class LiveUses:
    """The live uses of one event loop (one per process under the ASGI server)."""

    def __init__(self) -> None:
        self._uses: set[LiveUse] = set()
        self._listening = False
        self._sweeper: asyncio.Task[None] | None = None
        self._checks: set[asyncio.Task[None]] = set()

    def held(self) -> int:
        return len(self._uses)

    async def hold(self, caller: Caller, extra_refs: tuple[str, ...] = ()) -> LiveUse:
        if not self._listening:
            self._listening = True
            await wakeups_store.signal_hub().listen(self._on_signal)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())
        use = LiveUse(caller=caller, refs=frozenset((*caller.revocation_refs, *extra_refs)))
        if caller.expires_at_ms is not None:
            delay = max(0.0, (caller.expires_at_ms - clock.now_ms()) / 1000)
            use.timer = asyncio.get_running_loop().call_later(delay, use.lost.set)
        self._uses.add(use)
        return use

    def release(self, use: LiveUse) -> None:
        self._uses.discard(use)
        if use.timer is not None:
            use.timer.cancel()

    def _on_signal(self, channel: str, payload: str) -> None:
        if channel == "":  # the subscription (re)connected: anything may have been missed
            affected = list(self._uses)
        elif wakeups_store.is_revocation(channel):
            affected = [u for u in self._uses if payload in u.refs]
        else:
            return
        if affected:
            task = asyncio.get_running_loop().create_task(self._check(affected))
            self._checks.add(task)
            task.add_done_callback(self._checks.discard)

    async def _check(self, uses: list[LiveUse]) -> None:
        by_credential: dict[tuple[str, int], list[LiveUse]] = {}
        for use in uses:
            if not use.lost.is_set():
                key = (use.caller.credential, use.caller.team_id)
                by_credential.setdefault(key, []).append(use)
        for group in by_credential.values():
            try:
                live = await db_run(caller_recheck, group[0].caller)
            except Exception:  # the database is away: keep the uses, the next sweep retries
                log.exception("could not re-check a credential")
                continue
            if not live:
                for use in group:
                    use.lost.set()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(float(settings.CREDENTIAL_RECHECK_SECONDS))
            if self._uses:
                await self._check(list(self._uses))


_registries: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LiveUses] = (
    weakref.WeakKeyDictionary()
)


def live_uses() -> LiveUses:
    loop = asyncio.get_running_loop()
    found = _registries.get(loop)
    if found is None:
        found = _registries[loop] = LiveUses()
    return found


class credential_held:  # lowercase, as contextlib.suppress: `async with credential_held(...)`
    """`async with credential_held(caller) as use:` ... `use.lost` is set when the
    credential ends. With `room_id`, deleting the room ends it too. A class rather than a
    generator: a waiting call holds it for as long as it waits."""

    __slots__ = ("_caller", "_refs", "_registry", "_use")

    def __init__(self, caller: Caller, *, room_id: str | None = None) -> None:
        self._caller = caller
        self._refs = (f"room:{room_id}",) if room_id else ()
        self._registry: LiveUses | None = None
        self._use: LiveUse | None = None

    async def __aenter__(self) -> LiveUse:
        self._registry = live_uses()
        self._use = await self._registry.hold(self._caller, self._refs)
        return self._use

    async def __aexit__(self, *exc: object) -> None:
        if self._registry is not None and self._use is not None:
            self._registry.release(self._use)
