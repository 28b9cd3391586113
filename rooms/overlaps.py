"""Which of a room's leases a path overlaps, decided in the web process on one view of them.

Matching a glob is any tenant's input, so it never runs inside Redis (rooms/paths.py says
how it is bounded). A write that depends on it (lease_claim, claim_task's paths, a message
to `file:<glob>`) is decided here on a view of the room's leases and carries the view's
generation to its step; the step refuses, writing nothing, when a lease was granted since
("moved"), and the decision is made again on a new view. Only grants move the generation:
a release or an expiry can only free a path, which a decision made before it still holds
for (a conflict it found was true when it was read).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from functools import lru_cache
from typing import Any, Protocol, TypeVar, cast

from rooms import errors
from rooms.keys import RoomKeys
from rooms.paths import paths_overlap
from rooms.store import leases as leases_store

# Of callers deciding on one room's leases at once, each round grants at least one: a
# call decides again at most this often before it is told to retry.
LEASE_VIEW_TRIES = 64
LEASES_BUSY = (
    "The room's leases changed {tries} times while this call decided; nothing was written. "
    "Call again."
)


# A view this large is matched in a worker thread, so that the event loop (every other
# tenant's calls on this process) gets the interpreter back every switch interval (5 ms)
# however hostile the patterns; a small one costs less than the hand-off.
OFF_LOOP_LEASES = 64
T = TypeVar("T")


async def matched(view: leases_store.LeaseView, match: Callable[[], T]) -> T:
    """`match()` (a decision on `view`), off the event loop when the view is large."""
    if len(view.leases) < OFF_LOOP_LEASES:
        return match()
    return await asyncio.to_thread(match)


class _Step(Protocol):
    @property
    def outcome(self) -> str: ...


S = TypeVar("S", bound=_Step)


@lru_cache(maxsize=8192)
def _lease_decoded(raw: str) -> dict[str, Any]:
    """A lease's JSON, decoded once while it is kept (read only: the dict is shared)."""
    return cast(dict[str, Any], json.loads(raw))


def leases_live(view: leases_store.LeaseView, now_ms: int) -> Iterator[tuple[dict[str, Any], str]]:
    """Each lease of the view that is live at `now_ms`, decoded, with its JSON."""
    for raw in view.leases:
        lease = _lease_decoded(raw)
        if int(lease["expires_ms"]) > now_ms:
            yield lease, raw


def lease_decide(
    view: leases_store.LeaseView,
    *,
    agent_id: str,
    paths: list[str],
    mode: str | None,
    now_ms: int,
) -> leases_store.LeaseDecision:
    """The conflicts for `agent_id` leasing `paths` in `mode` (None: claim_task's, which
    are exclusive and take over the agent's own lease of a path whatever its mode), and the
    agent's own live leases of those paths."""
    conflicts: list[dict[str, Any]] = []
    own: dict[str, str] = {}
    exclusive = mode in (None, "exclusive")
    for lease, _ in leases_live(view, now_ms):
        mine = lease["holder"] == agent_id
        for path in paths:
            if mine:
                if lease["path"] == path and (mode is None or lease["mode"] == mode):
                    own[path] = str(lease["id"])
            elif (exclusive or lease["mode"] == "exclusive") and paths_overlap(
                path, str(lease["path"])
            ):
                conflict = {
                    "path": lease["path"],
                    "holder": lease["holder"],
                    "mode": lease["mode"],
                    "expires_ms": lease["expires_ms"],
                }
                if mode is None:
                    conflict["wanted"] = path
                conflicts.append(conflict)
    return leases_store.LeaseDecision(
        generation=view.generation,
        conflicts_json=json.dumps(conflicts) if conflicts else "[]",
        own=own,
    )


def leases_overlapping(
    view: leases_store.LeaseView, path: str, now_ms: int
) -> list[tuple[dict[str, Any], str]]:
    """The live leases whose path overlaps `path`, in the view's order."""
    return [
        (lease, raw)
        for lease, raw in leases_live(view, now_ms)
        if paths_overlap(path, str(lease["path"]))
    ]


async def on_lease_view(keys: RoomKeys, act: Callable[[leases_store.LeaseView], Awaitable[S]]) -> S:
    """`act`'s step, decided on a new view of the room's leases until it is not "moved"."""
    for _ in range(LEASE_VIEW_TRIES):
        step = await act(await leases_store.leases_view(keys))
        if step.outcome != "moved":
            return step
    raise errors.StoreUnavailableError(LEASES_BUSY.format(tries=LEASE_VIEW_TRIES))
