"""The only package that talks to Redis: one typed async function per atomic step.

Functions here take a `RoomKeys` and plain values, run one script (or one read), and turn
the script's codes into typed results or `None` for "not found". Domain rules and
messages live in services/selectors; this package knows nothing of tools or callers.
Connections (one Redis or a cluster) live in `connections`, wake-ups and signals in
`wakeups`; both are re-exported here, so callers only ever write `store.<name>`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis
from asgiref.sync import SyncToAsync, async_to_sync
from django.conf import settings
from prometheus_client import Histogram
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError

from rooms import clock, errors, idempotency, scripts, turns
from rooms.keys import (
    BearerKeys,
    RoomKeys,
    TeamKeys,
    open_slots,
    rate_window,
    revocations_channel,
    webhooks_channel,
)
from rooms.keys import (
    claims_due as claims_due_key,
)
from rooms.store.connections import (
    Store,
    StoreDown,
    client,
    clients_close,
    cluster_client,
    cluster_mode,
    limiter,
    raw_client,
    redis_url,
)
from rooms.store.wakeups import (
    WAKE_POLL_SECONDS,
    WAKE_READY_SECONDS,
    ShardedWakeHub,
    SignalCallback,
    SignalHub,
    WakeHub,
    hubs_close,
    is_revocation,
    is_webhooks_change,
    room_watch,
    signal_hub,
    wake_hub,
)

__all__ = [
    "WAKE_POLL_SECONDS",
    "WAKE_READY_SECONDS",
    "ShardedWakeHub",
    "SignalCallback",
    "SignalHub",
    "Store",
    "StoreDown",
    "WakeHub",
    "client",
    "cluster_client",
    "cluster_mode",
    "is_revocation",
    "is_webhooks_change",
    "redis_url",
    "room_watch",
    "signal_hub",
    "wake_hub",
]

# Seconds, for every latency histogram of the service (tool calls use them too).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)
STORE_SECONDS = Histogram(
    "roomservice_store_seconds",
    "Round trips to the room store (one script step each).",
    buckets=LATENCY_BUCKETS,
)

_scripts: dict[str, _Script] = {}
T = TypeVar("T")


async def store_health(timeout: float) -> str | None:
    """None when Redis answers a PING within `timeout` seconds, else what went wrong."""
    try:
        await asyncio.wait_for(_awaited(client().ping()), timeout)
    except StoreDown as exc:
        return f"{type(exc).__name__}: {exc}"[:200] or "no answer"
    return None


async def close_client() -> None:
    """Close this loop's hubs and pools (before the loop goes away), once the slot releases
    and gathered reads it still has under way are done."""
    await pending_settled()
    await hubs_close()
    await clients_close()


async def pending_settled() -> None:
    """Carry out this loop's deferred slot releases, and wait for its steps in flight."""
    loop = asyncio.get_running_loop()
    pending = _releases_taken(loop)
    if pending:
        await _releases_step(pending)
    tasks = [t for t in _in_flight if t.get_loop() is loop]
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


def run_sync(fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any) -> T:
    """Run an async store operation from sync code (DRF views, admin, commands).

    Called from a thread of an event loop that lives on (the ASGI server's, a test's), it
    hops onto that loop and its pools, and leaves them alone. From plain sync code
    (commands, sync tests) asgiref makes a loop for the call; what was opened on it is
    closed before that loop goes away.
    """
    lasting = getattr(SyncToAsync.threadlocal, "main_event_loop", None) is not None

    async def runner() -> T:
        try:
            return await fn(*args, **kwargs)
        finally:
            if not lasting:
                await close_client()

    return async_to_sync(runner)()


def script_source(source: str) -> str:
    """A script as Redis runs it: a room's wake-up is published in the room's own slot on
    a cluster (sharded pub/sub reaches only that slot's nodes), everywhere without one."""
    return source.replace(scripts.WAKE_VERB, "SPUBLISH" if cluster_mode() else "PUBLISH")


@dataclass(frozen=True, slots=True)
class _Script:
    sha: str
    text: str


def _script(source: str) -> _Script:
    found = _scripts.get(source)
    if found is None:
        text = script_source(source)
        found = _scripts[source] = _Script(hashlib.sha1(text.encode()).hexdigest(), text)
    return found


async def _eval(r: Store, source: str, keys: list[str], args: list[Any]) -> Any:
    """One script step, timed (STORE_SECONDS: the store's round trips)."""
    started = time.perf_counter()
    try:
        return await _eval_step(r, source, keys, args)
    finally:
        STORE_SECONDS.observe(time.perf_counter() - started)


async def _eval_step(r: Store, source: str, keys: list[str], args: list[Any]) -> Any:
    """EVALSHA, and EVAL where the node does not know the script yet (a replica promoted
    by a failover, a restarted node): EVAL runs it on the node that holds its keys and
    leaves it cached there. Never SCRIPT LOAD, which a cluster client sends to every
    primary (and which fails while one of them is away)."""
    script = _script(source)
    where = (id(r), _node_name(r, keys), script.sha)
    if where not in _loaded:
        # The first time on this node, by this client: EVAL (no NOSCRIPT round trip, and no
        # storm of them when a burst of calls meets a fresh node at once).
        result = await _awaited(r.eval(script.text, len(keys), *keys, *args))
        if len(_loaded) > 100_000:
            _loaded.clear()
        _loaded.add(where)
        return result
    try:
        return await _awaited(r.evalsha(script.sha, len(keys), *keys, *args))
    except NoScriptError:
        return await _awaited(r.eval(script.text, len(keys), *keys, *args))


# (client, node, script sha): scripts this process has seen a node run.
_loaded: set[tuple[int, str, str]] = set()


def _node_name(r: Store, keys: list[str]) -> str:
    """The node holding `keys` as the client knows it now ("" before it knows the cluster)."""
    if keys and isinstance(r, RedisCluster):
        try:
            node = r.get_node_from_key(keys[0])
        except Exception:  # the client has not read the cluster's slots yet
            return ""
        return str(node.name) if node is not None else ""
    return ""


async def _run(source: str, keys: list[str], args: list[Any]) -> Any:
    return await _eval(client(), source, keys, args)


class RoomMissing(Exception):
    """A write step found no room in Redis (no owner key): the room was archived or deleted
    since the access check, or Redis lost its keys (a restart without persistence). Nothing
    was written; the door checks the room again, which tells these apart, and retries."""


class KeyReused(Exception):
    """The call's idempotencyKey was used in the room for another call (`tool`)."""

    def __init__(self, tool: str) -> None:
        super().__init__(tool)
        self.tool = tool


def room_tail(room: RoomKeys) -> list[str]:
    """The keys a room step that writes, indexes or is wrapped takes after its own, in the
    order its libraries and wrappers find them by, from the end (rooms/lua/__init__.py):
    no script builds a key name."""
    return [
        room.presence,
        room.idempotency,
        room.idempotency_times,
        *room.search,
        room.owner,
        room.meta,
    ]


async def _run_write(
    room: RoomKeys,
    source: str,
    keys: list[str],
    args: list[Any],
    *,
    keyed: idempotency.KeyedCall | None,
    wrote: str = scripts.WROTE_ONE,
    turn: turns.TurnClaim | None = None,
) -> Any:
    """A tool's one write step. For a call with an idempotencyKey (rooms.idempotency), the
    step also records the key, atomically: a repeat answers the first call's script answer
    (and hands the service back what it minted then) without running the script again.
    Raises KeyReused for the key of another call. `keyed`: the call's key (None without
    one). `turn`: the step is a post, taken only in the poster's turn (rooms.turns), in
    this same step."""
    keys = [*keys, *room_tail(room)]
    tail: list[Any] = []
    if turn is not None:
        source = scripts.turned(source, wrote)
        tail = turn.args()
    call = keyed
    if call is None:
        return _room_live(room, await _run(scripts.guarded(source), keys, [*args, *tail]), None)
    assert not call.written, "a keyed tool call has exactly one write step"
    call.written = True
    res = await _run(
        scripts.guarded(scripts.keyed(source, wrote, tail=len(tail))),
        keys,
        [
            *args,
            call.key,
            call.fingerprint,
            call.tool,
            json.dumps(call.minted, separators=(",", ":")),
            clock.now_ms(),
            int(settings.IDEMPOTENCY_WINDOW_SECONDS) * 1000,
            int(settings.ROOM_IDEMPOTENCY_KEYS_MAX),
            int(settings.ROOM_IDEMPOTENCY_BYTES_MAX),
            *tail,
        ],
    )
    res = _room_live(room, res, call)
    if isinstance(res, list) and res and res[0] == "__keyed":
        if res[1] == "reused":
            raise KeyReused(str(res[2]))
        call.replayed = True
        call.minted = json.loads(str(res[3]))
        return _as_redis_answer(json.loads(str(res[2])))
    return res


def _room_live(room: RoomKeys, res: Any, call: idempotency.KeyedCall | None) -> Any:
    """The write step's answer, unless its guard refused it (the room was being archived,
    archived, or deleted between the access check and the step): nothing was written."""
    if isinstance(res, list) and len(res) == 4 and res[0] == "__turn":
        raise errors.TurnRefusedError.of(str(res[1]), str(res[2]), str(res[3]))
    if isinstance(res, list) and len(res) == 2 and res[0] == "__room":
        if res[1] == "gone":
            if call is not None:
                call.written = False  # refused before its key was looked at: it may retry
            raise RoomMissing(room.room_id)
        raise errors.RoomClosedError(
            errors.ROOM_ARCHIVED.format(room_id=room.room_id)
            if res[1] == "archived"
            else errors.ROOM_ARCHIVING.format(room_id=room.room_id),
            extra={"roomId": room.room_id, "status": str(res[1])},
        )
    return res


def _as_redis_answer(value: Any) -> Any:
    """A script answer that went through cjson, as Redis would have given it: Lua's false is
    nil, and an empty table is an empty array."""
    if value is False:
        return None
    if isinstance(value, dict):
        return [] if not value else {k: _as_redis_answer(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_redis_answer(v) for v in value]
    return value


async def _awaited(result: Any) -> Any:
    """redis-py types its async commands as `Awaitable[T] | T`; on the asyncio client they
    are always awaitables."""
    return await result


def _ttl() -> int:
    return int(settings.ROOM_IDLE_TTL_SECONDS) * 1000


def _event_keys(keys: RoomKeys) -> list[str]:
    """What every event-appending script takes to keep the log in its caps."""
    return [keys.events, keys.meta, keys.reads]


def _event_args(keys: RoomKeys) -> list[Any]:
    return [int(settings.ROOM_EVENT_CAP), int(settings.ROOM_EVENT_BYTES_MAX), keys.wake]


@dataclass(frozen=True, slots=True)
class AtQuota:
    """A write refused by its quota; `used` is what the room holds now."""

    used: int


# --- Rooms ------------------------------------------------------------------------------


async def room_access(
    keys: RoomKeys, *, team_id: str, now_iso: str, claim: bool
) -> tuple[int, str]:
    """(1 the team owns the room, 0 Redis knows no owner (and no claim was asked), -1 another
    team owns it; the room's status when owned). With `claim`, an unowned room becomes the
    team's. Refreshes the room's idle TTL when the team owns it."""
    rest = [k for k in keys.durable() if k not in (keys.owner, keys.meta)]
    res = await _run(
        scripts.ACCESS_ROOM_SCRIPT,
        [keys.owner, keys.meta, *rest],
        [team_id, _ttl(), now_iso, "1" if claim else "0"],
    )
    return int(res[0]), (str(res[2]) if int(res[0]) == 1 else "")


async def room_status_set(
    keys: RoomKeys, *, status: str, by: str, keyed: idempotency.KeyedCall | None
) -> tuple[str, str]:
    """(the previous status, the room_status_changed event id or "" if unchanged)."""
    res = await _run_write(
        keys,
        scripts.SET_ROOM_STATUS_SCRIPT,
        [keys.meta, keys.events, keys.reads],
        [status, by, _ttl(), *_event_args(keys)],
        wrote=scripts.WROTE_ALWAYS,
        keyed=keyed,
    )
    return str(res[0]), str(res[1])


# --- Plan -------------------------------------------------------------------------------


async def task_add(
    keys: RoomKeys,
    *,
    task_id: str,
    task_json: str,
    label: str,
    now_iso: str,
    by: str,
    keyed: idempotency.KeyedCall | None,
) -> str | AtQuota:
    """The task_added event id, or AtQuota (ROOM_TASKS_MAX)."""
    res = await _run_write(
        keys,
        scripts.ADD_TASK_SCRIPT,
        [keys.tasks, keys.task_order, keys.meta, keys.events, keys.reads, keys.task_titles],
        [
            task_id,
            task_json,
            now_iso,
            _ttl(),
            *_event_args(keys),
            by,
            int(settings.ROOM_TASKS_MAX),
            label,
        ],
        keyed=keyed,
    )
    return str(res[1]) if int(res[0]) == 1 else AtQuota(int(res[1]))


async def plan_create(
    keys: RoomKeys,
    tasks: list[tuple[str, str, str]],
    *,
    now_iso: str,
    by: str,
    keyed: idempotency.KeyedCall | None,
) -> tuple[str, int]:
    """Write a whole plan ((id, JSON, label) per task) into a room that has none, in one
    step: ("ok", tasks added), ("exists", tasks already there) or ("quota", tasks asked)."""
    res = await _run_write(
        keys,
        scripts.CREATE_PLAN_SCRIPT,
        [keys.tasks, keys.task_order, keys.meta, keys.events, keys.reads, keys.task_titles],
        [
            now_iso,
            _ttl(),
            *_event_args(keys),
            by,
            int(settings.ROOM_TASKS_MAX),
            len(tasks),
            *(part for task in tasks for part in task),
        ],
        wrote=scripts.WROTE_ONE,
        keyed=keyed,
    )
    outcome = {1: "ok", 0: "exists", -1: "quota"}[int(res[0])]
    return outcome, int(res[1])


@dataclass(frozen=True, slots=True)
class TaskStep:
    """What a script that changes one task answered. `outcome`: "ok"; "unknown" (no such
    task); "stale" (expectedVersion is not the task's version); "done" (a done task cannot
    be claimed or released); "owned" (another agent owns it); "unmet" (pending with
    dependencies not done: `unmet` lists them). `task_json` is the task as it is now (after
    the change when ok); `event_id` is "" when nothing was logged."""

    outcome: str
    task_json: str = ""
    event_id: str = ""
    unmet: list[dict[str, str]] = field(default_factory=list)
    leases_json: str = "[]"  # claim_task: the task's leases ("leased": the conflicting ones)
    used: int = 0  # "lease_quota": the room's live leases


_TASK_OUTCOMES = {
    1: "ok",
    0: "unknown",
    -1: "stale",
    -2: "owned",
    -3: "unmet",
    -4: "leased",
    -5: "lease_quota",
    -6: "unverified",
}


def _task_keys(keys: RoomKeys) -> list[str]:
    """The keys of every script that changes a task (rooms/lua/lib/tasks.lua)."""
    return [
        keys.tasks,
        keys.meta,
        keys.events,
        keys.reads,
        keys.claims,
        keys.claim_holders,
        keys.leases,
        keys.lease_expiry,
    ]


def _task_step(
    res: Any, outcomes: dict[int, str], keyed: idempotency.KeyedCall | None = None
) -> TaskStep:
    code = int(res[0])
    if code == 0:
        return TaskStep("unknown")
    if code == LEASES_MOVED:
        _unwritten(keyed)
        return TaskStep("moved")
    task_json = str(res[1])
    if code == 1:
        return TaskStep(
            "ok", task_json, str(res[2]), leases_json=str(res[3]) if len(res) > 3 else "[]"
        )
    if code == -3:
        return TaskStep("unmet", task_json, unmet=json.loads(str(res[2])))
    if code == -4:
        return TaskStep("leased", task_json, leases_json=str(res[2]))
    if code == -5:
        return TaskStep("lease_quota", task_json, used=int(res[2]))
    return TaskStep(outcomes[code], task_json)


async def task_update(
    keys: RoomKeys,
    *,
    task_id: str,
    changes_json: str,
    now_iso: str,
    now_ms: int,
    keyed: idempotency.KeyedCall | None,
) -> TaskStep:
    """ok, unknown, stale (expectedVersion) or owned (another agent's task in progress, and
    the writer is not its owner)."""
    res = await _run_write(
        keys,
        scripts.UPDATE_TASK_SCRIPT,
        _task_keys(keys),
        [
            task_id,
            changes_json,
            now_iso,
            _ttl(),
            *_event_args(keys),
            int(settings.TASK_NOTES_KEPT),
            now_ms,
        ],
        keyed=keyed,
    )
    return _task_step(res, _TASK_OUTCOMES)


async def task_claim(
    keys: RoomKeys,
    *,
    task_id: str,
    agent_id: str,
    now_iso: str,
    now_ms: int,
    lease_ms: int,
    paths: list[str],
    paths_ms: int,
    lease_ids: list[str],
    leases_seen: LeaseDecision,
    keyed: idempotency.KeyedCall | None,
) -> TaskStep:
    """ok, unknown, done, owned, unmet, leased, lease_quota or moved (a lease was granted
    since `leases_seen`'s view: nothing written, decide again). A leased claim is also
    marked in the sweeper's index (a second, single-key step: the index is not in the
    room's slot)."""
    res = await _run_write(
        keys,
        scripts.CLAIM_TASK_SCRIPT,
        _task_keys(keys),
        [
            task_id,
            agent_id,
            now_iso,
            now_ms,
            lease_ms,
            _ttl(),
            *_event_args(keys),
            json.dumps(paths),
            paths_ms,
            json.dumps(lease_ids),
            int(settings.ROOM_LEASES_MAX),
            leases_seen.generation,
            leases_seen.conflicts_json,
            json.dumps(leases_seen.own or {}),
        ],
        keyed=keyed,
    )
    step = _task_step(res, {**_TASK_OUTCOMES, -1: "done"}, keyed)
    if step.outcome == "ok" and lease_ms > 0:
        expires = now_ms + lease_ms
        await _awaited(client().zadd(claims_due_key(), {keys.room_id: expires}, lt=True))
    return step


async def task_release(
    keys: RoomKeys,
    *,
    task_id: str,
    agent_id: str,
    now_iso: str,
    note: str | None,
    keyed: idempotency.KeyedCall | None,
) -> TaskStep:
    """ok, unknown, done or owned (not the agent's)."""
    res = await _run_write(
        keys,
        scripts.RELEASE_TASK_SCRIPT,
        _task_keys(keys),
        [
            task_id,
            agent_id,
            now_iso,
            note or "",
            int(settings.TASK_NOTES_KEPT),
            _ttl(),
            *_event_args(keys),
        ],
        keyed=keyed,
    )
    return _task_step(res, {**_TASK_OUTCOMES, -1: "done"})


# The most claims one sweep step lapses in one room (a room with more due goes again).
CLAIMS_LAPSED_PER_STEP = 100


async def claims_due(now_ms: int, limit: int) -> list[str]:
    """The rooms whose earliest claim expiry (as the sweeper's index has it) has passed."""
    raw = await _awaited(
        client().zrangebyscore(claims_due_key(), "-inf", now_ms, start=0, num=limit)
    )
    return [str(room_id) for room_id in raw]


async def claims_expire(keys: RoomKeys, *, now_ms: int, now_iso: str) -> tuple[int, int]:
    """(claims lapsed, the room's earliest remaining expiry ms or -1): one step in the
    room's slot."""
    res = await _run(
        scripts.EXPIRE_CLAIMS_SCRIPT,
        [*_task_keys(keys), *room_tail(keys)],
        [now_ms, now_iso, _ttl(), *_event_args(keys), CLAIMS_LAPSED_PER_STEP],
    )
    return int(res[0]), int(float(res[1]))


async def claims_due_settle(keys: RoomKeys, *, now_ms: int, now_iso: str) -> int:
    """After a sweep of the room: its member leaves the index, then the room is looked at
    again and its earliest remaining expiry put back (ZADD LT). A claim taken at any moment
    of this is covered: before the second look, that look sees it; after the removal, its
    own ZADD LT adds the member again. Returns the claims the second look lapsed."""
    r = client()
    await _awaited(r.zrem(claims_due_key(), keys.room_id))
    lapsed, next_ms = await claims_expire(keys, now_ms=now_ms, now_iso=now_iso)
    if next_ms >= 0:
        await _awaited(r.zadd(claims_due_key(), {keys.room_id: next_ms}, lt=True))
    return lapsed


async def task_get(keys: RoomKeys, task_id: str) -> str | None:
    return cast("str | None", await _awaited(client().hget(keys.tasks, task_id)))


@dataclass(frozen=True, slots=True)
class StoredPlan:
    created_at: str | None
    updated_at: str | None
    tasks: list[str]
    leases: list[str] = field(default_factory=list)  # every lease, expired ones too


async def plan_read(keys: RoomKeys) -> StoredPlan:
    res = await _run(
        scripts.READ_PLAN_SCRIPT, [keys.meta, keys.task_order, keys.tasks, keys.leases], []
    )
    return StoredPlan(
        created_at=res[0] or None,
        updated_at=res[1] or None,
        tasks=[str(t) for t in res[3:]],
        leases=[str(x) for x in res[2]],
    )


async def tasks_exist(keys: RoomKeys, task_ids: list[str]) -> list[bool]:
    """Which of these ids name tasks of the room (one HMGET of the short labels)."""
    if not task_ids:
        return []
    found = await _awaited(client().hmget(keys.task_titles, task_ids))
    missing = [i for i, v in zip(task_ids, found, strict=True) if v is None]
    if missing:  # rooms written before task_titles existed: ask the tasks themselves
        there = await _awaited(client().hmget(keys.tasks, missing))
        known = {i for i, v in zip(missing, there, strict=True) if v is not None}
        return [v is not None or i in known for i, v in zip(task_ids, found, strict=True)]
    return [True] * len(task_ids)


def _pairs(res: Any) -> list[tuple[str, str]]:
    it = iter(res)
    return [(str(a), str(b)) for a, b in zip(it, it, strict=True)]


async def task_hint_sample(keys: RoomKeys, *, size: int) -> list[tuple[str, str]]:
    """(id, short title) of the room's `size` newest tasks: what a miss is compared with."""
    res = await _run(scripts.TASK_HINTS_SCRIPT, [keys.task_order, keys.task_titles], [size])
    return _pairs(res)


# --- Context ----------------------------------------------------------------------------


async def context_write(
    keys: RoomKeys,
    *,
    entry_id: str,
    entry_json: str,
    payload_json: str,
    author: str,
    to: str,
    event_payload_json: str,
    label: str,
    keyed: idempotency.KeyedCall | None,
) -> str | AtQuota:
    """The context_available event id, or AtQuota (ROOM_CONTEXT_MAX)."""
    res = await _run_write(
        keys,
        scripts.WRITE_CONTEXT_SCRIPT,
        [
            keys.context,
            keys.context_payloads,
            keys.context_created,
            keys.context_changed,
            keys.events,
            keys.seq,
            keys.meta,
            keys.reads,
            keys.context_labels,
        ],
        [
            entry_id,
            entry_json,
            payload_json,
            _ttl(),
            *_event_args(keys),
            author,
            to,
            event_payload_json,
            int(settings.ROOM_CONTEXT_MAX),
            label,
        ],
        keyed=keyed,
    )
    return str(res[1]) if int(res[0]) == 1 else AtQuota(int(res[1]))


@dataclass(frozen=True, slots=True)
class ContextUpdated:
    entry_json: str
    payload_json: str
    event_id: str
    told_stale: list[str] = field(default_factory=list)  # agents whose read went out of date


async def context_update(
    keys: RoomKeys,
    *,
    entry_id: str,
    changes_json: str,
    payload_json: str | None,
    expected_version: str | None,
    now_iso: str,
    label: str,
    keyed: idempotency.KeyedCall | None,
) -> ContextUpdated | str | None:
    """The update, or the current version string when `expected_version` is stale, or None
    for an unknown entry. The oldest superseded versions past CONTEXT_VERSIONS_KEPT go."""
    res = await _run_write(
        keys,
        scripts.UPDATE_CONTEXT_SCRIPT,
        [
            keys.context,
            keys.context_payloads,
            keys.context_changed,
            keys.context_versions,
            keys.context_version_index,
            keys.events,
            keys.meta,
            keys.reads,
            keys.context_labels,
            keys.context_readers,
        ],
        [
            entry_id,
            changes_json,
            payload_json or "",
            expected_version or "",
            now_iso,
            _ttl(),
            *_event_args(keys),
            int(settings.CONTEXT_VERSIONS_KEPT),
            label,
        ],
        keyed=keyed,
    )
    code = int(res[0])
    if code == 0:
        return None
    if code == -1:
        return str(res[1])
    return ContextUpdated(
        entry_json=str(res[1]),
        payload_json=str(res[2]),
        event_id=str(res[3]),
        told_stale=[str(a) for a in json.loads(str(res[4]) or "[]") or []],
    )


async def context_readers(
    keys: RoomKeys, *, agent_id: str | None, read: list[tuple[str, str]], now_ms: int
) -> list[list[dict[str, Any]]]:
    """Record that `agent_id` read these (entry id, version) pairs, when given, and answer
    each entry's readers, oldest read first ([{a, v, at}])."""
    if not read:
        return []
    res = await _run(
        scripts.CONTEXT_READERS_SCRIPT,
        [keys.context_readers],
        [
            agent_id or "",
            now_ms,
            int(settings.CONTEXT_READERS_KEPT),
            _ttl(),
            *(part for pair in read for part in pair),
        ],
    )
    return [json.loads(str(x)) or [] for x in res]


async def context_get(keys: RoomKeys, entry_id: str) -> tuple[str, str] | None:
    """(entry JSON without payload, payload JSON), or None."""
    res = await _run(scripts.CONTEXT_GET_SCRIPT, [keys.context, keys.context_payloads], [entry_id])
    if not res:
        return None
    return str(res[0]), str(res[1])


async def context_hint_sample(keys: RoomKeys, *, size: int) -> list[tuple[str, str]]:
    """(id, "type: summary" cut short) of the `size` newest entries: no payload is read."""
    res = await _run(
        scripts.CONTEXT_HINTS_SCRIPT, [keys.context_created, keys.context_labels], [size]
    )
    return _pairs(res)


async def context_history(keys: RoomKeys, entry_id: str) -> list[str]:
    """Every superseded version of one entry (full JSON each), oldest first."""
    res = await _run(
        scripts.CONTEXT_HISTORY_SCRIPT,
        [keys.context_version_index, keys.context_versions],
        [entry_id],
    )
    return [str(v) for v in res]


async def context_all(keys: RoomKeys) -> list[tuple[str, str]]:
    """Every entry as (entry JSON, payload JSON), newest first."""
    res = await _run(
        scripts.CONTEXT_ALL_SCRIPT,
        [keys.context_created, keys.context, keys.context_payloads],
        [],
    )
    return _pairs(res)


# --- Events -----------------------------------------------------------------------------

StreamEntry = tuple[str, dict[str, str]]


def _entry(raw: Any) -> StreamEntry:
    eid, fields = raw[0], raw[1]
    if isinstance(fields, dict):
        return str(eid), fields
    it = iter(fields)
    return str(eid), dict(zip(it, it, strict=True))


async def event_append(
    keys: RoomKeys,
    *,
    type_: str,
    from_: str,
    to: str,
    payload_json: str,
    reply_to: str | None,
    turn: turns.TurnClaim,
    keyed: idempotency.KeyedCall | None,
) -> str | None:
    """The new event id, or None when `reply_to` names no event in the log. Taken only in
    `turn` (a post: rooms.turns)."""
    res = await _run_write(
        keys,
        scripts.POST_EVENT_SCRIPT,
        _event_keys(keys),
        [type_, from_, to, payload_json, reply_to or "", _ttl(), *_event_args(keys)],
        turn=turn,
        keyed=keyed,
    )
    if int(res[0]) == 0:
        return None
    return str(res[1])


async def event_range(
    keys: RoomKeys, *, start: str, end: str, count: int, reverse: bool
) -> list[StreamEntry]:
    r = client()
    if reverse:
        raw = await r.xrevrange(keys.events, max=end, min=start, count=count)
    else:
        raw = await r.xrange(keys.events, min=start, max=end, count=count)
    return [_entry(e) for e in raw or ()]


async def event_get(keys: RoomKeys, event_id: str) -> StreamEntry | None:
    raw = await client().xrange(keys.events, min=event_id, max=event_id, count=1)
    return _entry(raw[0]) if raw else None


async def event_count(keys: RoomKeys) -> int:
    return int(await client().xlen(keys.events))


@dataclass(frozen=True, slots=True)
class UnreadBatch:
    cursor: str
    previous_cursor: str
    log_length: int
    context_changed: int
    events: list[StreamEntry]
    # The scan stopped at UNREAD_SCAN_STEP entries before finding `limit` events.
    capped: bool = False


UNREAD_SCAN_STEP = 1000


async def event_read_unread(
    keys: RoomKeys,
    *,
    cursors_key: str,
    cursor_field: str,
    agent_id: str,
    limit: int,
    addressed_only: bool,
) -> UnreadBatch | AtQuota:
    """Take up to `limit` events after the agent's cursor (`cursor_field` of `cursors_key`),
    moving it atomically. `agent_id` is whom `addressed_only` matches events against.

    With `addressed_only`, events for others are skipped; one script call scans at most
    UNREAD_SCAN_STEP entries (so Redis is never blocked for long), and we call again while
    it stopped at that bound, each step atomic and exactly-once on its own range.
    """
    events: list[StreamEntry] = []
    first: UnreadBatch | None = None
    while True:
        res = await _run(
            scripts.READ_UNREAD_SCRIPT,
            [keys.events, cursors_key, keys.context_changed],
            [
                cursor_field,
                limit - len(events),
                "1" if addressed_only else "0",
                _ttl(),
                UNREAD_SCAN_STEP,
                agent_id,
                int(settings.ROOM_CURSORS_MAX),
            ],
        )
        if res[0] == -1:  # a Lua number only there; else the cursor, a string
            return AtQuota(int(res[1]))
        step = UnreadBatch(
            cursor=str(res[0]),
            previous_cursor=str(res[1]),
            log_length=int(res[2]),
            context_changed=int(res[3]),
            events=[_entry(e) for e in res[5:]],
        )
        first = first or step
        events += step.events
        if int(res[4]) == 0 or len(events) >= limit:
            return UnreadBatch(
                cursor=step.cursor,
                previous_cursor=first.previous_cursor,
                log_length=step.log_length,
                context_changed=first.context_changed,
                events=events,
            )


@dataclass(frozen=True, slots=True)
class UnreadRead:
    """One agent's read of its unread events, as event_read_unread takes it."""

    cursors_key: str
    cursor_field: str
    agent_id: str
    limit: int
    addressed_only: bool


async def event_read_unread_many(
    keys: RoomKeys, reads: list[UnreadRead]
) -> list[UnreadBatch | AtQuota]:
    """Each read's first step (as event_read_unread's), all in one atomic script: the
    cursors move one after the other, so two reads of one cursor never share an event."""
    args: list[Any] = [_ttl(), UNREAD_SCAN_STEP, int(settings.ROOM_CURSORS_MAX)]
    for read in reads:
        which = "1" if read.cursors_key == keys.cursors else "2"
        args += [
            which,
            read.cursor_field,
            read.limit,
            "1" if read.addressed_only else "0",
            read.agent_id,
        ]
    replies, raw_entries = await _run(
        scripts.READ_UNREAD_MANY_SCRIPT,
        [keys.events, keys.cursors, keys.cursors_readonly, keys.context_changed],
        args,
    )
    entries = {str(e[0]): _entry(e) for e in raw_entries}
    out: list[UnreadBatch | AtQuota] = []
    for reply in replies:
        if reply[0] == -1:
            out.append(AtQuota(int(reply[1])))
            continue
        out.append(
            UnreadBatch(
                cursor=str(reply[0]),
                previous_cursor=str(reply[1]),
                log_length=int(reply[2]),
                context_changed=int(reply[3]),
                events=[entries[str(x)] for x in reply[5:]],
                capped=int(reply[4]) == 1,
            )
        )
    return out


# Reads of one room asked in one turn of the event loop, and the script calls that take
# them: the waiters one write wakes all ask at once, and share one round trip.
READS_PER_STEP = 500
_Gathered = list[tuple[UnreadRead, asyncio.Future[Any]]]
_gathering: dict[tuple[int, str], tuple[asyncio.AbstractEventLoop, _Gathered]] = {}
_in_flight: set[asyncio.Task[None]] = set()


async def event_read_unread_gathered(keys: RoomKeys, read: UnreadRead) -> UnreadBatch | AtQuota:
    """event_read_unread, with every other read of the room asked in the same turn of the
    event loop taken in the same script call. Continues alone past a capped scan."""
    loop = asyncio.get_running_loop()
    slot = (id(loop), keys.room_id)
    future: asyncio.Future[Any] = loop.create_future()
    pending = _gathering.get(slot)
    if pending is None or pending[0] is not loop:  # none yet, or a closed loop's (same id)
        pending = _gathering[slot] = (loop, [])
        loop.call_soon(_gathered_run, slot, keys)
    pending[1].append((read, future))
    first = await future
    if isinstance(first, AtQuota) or not first.capped or len(first.events) >= read.limit:
        return cast("UnreadBatch | AtQuota", first)
    rest = await event_read_unread(
        keys,
        cursors_key=read.cursors_key,
        cursor_field=read.cursor_field,
        agent_id=read.agent_id,
        limit=read.limit - len(first.events),
        addressed_only=read.addressed_only,
    )
    if isinstance(rest, AtQuota):
        return cast("UnreadBatch", first)
    return UnreadBatch(
        cursor=rest.cursor,
        previous_cursor=first.previous_cursor,
        log_length=rest.log_length,
        context_changed=first.context_changed,
        events=first.events + rest.events,
    )


def _gathered_run(slot: tuple[int, str], keys: RoomKeys) -> None:
    loop = asyncio.get_running_loop()
    found = _gathering.get(slot)
    if found is None or found[0] is not loop:
        return
    del _gathering[slot]
    pending = found[1]
    for k in range(0, len(pending), READS_PER_STEP):
        task = asyncio.get_running_loop().create_task(
            _gathered_step(keys, pending[k : k + READS_PER_STEP])
        )
        _in_flight.add(task)
        task.add_done_callback(_in_flight.discard)


async def _gathered_step(
    keys: RoomKeys, pending: list[tuple[UnreadRead, asyncio.Future[Any]]]
) -> None:
    live = [(read, future) for read, future in pending if not future.done()]
    if not live:
        return
    try:
        results = await event_read_unread_many(keys, [read for read, _ in live])
    except Exception as exc:  # every read waiting on this step hears of it
        for _, future in live:
            if not future.done():
                future.set_exception(exc)
        return
    for (_, future), result in zip(live, results, strict=True):
        if not future.done():
            future.set_result(result)


async def event_mark_read(
    keys: RoomKeys,
    *,
    event_id: str,
    agent_id: str,
    now_iso: str,
    keyed: idempotency.KeyedCall | None,
) -> bool | AtQuota:
    """True recorded, False unknown event, AtQuota (EVENT_READS_MAX)."""
    res = await _run_write(
        keys,
        scripts.MARK_EVENT_READ_SCRIPT,
        [keys.events, keys.reads],
        [event_id, agent_id, now_iso, _ttl(), int(settings.EVENT_READS_MAX)],
        wrote=scripts.WROTE_MARK,
        keyed=keyed,
    )
    if isinstance(res, list):
        return AtQuota(int(res[1]))
    return int(res) == 1


async def event_reads(keys: RoomKeys, event_id: str) -> str | None:
    return cast("str | None", await _awaited(client().hget(keys.reads, event_id)))


# --- roomd's other tools ----------------------------------------------------------------


async def presence_leave(
    keys: RoomKeys,
    *,
    agent_id: str,
    shown: int,
    keyed: idempotency.KeyedCall | None,
) -> tuple[bool, list[tuple[str, int]]]:
    """(whether the agent was in presence, the `shown` most recently seen still there)."""
    left, res = await _run_write(
        keys,
        scripts.LEAVE_ROOM_SCRIPT,
        [keys.presence, keys.meta, keys.events, keys.reads, keys.agent_tags],
        [agent_id, _ttl(), *_event_args(keys), shown],
        wrote=scripts.WROTE_ALWAYS,
        keyed=keyed,
    )
    it = iter(res)
    return int(left) == 1, [(str(a), int(float(s))) for a, s in zip(it, it, strict=True)]


@dataclass(frozen=True, slots=True)
class RoomCounts:
    created_at: str | None
    members: int
    tasks: int
    context: int
    events: int


async def room_counts(keys: RoomKeys) -> RoomCounts:
    res = await _run(
        scripts.ROOM_INFO_SCRIPT,
        [keys.meta, keys.presence, keys.tasks, keys.context, keys.events],
        [],
    )
    return RoomCounts(
        str(res[0]) if res[0] else None, int(res[1]), int(res[2]), int(res[3]), int(res[4])
    )


@dataclass(frozen=True, slots=True)
class RoomActivity:
    created_at: str | None
    per_day: dict[int, int]  # days since 1970 (UTC) -> events of that day still in the log
    agents: int
    online: int
    context: int
    events: int
    statuses: list[str]


async def room_activity(keys: RoomKeys, *, online_since_ms: int) -> RoomActivity:
    res = await _run(
        scripts.ROOM_ANALYTICS_SCRIPT,
        [keys.meta, keys.presence, keys.tasks, keys.context, keys.events],
        [online_since_ms],
    )
    it = iter(res[0])
    meta = dict(zip(it, it, strict=True))
    per_day = {int(k[2:]): int(v) for k, v in meta.items() if str(k).startswith("d:")}
    return RoomActivity(
        str(meta["created_at"]) if meta.get("created_at") else None,
        per_day,
        int(res[1]),
        int(res[2]),
        int(res[3]),
        int(res[4]),
        [str(x) for x in res[5]],
    )


@dataclass(frozen=True, slots=True)
class SearchCandidate:
    """One document the index ranked: its title text (title, summary) and body text, as
    indexed, for the phrase check and the snippet."""

    kind: str
    id: str
    score: float
    groups: int
    title: str
    body: str


async def search_candidates(
    keys: RoomKeys, groups: list[str], *, want: int, budget: int, expand: int
) -> tuple[int, list[SearchCandidate]]:
    """The room's documents (tasks, context entries, retained events) and the best `want`
    for the query's groups ("=word" / "*prefix"), in one step over the index."""
    res = await _run(
        scripts.SEARCH_SCRIPT,
        [
            keys.search_events,
            keys.search_docs,
            keys.search_vocab,
            keys.events,
            keys.tasks,
            keys.context,
            keys.context_payloads,
        ],
        [want, budget, expand, *groups],
    )
    found = [
        SearchCandidate(
            str(res[i]),
            str(res[i + 1]),
            float(res[i + 2]),
            int(res[i + 3]),
            str(res[i + 4]),
            str(res[i + 5]),
        )
        for i in range(2, 2 + 6 * int(res[1]), 6)
    ]
    return int(res[0]), found


async def search_reindex_step(
    keys: RoomKeys, *, what: str, most: int, start: int
) -> tuple[bool, int, int]:
    """One bounded step of indexing what a room held before the index existed (`what`:
    events, tasks or context): (done, indexed, the next start)."""
    res = await _run(
        scripts.SEARCH_REINDEX_SCRIPT,
        [
            keys.meta,
            keys.events,
            keys.tasks,
            keys.task_order,
            keys.context,
            keys.context_payloads,
            keys.context_created,
            *room_tail(keys),
        ],
        [what, most, start],
    )
    return bool(int(res[0])), int(res[1]), int(res[2])


@dataclass(frozen=True, slots=True)
class DependencyStep:
    """ "ok", "already" (nothing changed), "unknown" (the task), "unknown_dependency",
    "stale", "cycle" (`cycle`: the ids around it, the task first and last), "full"."""

    outcome: str
    task_json: str = ""
    cycle: list[str] = field(default_factory=list)


async def task_add_dependency(
    keys: RoomKeys,
    *,
    task_id: str,
    depends_on: str,
    by: str,
    expected_version: int | None,
    now_iso: str,
    most: int,
    keyed: idempotency.KeyedCall | None,
) -> DependencyStep:
    res = await _run_write(
        keys,
        scripts.ADD_DEPENDENCY_SCRIPT,
        [keys.tasks, keys.meta, keys.events, keys.reads],
        [
            task_id,
            depends_on,
            by,
            "" if expected_version is None else expected_version,
            now_iso,
            _ttl(),
            *_event_args(keys),
            most,
        ],
        keyed=keyed,
    )
    code = int(res[0])
    if code == 0:
        return DependencyStep("unknown")
    if code == -5:
        return DependencyStep("unknown_dependency")
    if code == -4:
        return DependencyStep("cycle", cycle=[str(x) for x in json.loads(str(res[1]))])
    outcome = {1: "ok", 2: "already", -1: "stale", -6: "full"}[code]
    return DependencyStep(outcome, str(res[1]))


@dataclass(frozen=True, slots=True)
class TaskDeleted:
    """ "ok", "unknown" or "stale"; the task as it was, and the tasks that depended on it."""

    outcome: str
    task_json: str = ""
    dependents: list[dict[str, str]] = field(default_factory=list)


async def task_delete(
    keys: RoomKeys,
    *,
    task_id: str,
    by: str,
    expected_version: int | None,
    now_iso: str,
    keyed: idempotency.KeyedCall | None,
) -> TaskDeleted:
    res = await _run_write(
        keys,
        scripts.DELETE_TASK_SCRIPT,
        [
            keys.tasks,
            keys.task_order,
            keys.task_titles,
            keys.meta,
            keys.events,
            keys.reads,
            keys.claims,
            keys.claim_holders,
            keys.leases,
            keys.lease_expiry,
        ],
        [
            task_id,
            by,
            "" if expected_version is None else expected_version,
            now_iso,
            _ttl(),
            *_event_args(keys),
        ],
        keyed=keyed,
    )
    code = int(res[0])
    if code == 0:
        return TaskDeleted("unknown")
    if code == -1:
        return TaskDeleted("stale", str(res[1]))
    dependents = json.loads(str(res[2]))
    return TaskDeleted("ok", str(res[3]), dependents if isinstance(dependents, list) else [])


async def context_delete(
    keys: RoomKeys, *, entry_id: str, by: str, keyed: idempotency.KeyedCall | None
) -> str | None:
    """The deleted entry's JSON (without its payload), or None for an unknown entry."""
    res = await _run_write(
        keys,
        scripts.DELETE_CONTEXT_SCRIPT,
        [
            keys.context,
            keys.context_payloads,
            keys.context_created,
            keys.context_changed,
            keys.context_versions,
            keys.context_version_index,
            keys.context_labels,
            keys.meta,
            keys.events,
            keys.reads,
        ],
        [entry_id, by, _ttl(), *_event_args(keys)],
        keyed=keyed,
    )
    return str(res[2]) if int(res[0]) == 1 else None


async def event_delete(
    keys: RoomKeys, *, event_id: str, by: str, keyed: idempotency.KeyedCall | None
) -> bool:
    """False for an unknown event."""
    res = await _run_write(
        keys,
        scripts.DELETE_EVENT_SCRIPT,
        [keys.events, keys.meta, keys.reads],
        [event_id, by, _ttl(), *_event_args(keys)],
        keyed=keyed,
    )
    return int(res[0]) == 1


async def review_request(
    keys: RoomKeys,
    *,
    review_id: str,
    review_json: str,
    target_type: str,
    target_id: str,
    requested_by: str,
    reviewer: str,
    keyed: idempotency.KeyedCall | None,
) -> str | AtQuota | None:
    """The review_requested event id; AtQuota (ROOM_REVIEWS_MAX); None: no such target."""
    res = await _run_write(
        keys,
        scripts.REQUEST_REVIEW_SCRIPT,
        [
            keys.reviews,
            keys.review_order,
            keys.tasks,
            keys.context,
            keys.meta,
            keys.events,
            keys.reads,
        ],
        [
            review_id,
            review_json,
            target_type,
            target_id,
            requested_by,
            reviewer,
            _ttl(),
            *_event_args(keys),
            int(settings.ROOM_REVIEWS_MAX),
        ],
        keyed=keyed,
    )
    code = int(res[0])
    if code == 0:
        return None
    return str(res[1]) if code == 1 else AtQuota(int(res[1]))


@dataclass(frozen=True, slots=True)
class ReviewStep:
    """ "ok", "unknown", "resolved" (already), "not_reviewer", "own_submission" (judged by
    its submitter) or "not_submitted" (verify_task: nothing awaits verification; the
    task's JSON in `review_json`); the review as it is now, and its task when resolving
    moved it."""

    outcome: str
    review_json: str = ""
    task_json: str = ""


async def review_resolve(
    keys: RoomKeys,
    *,
    review_id: str,
    agent_id: str,
    status: str,
    note: str | None,
    now_iso: str,
    task_id: str | None = None,
    keyed: idempotency.KeyedCall | None,
) -> ReviewStep:
    """A review resolved by its reviewer; a submission by anyone but its submitter, its
    task moved in the same step. With `task_id`, the task's pending submission."""
    res = await _run_write(
        keys,
        scripts.RESOLVE_REVIEW_SCRIPT,
        [
            keys.reviews,
            keys.meta,
            keys.events,
            keys.reads,
            keys.tasks,
            keys.claims,
            keys.claim_holders,
            keys.leases,
            keys.lease_expiry,
        ],
        [
            review_id,
            agent_id,
            status,
            note or "",
            now_iso,
            _ttl(),
            *_event_args(keys),
            task_id or "",
            int(settings.TASK_NOTES_KEPT),
        ],
        keyed=keyed,
    )
    code = int(res[0])
    if code == 0:
        return ReviewStep("unknown")
    if code == 1:
        return ReviewStep("ok", str(res[1]), str(res[3]))
    outcomes = {-2: "resolved", -3: "not_reviewer", -4: "own_submission", -5: "not_submitted"}
    return ReviewStep(outcomes[code], str(res[1]))


async def task_submit(
    keys: RoomKeys,
    *,
    task_id: str,
    agent_id: str,
    review_id: str,
    review_json: str,
    evidence_json: str,
    now_iso: str,
    keyed: idempotency.KeyedCall | None,
) -> TaskStep:
    """ok, unknown, done, not_owner, submitted (one awaits verification) or quota."""
    res = await _run_write(
        keys,
        scripts.SUBMIT_TASK_SCRIPT,
        [*_task_keys(keys), keys.reviews, keys.review_order],
        [
            task_id,
            agent_id,
            review_json,
            review_id,
            now_iso,
            _ttl(),
            *_event_args(keys),
            int(settings.ROOM_REVIEWS_MAX),
            evidence_json,
        ],
        keyed=keyed,
    )
    code = int(res[0])
    if code == -4:
        return TaskStep("quota", used=int(res[1]))
    if code == 0:
        return TaskStep("unknown")
    outcomes = {1: "ok", -1: "done", -2: "not_owner", -3: "submitted"}
    return TaskStep(outcomes[code], str(res[1]), str(res[2]) if code == 1 else "")


async def room_mode_get(keys: RoomKeys) -> dict[str, Any]:
    """The room's mode (set_room_mode), {} when none was set."""
    raw = await _awaited(client().hget(keys.meta, "mode"))
    found = json.loads(raw) if raw else {}
    return found if isinstance(found, dict) else {}


async def room_mode_set(
    keys: RoomKeys, *, changes_json: str, keyed: idempotency.KeyedCall | None
) -> tuple[str, str]:
    """(the room's mode JSON after merging `changes_json` into it, who holds the turn)."""
    res = await _run_write(
        keys,
        scripts.SET_ROOM_MODE_SCRIPT,
        [keys.meta],
        [changes_json, _ttl()],
        wrote=scripts.WROTE_ALWAYS,
        keyed=keyed,
    )
    return str(res[0]), str(res[1] or "")


async def reviews_list(keys: RoomKeys) -> list[str]:
    """Every review's JSON, newest first (at most ROOM_REVIEWS_MAX)."""
    r = client()
    ids = await _awaited(r.zrevrange(keys.review_order, 0, -1))
    if not ids:
        return []
    found = await _awaited(r.hmget(keys.reviews, ids))
    return [str(v) for v in found if v is not None]


# --- Presence ---------------------------------------------------------------------------


async def presence_beat(
    keys: RoomKeys,
    *,
    agent_id: str,
    now_ms: int,
    shown: int,
    tags: list[str] | None = None,
    keyed: idempotency.KeyedCall | None,
) -> tuple[int, list[tuple[str, int]]]:
    """(agents the room remembers, the `shown` most recently seen with their times). With
    `tags`, they replace the agent's tags (what `tag:` selectors reach)."""
    total, res = await _run_write(
        keys,
        scripts.HEARTBEAT_SCRIPT,
        [keys.presence, keys.claims, keys.claim_holders, keys.tasks, keys.agent_tags],
        [
            agent_id,
            now_ms,
            _ttl(),
            int(settings.ROOM_AGENTS_MAX),
            shown,
            json.dumps(tags, ensure_ascii=False) if tags is not None else "",
        ],
        wrote=scripts.WROTE_ALWAYS,
        keyed=keyed,
    )
    it = iter(res)
    return int(total), [(str(a), int(float(s))) for a, s in zip(it, it, strict=True)]


async def presence_all(keys: RoomKeys) -> list[tuple[str, int]]:
    res = await client().zrange(keys.presence, 0, -1, withscores=True)
    return [(str(a), int(s)) for a, s in cast("list[tuple[str, float]]", res)]


# --- Locks ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LockGrant:
    acquired: bool
    holder: str | None
    token: int
    remaining_ms: int


async def lock_acquire(
    keys: RoomKeys,
    *,
    resource: str,
    agent_id: str,
    ttl_ms: int,
    now_ms: int,
    keyed: idempotency.KeyedCall | None,
) -> LockGrant | AtQuota:
    res = await _run_write(
        keys,
        scripts.ACQUIRE_LOCK_SCRIPT,
        [keys.lock(resource), keys.fence, keys.lock_index, keys.lock_tokens],
        [agent_id, ttl_ms, now_ms, resource, _ttl(), int(settings.ROOM_LOCKS_MAX)],
        wrote=scripts.WROTE_UNLESS_QUOTA,
        keyed=keyed,
    )
    if int(res[0]) == -1:
        return AtQuota(int(res[1]))
    return LockGrant(
        acquired=int(res[0]) == 1,
        holder=str(res[1]) if res[1] else None,
        token=int(res[2]),
        remaining_ms=max(int(res[3]), 0),
    )


async def lock_release(
    keys: RoomKeys, *, resource: str, agent_id: str, keyed: idempotency.KeyedCall | None
) -> tuple[bool, str | None]:
    res = await _run_write(
        keys,
        scripts.RELEASE_LOCK_SCRIPT,
        [keys.lock(resource), keys.lock_index, keys.lock_tokens],
        [agent_id, resource],
        wrote=scripts.WROTE_ALWAYS,
        keyed=keyed,
    )
    return int(res[0]) == 1, (str(res[1]) if len(res) > 1 else None)


async def lock_all(keys: RoomKeys, *, now_ms: int) -> list[tuple[str, str, int]]:
    """(resource, holder, remaining ms) of every lock still held."""
    r = client()
    resources = [str(x) for x in await r.zrangebyscore(keys.lock_index, f"({now_ms}", "+inf")]
    if not resources:
        return []
    pipe = r.pipeline(transaction=False)
    for res in resources:
        pipe.get(keys.lock(res))
        pipe.pttl(keys.lock(res))
    out = await pipe.execute()
    held = []
    for i, res in enumerate(resources):
        holder, pttl = out[2 * i], out[2 * i + 1]
        if holder is not None and int(pttl) > 0:
            held.append((res, str(holder), int(pttl)))
    return held


# --- Shared variables -------------------------------------------------------------------


async def var_set(
    keys: RoomKeys, *, key: str, value: str, agent_id: str, keyed: idempotency.KeyedCall | None
) -> str | AtQuota:
    """The shared_var_set event id, or AtQuota (ROOM_VARS_MAX) for a new key."""
    res = await _run_write(
        keys,
        scripts.SET_SHARED_VAR_SCRIPT,
        [keys.vars, *_event_keys(keys)],
        [key, value, agent_id, _ttl(), *_event_args(keys), int(settings.ROOM_VARS_MAX)],
        keyed=keyed,
    )
    return str(res[1]) if int(res[0]) == 1 else AtQuota(int(res[1]))


async def var_get(keys: RoomKeys, key: str) -> str | None:
    return cast("str | None", await _awaited(client().hget(keys.vars, key)))


async def var_all(keys: RoomKeys) -> dict[str, str]:
    return cast("dict[str, str]", await _awaited(client().hgetall(keys.vars)))


# --- Tenancy's hot-path caches ------------------------------------------------------------


async def bearer_cached(digest: str) -> tuple[str | None, int]:
    """(the cached caller JSON or None, the digest's generation), in one round trip. A fill
    must carry that generation: a revocation in between bumps it and the fill is dropped."""
    keys = BearerKeys(digest)
    cached, generation = await client().mget([keys.cache, keys.generation])
    return (str(cached) if cached is not None else None), int(generation or 0)


async def bearer_cache_fill(digest: str, value: str, *, ttl_seconds: int, generation: int) -> bool:
    """Cache `value` unless the digest was revoked since `generation` was read."""
    keys = BearerKeys(digest)
    res = await _run(
        scripts.FILL_BEARER_SCRIPT,
        [keys.cache, keys.generation],
        [value, ttl_seconds * 1000, generation],
    )
    return int(res) == 1


async def bearers_forget(digests: list[str]) -> None:
    """Revocation: bump each digest's generation and drop its cache entry, atomically per
    digest, so no request already in flight can put it back."""
    for digest in digests:
        keys = BearerKeys(digest)
        await _run(scripts.FORGET_BEARER_SCRIPT, [keys.cache, keys.generation], [])


async def room_owner_cache(keys: RoomKeys, team_id: str, *, recorded: str = "") -> bool:
    """Record the owner the database settled on (the database is the record), and for a
    room whose keys Redis lost, the status the database records. False when the room is
    being archived or was just archived: nothing is made (a first touch racing an archive
    must not bring the room back to life)."""
    res = await _run(
        scripts.OWNER_CACHE_SCRIPT, [keys.owner, keys.meta], [team_id, _ttl(), recorded]
    )
    return int(res) == 1


async def room_activity_due(keys: RoomKeys, *, every_seconds: int) -> bool:
    """True at most once per `every_seconds` per room: time to write last_active_at."""
    return bool(await client().set(keys.active_mark, "1", nx=True, ex=every_seconds))


async def room_forget(keys: RoomKeys, *, tombstone: bool = False) -> None:
    """Delete every key of a room (the room, or its team, was deleted; or it was archived):
    its durable keys, its live locks, and the activity mark. An archive's forget leaves a
    `tombstone`: a meta of status "archived" for a few minutes, so a request that read the
    room's record as live before the archive committed cannot make the room again."""
    r = client()
    resources = [str(x) for x in await r.zrange(keys.lock_index, 0, -1)]
    # UNLINK: a large room's memory is freed off Redis's main thread.
    await r.unlink(*keys.durable(), keys.active_mark, *(keys.lock(x) for x in resources))
    if tombstone:
        await _awaited(r.hset(keys.meta, "status", "archived"))
        await _awaited(r.pexpire(keys.meta, TOMBSTONE_MS))
    await _awaited(r.zrem(claims_due_key(), keys.room_id))


# --- Project memory (rooms.memory) -------------------------------------------------------


async def inherited_replace(keys: RoomKeys, *, project: str, entries: dict[str, str]) -> None:
    """What the room inherits from its project, replaced whole in one step."""
    flat: list[str] = []
    for field_name, text in entries.items():
        flat += [field_name, text]
    await _run(scripts.INHERITED_REPLACE_SCRIPT, [keys.inherited], [_ttl(), project, *flat])


async def inherited_all(keys: RoomKeys) -> tuple[str, dict[str, str]]:
    """(the project's name or "", "<room id>/<context id>" -> entry JSON), in the order
    they were kept: newest rooms first."""
    raw = cast("dict[str, str]", await _awaited(client().hgetall(keys.inherited)))
    project = raw.pop("~project", "")
    order = raw.pop("~order", "")
    fields = [f for f in order.split("\n") if f in raw] if order else list(raw)
    return project, {f: raw[f] for f in fields}


# --- Archives (rooms.snapshots; tenants.archives keeps them in Postgres) -----------------


@dataclass(frozen=True, slots=True)
class RawKey:
    """One key of a room as Redis holds it, bytes throughout (the search index's postings
    are binary). `items`: a string's value alone; a hash's or a sorted set's flat pairs
    (field, value / member, score); a list's or a set's members. A stream has its
    (last-generated id, entries added, max deleted id) and its entries instead."""

    part: str
    type: str
    expire_at_ms: int  # -1: none of its own (it lives as long as the room)
    items: list[bytes] = field(default_factory=list)
    stream_ids: tuple[bytes, bytes, bytes] | None = None
    entries: list[tuple[bytes, list[bytes]]] = field(default_factory=list)


TOMBSTONE_MS = 10 * 60 * 1000  # longer than any request an archive could race


async def room_freeze(keys: RoomKeys) -> str | None:
    """The room's status before this archive (it is "archiving" now, and every write step
    is refused), or None when Redis holds no room (it is marked "archiving" all the same,
    so no first touch makes one meanwhile)."""
    res = await _run(scripts.FREEZE_ROOM_SCRIPT, [keys.owner, keys.meta], [TOMBSTONE_MS])
    return None if res is None else str(res)


async def room_status_event(keys: RoomKeys, *, status: str, previous: str, by: str) -> str:
    """The log's room_status_changed event of an archive or a restore (not a write step: an
    archiving room refuses those)."""
    res = await _run(
        scripts.STATUS_EVENT_SCRIPT,
        [keys.meta, keys.events, keys.reads, *room_tail(keys)],
        [status, previous, by, _ttl(), *_event_args(keys)],
    )
    return str(res)


async def room_thaw(keys: RoomKeys, status: str) -> None:
    """The archive was not recorded: the room takes writes again, in `status`."""
    await _run(scripts.THAW_ROOM_SCRIPT, [keys.meta], [status])


# Chunks a snapshot is read in and a load written in: each command is short.
SNAPSHOT_CHUNK = 500
STAGING_MS = 15 * 60 * 1000  # a copy left by a process that died goes by itself


async def room_snapshot(keys: RoomKeys) -> list[RawKey]:
    """Every key of the room an archive holds, as one moment of it: copied in one short
    step, then read out of the copies in chunks, so a large room never holds Redis up."""
    token = secrets.token_hex(8)
    parts = keys.snapshot_parts()
    names = list(parts)
    staged = [keys.staged(token, part) for part in names]
    rows = await _run(
        scripts.COPY_ROOM_SCRIPT, [*parts.values(), *staged], [len(names), STAGING_MS]
    )
    r = raw_client()
    out: list[RawKey] = []
    try:
        for row in rows:
            index, kind, at = int(row[0]), str(row[1]), int(row[2])
            key, part = staged[index - 1], names[index - 1]
            if kind == "stream":
                ids = (str(row[3]).encode(), str(row[4]).encode(), str(row[5]).encode())
                out.append(RawKey(part, kind, at, stream_ids=ids, entries=await _entries(r, key)))
            else:
                out.append(RawKey(part, kind, at, await _items(r, key, kind)))
    finally:
        await _awaited(client().unlink(*staged))
    return out


async def _items(r: Store, key: str, kind: str) -> list[bytes]:
    if kind == "string":
        return [cast("bytes", await _awaited(r.get(key)))]
    items: list[bytes] = []
    if kind in ("list", "zset"):
        start = 0
        while True:
            # Through a script: its answer is Redis's own (redis-py turns scores into floats).
            got = await _eval(
                r, scripts.RANGE_CHUNK_SCRIPT, [key], [kind, start, start + SNAPSHOT_CHUNK - 1]
            )
            items += got
            if len(got) < SNAPSHOT_CHUNK * (1 if kind == "list" else 2):
                return items
            start += SNAPSHOT_CHUNK
    scan = "HSCAN" if kind == "hash" else "SSCAN"
    seen: dict[bytes, bytes | None] = {}
    cursor: Any = 0
    while True:
        cursor, got = await r.execute_command(scan, key, cursor, "COUNT", SNAPSHOT_CHUNK)
        if isinstance(got, dict):  # redis-py answers HSCAN as a dict
            seen.update(got)  # a field seen twice (a rehash) counts once
        elif kind == "hash":
            for i in range(0, len(got), 2):
                seen[got[i]] = got[i + 1]
        else:
            seen.update(dict.fromkeys(got))
        if int(cursor) == 0:
            break
    for field_name, value in seen.items():
        items.append(field_name)
        if value is not None:
            items.append(value)
    return items


async def _entries(r: Store, key: str) -> list[tuple[bytes, list[bytes]]]:
    out: list[tuple[bytes, list[bytes]]] = []
    start = "-"
    while True:
        got = await r.execute_command("XRANGE", key, start, "+", "COUNT", SNAPSHOT_CHUNK)
        for entry_id, fields in got:
            flat: list[bytes] = []
            if isinstance(fields, dict):
                for f, v in fields.items():
                    flat += [f, v]
            else:
                flat = list(fields)
            out.append((entry_id, flat))
        if len(got) < SNAPSHOT_CHUNK:
            return out
        start = "(" + out[-1][0].decode()


async def room_load(
    keys: RoomKeys,
    raw: list[RawKey],
    *,
    team_id: str,
    status: str,
    ttl_ms: int,
    view: bool,
) -> bool:
    """Put a room back from its snapshot, owned by `team_id`, in `status`: every key as it
    was (stream ids included), those without an expiry of their own living `ttl_ms`, those
    with one (idempotency records) until it, if it is still ahead. The keys are written in
    chunks to copies first, then put in place in one short step. A `view` (an archived
    room's read-only copy) never replaces a room that is there: False then."""
    token = secrets.token_hex(8)
    parts = keys.snapshot_parts()
    names = list(parts)
    index = {part: i + 1 for i, part in enumerate(names)}
    staged = [keys.staged(token, part) for part in names]
    r = client()
    tail: list[Any] = []
    try:
        for key in raw:
            where = index.get(key.part)
            if where is None:
                continue  # checked by rooms.snapshots before it gets here
            await _staged_write(r, staged[where - 1], key)
            ids = key.stream_ids or (b"", b"", b"")
            tail += [where, key.expire_at_ms, *ids]
        res = await _run(
            scripts.LOAD_ROOM_SCRIPT,
            [keys.owner, keys.meta, *parts.values(), *staged],
            [team_id, status, ttl_ms, clock.now_ms(), "1" if view else "0", len(names), *tail],
        )
    except BaseException:
        await _awaited(r.unlink(*staged))
        raise
    return int(res) == 1


async def _staged_write(r: Store, key: str, raw: RawKey) -> None:
    pipe = r.pipeline(transaction=False)
    queued = 0

    async def flush(force: bool = False) -> None:
        nonlocal pipe, queued
        if queued and (force or queued >= SNAPSHOT_CHUNK):
            pipe.pexpire(key, STAGING_MS)
            await pipe.execute()
            pipe = r.pipeline(transaction=False)
            queued = 0

    if raw.type == "stream":
        for entry_id, fields in raw.entries:
            pipe.execute_command("XADD", key, entry_id, *fields)
            queued += 1
            await flush()
    elif raw.type == "string":
        pipe.execute_command("SET", key, raw.items[0])
        queued += 1
    else:
        verb = {"hash": "HSET", "list": "RPUSH", "set": "SADD", "zset": "ZADD"}[raw.type]
        step = 2 * SNAPSHOT_CHUNK if raw.type in ("hash", "zset") else SNAPSHOT_CHUNK
        for at in range(0, len(raw.items), step):
            chunk = raw.items[at : at + step]
            if raw.type == "zset":  # stored member, score; ZADD takes score, member
                chunk = [x for i in range(0, len(chunk), 2) for x in (chunk[i + 1], chunk[i])]
            pipe.execute_command(verb, key, *chunk)
            queued += 1
            await flush()
    await flush(force=True)


async def room_claims_due_restore(keys: RoomKeys) -> None:
    """A restored room's leased claims are the sweeper's again (its index is one key of
    its own, outside the room's slot, so not part of the load's step)."""
    r = client()
    first = await _awaited(r.zrange(keys.claims, 0, 0, withscores=True))
    if first:
        await _awaited(r.zadd(claims_due_key(), {keys.room_id: int(first[0][1])}, lt=True))


async def room_loading(keys: RoomKeys, *, seconds: int) -> bool:
    """True for the one caller that may load the room now (the others wait for it)."""
    return bool(await client().set(keys.loading, "1", nx=True, ex=seconds))


async def room_loading_done(keys: RoomKeys) -> None:
    await client().delete(keys.loading)


async def room_present(keys: RoomKeys) -> bool:
    return bool(await client().exists(keys.owner))


async def room_id_warned(team_id: int, room_id: str, *, seconds: int) -> bool:
    """True when the team was already told `room_id` looks like one of its rooms (within
    `seconds`); otherwise records that it is told now, and False."""
    return not await client().set(TeamKeys(team_id).room_warned(room_id), "1", nx=True, ex=seconds)


async def bearer_generation(digest: str) -> int:
    """The digest's generation now: equal to one read earlier, nothing was revoked since."""
    return int(await client().get(BearerKeys(digest).generation) or 0)


async def team_budget_forget(team_id: int) -> None:
    """The team is gone: its call window and slot sets go, and its epoch moves on."""
    bucket = f"team:{team_id}"
    await limiter().delete(TeamKeys(team_id).calls(bucket))
    await client().delete(*(open_slots(f"{kind}:{bucket}") for kind in ("streams", "waiters")))
    await team_epoch_bump(team_id)


# --- Rate limiting (its own connection: when it fails, requests go through) --------------


@dataclass(frozen=True, slots=True)
class BudgetStep:
    """What one budget step answered: allowed, calls left or retry-after ms, the epoch."""

    allowed: bool
    value: int
    epoch: int
    # Refused by the shared ceiling (a guest's team's guests together), not the bucket's own.
    by_ceiling: bool = False


async def budget_step(
    team_id: int,
    bucket: str,
    *,
    now_ms: int,
    window_ms: int,
    limit: int,
    member: str,
    ceiling: tuple[str, int] | None = None,
) -> BudgetStep:
    """Charge one call to `bucket` (limit 0: charge nothing) and read the team's epoch, in
    one round trip to the limiter. `ceiling`: a second window of the team, (bucket, limit),
    charged with it, the call refused when either is full. Raises StoreDown when the
    limiter does not answer."""
    keys = TeamKeys(team_id)
    if ceiling is None:
        res = await _eval(
            limiter(),
            scripts.BUDGET_STEP_SCRIPT,
            [keys.calls(bucket), keys.epoch],
            [now_ms, window_ms, limit, member],
        )
        return BudgetStep(int(res[0]) == 1, int(res[1]), int(res[2]))
    shared, shared_limit = ceiling
    res = await _eval(
        limiter(),
        scripts.BUDGET_STEP_GUEST_SCRIPT,
        [keys.calls(bucket), keys.calls(shared), keys.epoch],
        [now_ms, window_ms, limit, shared_limit, member],
    )
    return BudgetStep(int(res[0]) == 1, int(res[1]), int(res[2]), by_ceiling=int(res[3]) == 2)


async def team_epoch_bump(team_id: int) -> int:
    """Every process's cached callers and room answers of the team are stale from now."""
    return int(await limiter().incr(TeamKeys(team_id).epoch))


async def rate_window_hit(
    bucket: str, *, now_ms: int, window_ms: int, limit: int, member: str
) -> tuple[bool, int]:
    """(allowed, remaining) or (False, retry-after ms). Raises the client's error when the
    limiter's Redis does not answer; the caller decides to fail open."""
    res = await _eval(
        limiter(),
        scripts.SLIDING_WINDOW_SCRIPT,
        [rate_window(bucket)],
        [now_ms, window_ms, limit, member],
    )
    return int(res[0]) == 1, int(res[1])


LimiterError = StoreDown


async def rate_window_stats(bucket: str, *, now_ms: int, window_ms: int) -> tuple[int, int]:
    """(hits of `bucket` in the window ending now, time of the newest hit in ms or 0)."""
    r = limiter()
    pipe = r.pipeline(transaction=False)
    pipe.zcount(rate_window(bucket), f"({now_ms - window_ms}", "+inf")
    pipe.zrange(rate_window(bucket), -1, -1, withscores=True)
    count, newest = await pipe.execute()
    return int(count), int(newest[0][1]) if newest else 0


async def rate_window_clear(bucket: str) -> None:
    await limiter().delete(rate_window(bucket))


# --- Budgets of open streams and waiters ------------------------------------------------------


async def slot_admit(bucket: str, slot_id: str, *, now_ms: int, lease_ms: int, cap: int) -> bool:
    """Take (or renew) one of `cap` slots of `bucket`; False when all are taken. Slots are
    leases: a server that dies without releasing frees them when they lapse."""
    res = await _run(
        scripts.ADMIT_SLOT_SCRIPT, [open_slots(bucket)], [slot_id, now_ms, lease_ms, cap]
    )
    return int(res) == 1


async def slots_admit(
    buckets: list[tuple[str, int]], slot_id: str, *, now_ms: int, lease_ms: int
) -> int:
    """Take (or renew) `slot_id` in every (bucket, cap) at once, in one step: 0 when taken,
    else the 1-based index of the first bucket that is full (then none is taken). The
    buckets must share a hash tag (one cluster slot). Leases, as in `slot_admit`."""
    res = await _run(
        scripts.ADMIT_SLOTS_SCRIPT,
        [open_slots(bucket) for bucket, _ in buckets],
        [slot_id, now_ms, lease_ms, *(cap for _, cap in buckets)],
    )
    return int(res)


async def slot_release(bucket: str, slot_id: str) -> None:
    await client().zrem(open_slots(bucket), slot_id)


_releasing: dict[int, tuple[asyncio.AbstractEventLoop, list[tuple[str, str]]]] = {}


def slot_release_soon(bucket: str, slot_id: str) -> None:
    """Give a slot back without waiting for it: the releases of one turn of the event loop
    (the waiters one write woke) go in one pipeline. With Redis away the slot's lease
    lapses by itself."""
    loop = asyncio.get_running_loop()
    pending = _releasing.get(id(loop))
    if pending is None or pending[0] is not loop:  # none yet, or a closed loop's (same id)
        pending = _releasing[id(loop)] = (loop, [])
        loop.call_soon(_releases_run)
    pending[1].append((bucket, slot_id))


def _releases_taken(loop: asyncio.AbstractEventLoop) -> list[tuple[str, str]]:
    found = _releasing.get(id(loop))
    if found is None or found[0] is not loop:
        return []
    del _releasing[id(loop)]
    return found[1]


def _releases_run() -> None:
    pending = _releases_taken(asyncio.get_running_loop())
    if pending:
        task = asyncio.get_running_loop().create_task(_releases_step(pending))
        _in_flight.add(task)
        task.add_done_callback(_in_flight.discard)


async def _releases_step(pending: list[tuple[str, str]]) -> None:
    by_bucket: dict[str, list[str]] = {}
    for bucket, slot_id in pending:
        by_bucket.setdefault(bucket, []).append(slot_id)
    try:
        pipe = client().pipeline(transaction=False)
        for bucket, ids in by_bucket.items():
            pipe.zrem(open_slots(bucket), *ids)
        await pipe.execute()
    except StoreDown:
        pass


# --- Service signals: revocations and webhook changes, to every process --------------------------


async def revocation_publish(refs: list[str]) -> None:
    """Tell every process that these credentials' live uses must be checked again now."""
    r = client()
    for ref in refs:
        await r.execute_command("PUBLISH", revocations_channel(), ref)


async def webhooks_changed_publish(room_id: str) -> None:
    await client().execute_command("PUBLISH", webhooks_channel(), room_id)


async def broker_health(url: str, timeout: float) -> str | None:
    """None when the Celery broker at `url` (a Redis URL) answers a PING in time."""
    broker = aioredis.Redis.from_url(
        url.replace("redis+socket://", "unix://"),
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
    )
    try:
        await asyncio.wait_for(_awaited(broker.ping()), timeout)
    except StoreDown as exc:
        return f"{type(exc).__name__}: {exc}"[:200] or "no answer"
    finally:
        await broker.aclose()
    return None


# --- Leases ---------------------------------------------------------------------------------


LEASES_MOVED = -9  # a lease script's answer: a lease was granted since the view it was given


def _unwritten(call: idempotency.KeyedCall | None) -> None:
    """The step wrote nothing and its call will run it again (decided on a newer view)."""
    if call is not None:
        call.written = False


@dataclass(frozen=True, slots=True)
class LeaseView:
    """The room's leases as one step read them: `generation` counts the grants of new
    leases so far; `leases` are the raw JSON of every lease kept (some may be expired)."""

    generation: str
    leases: list[str]


@dataclass(frozen=True, slots=True)
class LeaseDecision:
    """What a service decided on a LeaseView, for the write step that acts on it: the
    view's generation, the conflicts found (JSON, "[]" for none) and the agent's own live
    leases of the paths asked for ({path: lease id})."""

    generation: str
    conflicts_json: str = "[]"
    own: dict[str, str] | None = None


async def leases_view(keys: RoomKeys) -> LeaseView:
    res = await _run(scripts.LEASES_VIEW_SCRIPT, [keys.leases, keys.meta], [])
    return LeaseView(str(res[0]), [str(x) for x in res[1]])


async def leases_live(keys: RoomKeys, *, now_ms: int) -> list[str]:
    """Every live lease's JSON (no path matched: rooms.overlaps does that)."""
    view = await leases_view(keys)
    return [raw for raw in view.leases if int(json.loads(raw)["expires_ms"]) > now_ms]


@dataclass(frozen=True, slots=True)
class LeaseStep:
    """What a lease script answered: "granted", "renewed" (the agent's own lease of that
    path), "conflict" (`conflicts`), "quota" (`used`), "unknown_task", "moved" (a lease was
    granted since the decision's view: nothing written); for a renewal or a release, "ok",
    "unknown" (no such live lease) or "not_holder"."""

    outcome: str
    lease_json: str = ""
    event_id: str = ""
    conflicts_json: str = "[]"
    used: int = 0


async def lease_claim(
    keys: RoomKeys,
    *,
    lease_id: str,
    agent_id: str,
    path: str,
    mode: str,
    ttl_ms: int,
    task_id: str | None,
    reason: str | None,
    now_ms: int,
    decided: LeaseDecision,
    keyed: idempotency.KeyedCall | None,
) -> LeaseStep:
    res = await _run_write(
        keys,
        scripts.LEASE_CLAIM_SCRIPT,
        [keys.leases, keys.lease_expiry, keys.meta, keys.events, keys.reads, keys.tasks],
        [
            agent_id,
            path,
            mode,
            ttl_ms,
            task_id or "",
            reason or "",
            now_ms,
            _ttl(),
            *_event_args(keys),
            lease_id,
            int(settings.ROOM_LEASES_MAX),
            decided.generation,
            decided.conflicts_json,
            (decided.own or {}).get(path, ""),
        ],
        wrote="type(__res) == 'table' and (__res[1] == 1 or __res[1] == 2)",
        keyed=keyed,
    )
    code = int(res[0])
    if code == 1:
        return LeaseStep("granted", str(res[1]), str(res[2]))
    if code == 2:
        return LeaseStep("renewed", str(res[1]))
    if code == 0:
        return LeaseStep("conflict", conflicts_json=str(res[1]))
    if code == -1:
        return LeaseStep("quota", used=int(res[1]))
    if code == LEASES_MOVED:
        _unwritten(keyed)
        return LeaseStep("moved")
    return LeaseStep("unknown_task")


async def lease_change(
    keys: RoomKeys,
    *,
    agent_id: str,
    lease_id: str | None,
    path: str | None,
    release: bool,
    ttl_ms: int,
    now_ms: int,
    keyed: idempotency.KeyedCall | None,
) -> LeaseStep:
    res = await _run_write(
        keys,
        scripts.LEASE_CHANGE_SCRIPT,
        [keys.leases, keys.lease_expiry, keys.meta, keys.events, keys.reads],
        [
            agent_id,
            lease_id or "",
            path or "",
            "release" if release else "renew",
            ttl_ms,
            now_ms,
            _ttl(),
            *_event_args(keys),
        ],
        keyed=keyed,
    )
    code = int(res[0])
    if code == 1:
        return LeaseStep("ok", str(res[1]), str(res[2]))
    if code == -2:
        return LeaseStep("not_holder", str(res[1]))
    return LeaseStep("unknown")


async def file_read_note(
    keys: RoomKeys,
    *,
    agent_id: str,
    path: str,
    record_json: str,
    keyed: idempotency.KeyedCall | None,
) -> int | None:
    """None when noted; the reads noted in the room when it is at ROOM_FILE_READS_MAX."""
    res = await _run_write(
        keys,
        scripts.NOTE_READ_SCRIPT,
        [keys.file_reads],
        [f"{agent_id}\n{path}", record_json, int(settings.ROOM_FILE_READS_MAX), _ttl()],
        keyed=keyed,
    )
    return None if int(res[0]) == 1 else int(res[1])


async def file_drift(keys: RoomKeys, *, agent_id: str, path: str) -> tuple[str | None, list[str]]:
    """(the agent's noted read of the path, every lease's JSON) in one step."""
    res = await _run(scripts.DRIFT_SCRIPT, [keys.file_reads, keys.leases], [f"{agent_id}\n{path}"])
    return (str(res[0]) or None), [str(x) for x in res[1]]


# --- Messages ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageStep:
    """What a message write came to: "sent", "acked", "unknown" (no such kept message),
    "unknown_reply", "unknown_agent" (`known` is who the room has seen), "not_recipient",
    "expired"."""

    outcome: str
    message_json: str = ""
    event_id: str = ""
    at_ms: int = 0
    known: list[str] = field(default_factory=list)


async def message_send(
    keys: RoomKeys,
    *,
    sender: str,
    kind: str,
    value: str,
    to: str,
    message_id: str,
    message_json: str,
    reply_to: str | None,
    expires_ms: int,
    now_ms: int,
    hint_sample: int,
    turn: turns.TurnClaim,
    holders: tuple[str, list[tuple[str, str]]] | None = None,
    keyed: idempotency.KeyedCall | None,
) -> MessageStep:
    """`holders` (a file: selector): the lease generation the service matched the glob on,
    and the (agent, lease id) pairs it found; "moved" when a lease was granted since."""
    res = await _run_write(
        keys,
        scripts.SEND_MESSAGE_SCRIPT,
        [
            *keys.message_keys,
            keys.presence,
            keys.cursors,
            keys.agent_tags,
            keys.leases,
            keys.lease_expiry,
            keys.meta,
            keys.events,
            keys.reads,
        ],
        [
            sender,
            kind,
            value,
            to,
            message_id,
            message_json,
            reply_to or "",
            expires_ms,
            now_ms,
            _ttl(),
            *_event_args(keys),
            int(settings.ROOM_MESSAGES_MAX),
            int(settings.ROOM_DELIVERIES_MAX),
            int(settings.ROOM_MESSAGE_BYTES_MAX),
            hint_sample,
            int(settings.ROOM_MESSAGE_AGENTS_MAX),
            holders[0] if holders else "",
            json.dumps(holders[1] if holders else []),
        ],
        turn=turn,
        keyed=keyed,
    )
    code = int(res[0])
    if code == 1:
        return MessageStep("sent", str(res[1]), str(res[2]))
    if code == LEASES_MOVED:
        _unwritten(keyed)
        return MessageStep("moved")
    if code == -4:
        return MessageStep("unknown_agent", known=[str(a) for a in res[1]])
    return MessageStep("unknown_reply")


@dataclass(frozen=True, slots=True)
class InboxRead:
    ever: int
    read: int
    last_ms: int
    unread: int
    messages: list[tuple[str, str, int]]  # (message JSON, state, since ms)


async def message_inbox(
    keys: RoomKeys, *, agent_id: str, limit: int, unread_only: bool, mark: bool, now_ms: int
) -> InboxRead:
    """The agent's deliveries; with `mark`, the unread ones returned are read from now on,
    in the same step. Never an idempotent write: it answers what is unread now."""
    res = await _run(
        scripts.INBOX_SCRIPT,
        [keys.messages, keys.deliveries, keys.inbox, keys.message_stats],
        [agent_id, limit, "1" if unread_only else "0", now_ms, _ttl(), "1" if mark else "0"],
    )
    head = res[0]
    return InboxRead(
        ever=int(head[0]),
        read=int(head[1]),
        last_ms=int(head[2]),
        unread=int(head[3]),
        messages=[(str(m[0]), str(m[1]), int(m[2])) for m in res[1:]],
    )


async def message_ack(
    keys: RoomKeys,
    *,
    agent_id: str,
    message_id: str,
    now_ms: int,
    keyed: idempotency.KeyedCall | None,
) -> MessageStep:
    res = await _run_write(
        keys,
        scripts.ACK_MESSAGE_SCRIPT,
        [keys.messages, keys.deliveries, keys.message_stats, keys.meta, keys.events, keys.reads],
        [agent_id, message_id, now_ms, _ttl(), *_event_args(keys)],
        keyed=keyed,
    )
    code = int(res[0])
    if code == 1:
        return MessageStep("acked", str(res[1]), str(res[3]), at_ms=int(res[2]))
    if code == -2:
        return MessageStep("not_recipient", str(res[1]))
    if code == -5:
        return MessageStep("expired", str(res[1]), at_ms=int(res[2]))
    return MessageStep("unknown")


async def messages_sent(
    keys: RoomKeys, *, agent_id: str | None, limit: int
) -> list[tuple[str, list[str]]]:
    """The newest `limit` kept messages of a sender (of anyone: None), each with its
    deliveries' state values in the order of its recipients."""
    res = await _run(
        scripts.SENT_MESSAGES_SCRIPT,
        [keys.messages, keys.deliveries, keys.outbox, keys.message_order],
        [agent_id or "", limit],
    )
    return [(str(m[0]), [str(v) for v in m[1]]) for m in res]


async def message_hint_sample(keys: RoomKeys, *, size: int) -> list[tuple[str, str]]:
    """The newest kept messages as (id, "from → to: subject") for unknown-id hints."""
    ids = cast("list[str]", await client().zrevrange(keys.message_order, 0, size - 1))
    if not ids:
        return []
    raws = await client().hmget(keys.messages, ids)
    out: list[tuple[str, str]] = []
    for raw in raws:
        if raw:
            m = json.loads(raw)
            out.append((str(m["messageId"]), f"{m['from']} → {m['to']}: {m.get('subject') or ''}"))
    return out


# --- Handoffs ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HandoffStep:
    """What a handoff write came to: "ok", "unknown", "done", "not_owner", "offered"
    (one is pending already), "unknown_agent" (`known`: who the room has seen),
    "unknown_context" (`missing`), "quota", "not_receiver", "resolved", "void"."""

    outcome: str
    handoff_json: str = ""
    task_json: str = ""
    event_id: str = ""
    known: list[str] = field(default_factory=list)
    missing: str = ""
    used: int = 0


async def handoff_offer(
    keys: RoomKeys,
    *,
    task_id: str,
    sender: str,
    receiver: str,
    handoff_id: str,
    handoff_json: str,
    context_ids: list[str],
    now_ms: int,
    now_iso: str,
    hint_sample: int,
    keyed: idempotency.KeyedCall | None,
) -> HandoffStep:
    res = await _run_write(
        keys,
        scripts.HANDOFF_OFFER_SCRIPT,
        [
            *_task_keys(keys),
            keys.handoffs,
            keys.handoff_order,
            keys.presence,
            keys.cursors,
            keys.context,
        ],
        [
            task_id,
            sender,
            receiver,
            handoff_json,
            handoff_id,
            json.dumps(context_ids),
            now_ms,
            now_iso,
            _ttl(),
            *_event_args(keys),
            int(settings.ROOM_HANDOFFS_MAX),
            hint_sample,
        ],
        keyed=keyed,
    )
    code = int(res[0])
    if code == 1:
        return HandoffStep("ok", str(res[1]), event_id=str(res[2]))
    if code == 0:
        return HandoffStep("unknown")
    if code == -4:
        return HandoffStep("unknown_agent", known=[str(a) for a in res[1]])
    if code == -5:
        return HandoffStep("unknown_context", missing=str(res[1]))
    if code == -6:
        return HandoffStep("quota", used=int(res[1]))
    if code == -3:
        return HandoffStep("offered", str(res[2]), str(res[1]))
    return HandoffStep({-1: "done", -2: "not_owner"}[code], task_json=str(res[1]))


async def handoff_resolve(
    keys: RoomKeys,
    *,
    handoff_id: str,
    agent_id: str,
    accept: bool,
    note: str | None,
    now_ms: int,
    now_iso: str,
    keyed: idempotency.KeyedCall | None,
) -> HandoffStep:
    res = await _run_write(
        keys,
        scripts.HANDOFF_RESOLVE_SCRIPT,
        [*_task_keys(keys), keys.handoffs],
        [
            handoff_id,
            agent_id,
            "accepted" if accept else "declined",
            note or "",
            now_ms,
            now_iso,
            _ttl(),
            *_event_args(keys),
        ],
        keyed=keyed,
    )
    code = int(res[0])
    if code == 0:
        return HandoffStep("unknown")
    if code == 1:
        return HandoffStep("ok", str(res[1]), str(res[2]), str(res[3]))
    if code == -4:
        return HandoffStep("void", str(res[1]), str(res[2]))
    return HandoffStep({-2: "not_receiver", -3: "resolved"}[code], str(res[1]))


async def handoffs_all(keys: RoomKeys) -> list[str]:
    """Every kept handoff's JSON, oldest first (at most ROOM_HANDOFFS_MAX)."""
    r = client()
    ids = cast("list[str]", await _awaited(r.zrange(keys.handoff_order, 0, -1)))
    if not ids:
        return []
    found = await _awaited(r.hmget(keys.handoffs, ids))
    return [str(v) for v in found if v is not None]
