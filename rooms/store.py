"""The only module that talks to Redis: one typed async function per atomic step.

Functions here take a `RoomKeys` and plain values, run one script (or one read), and turn
the script's codes into typed results or `None` for "not found". Domain rules and
messages live in services/selectors; this module knows nothing of tools or callers.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis
from asgiref.sync import async_to_sync
from django.conf import settings
from redis.commands.core import AsyncScript

from rooms import scripts
from rooms.keys import (
    RoomKeys,
    bearer_cache,
    open_streams,
    rate_window,
    room_of_wake_channel,
    wake_pattern,
)

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = (
    weakref.WeakKeyDictionary()
)
_scripts: dict[tuple[int, str], AsyncScript] = {}
T = TypeVar("T")


def redis_url() -> str:
    url = str(settings.REDIS_URL)
    if not url:
        raise RuntimeError(
            "REDIS_URL is empty: start the embedded Redis first (config.embedded_redis) "
            "or point REDIS_URL at a server."
        )
    return url


def client() -> aioredis.Redis:
    """The connection pool of the running event loop (a pool cannot cross loops)."""
    loop = asyncio.get_running_loop()
    found = _clients.get(loop)
    if found is None:
        # A blocking pool: a burst of requests beyond max_connections waits for a free
        # connection instead of failing (no "busy, retry" under load).
        pool = aioredis.BlockingConnectionPool.from_url(
            redis_url(),
            decode_responses=True,
            max_connections=settings.REDIS_MAX_CONNECTIONS,
            timeout=30,
            health_check_interval=30,
        )
        found = aioredis.Redis.from_pool(pool)  # closing the client closes the pool
        _clients[loop] = found
    return found


async def close_client() -> None:
    loop = asyncio.get_running_loop()
    hub = _hubs.pop(loop, None)
    if hub is not None:
        await hub.close()
    for registry in (_clients, _limiter_clients):
        found = registry.pop(loop, None)
        if found is not None:
            await found.aclose()


def run_sync(fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any) -> T:
    """Run an async store operation from sync code (DRF views, admin, commands).

    Under the ASGI server this hops onto the server's event loop and its pool; from plain
    sync code (tests, commands) asgiref makes a loop for the call, and the pool made for
    it is closed before that loop goes away.
    """

    async def runner() -> T:
        loop = asyncio.get_running_loop()
        had_pool = loop in _clients
        try:
            return await fn(*args, **kwargs)
        finally:
            if not had_pool:
                await close_client()

    return async_to_sync(runner)()


def _script(source: str) -> AsyncScript:
    r = client()
    key = (id(r), source)
    found = _scripts.get(key)
    if found is None:
        found = r.register_script(source)
        _scripts[key] = found
    return found


async def _run(source: str, keys: list[str], args: list[Any]) -> Any:
    return await _script(source)(keys=keys, args=args)


async def _awaited(result: Any) -> Any:
    """redis-py types its async commands as `Awaitable[T] | T`; on the asyncio client they
    are always awaitables."""
    return await result


def _ttl() -> int:
    return int(settings.ROOM_IDLE_TTL_SECONDS) * 1000


def _cap() -> int:
    return int(settings.ROOM_EVENT_CAP)


async def ping() -> bool:
    """One PING round trip: proves the store answers."""
    return bool(await _awaited(client().ping()))


# --- Rooms ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoomAccess:
    code: int  # 1 the team owns it, 0 nobody does (no claim asked), -1 another team does
    hooked: bool = False  # the room has an active webhook


async def room_access(keys: RoomKeys, *, team_id: str, now_iso: str, claim: bool) -> RoomAccess:
    """Check (and with `claim`, take) ownership; refreshes the room's idle TTL on success."""
    rest = [k for k in keys.durable() if k not in (keys.owner, keys.meta, keys.hooked)]
    res = await _run(
        scripts.ACCESS_ROOM_SCRIPT,
        [keys.owner, keys.meta, *rest, keys.hooked],
        [team_id, _ttl(), now_iso, "1" if claim else "0"],
    )
    return RoomAccess(code=int(res[0]), hooked=len(res) > 2 and int(res[2]) == 1)


async def room_hooked_set(keys: RoomKeys, hooked: bool) -> None:
    if hooked:
        await client().set(keys.hooked, "1", px=_ttl())
    else:
        await client().delete(keys.hooked)


async def room_owner(keys: RoomKeys) -> str | None:
    return cast("str | None", await client().get(keys.owner))


# --- Plan -------------------------------------------------------------------------------


async def task_add(keys: RoomKeys, *, task_id: str, task_json: str, now_iso: str, by: str) -> str:
    return str(
        await _run(
            scripts.ADD_TASK_SCRIPT,
            [keys.tasks, keys.task_order, keys.meta, keys.events],
            [task_id, task_json, now_iso, _ttl(), _cap(), by, keys.wake],
        )
    )


async def task_update(
    keys: RoomKeys, *, task_id: str, changes_json: str, now_iso: str
) -> tuple[str, str] | None:
    """(new task JSON, event id), or None for an unknown task."""
    res = await _run(
        scripts.UPDATE_TASK_SCRIPT,
        [keys.tasks, keys.meta, keys.events],
        [task_id, changes_json, now_iso, _ttl(), _cap(), keys.wake],
    )
    if int(res[0]) == 0:
        return None
    return str(res[1]), str(res[2])


async def task_get(keys: RoomKeys, task_id: str) -> str | None:
    return cast("str | None", await _awaited(client().hget(keys.tasks, task_id)))


@dataclass(frozen=True, slots=True)
class StoredPlan:
    created_at: str | None
    updated_at: str | None
    tasks: list[str]


async def plan_read(keys: RoomKeys) -> StoredPlan:
    res = await _run(scripts.READ_PLAN_SCRIPT, [keys.meta, keys.task_order, keys.tasks], [])
    return StoredPlan(
        created_at=res[0] or None,
        updated_at=res[1] or None,
        tasks=[str(t) for t in res[2:]],
    )


async def task_all(keys: RoomKeys) -> list[str]:
    """Every task JSON, unordered (cheaper than plan order when the caller filters)."""
    return [str(v) for v in await _awaited(client().hvals(keys.tasks))]


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
) -> str:
    return str(
        await _run(
            scripts.WRITE_CONTEXT_SCRIPT,
            [
                keys.context,
                keys.context_payloads,
                keys.context_created,
                keys.context_changed,
                keys.events,
                keys.seq,
            ],
            [
                entry_id,
                entry_json,
                payload_json,
                _ttl(),
                _cap(),
                author,
                to,
                event_payload_json,
                keys.wake,
            ],
        )
    )


@dataclass(frozen=True, slots=True)
class ContextUpdated:
    entry_json: str
    payload_json: str
    event_id: str


async def context_update(
    keys: RoomKeys,
    *,
    entry_id: str,
    changes_json: str,
    payload_json: str | None,
    expected_version: str | None,
    now_iso: str,
) -> ContextUpdated | str | None:
    """The update, or the current version string when `expected_version` is stale, or None
    for an unknown entry."""
    res = await _run(
        scripts.UPDATE_CONTEXT_SCRIPT,
        [
            keys.context,
            keys.context_payloads,
            keys.context_changed,
            keys.context_versions,
            keys.events,
        ],
        [
            entry_id,
            changes_json,
            payload_json or "",
            expected_version or "",
            now_iso,
            _ttl(),
            _cap(),
            keys.wake,
        ],
    )
    code = int(res[0])
    if code == 0:
        return None
    if code == -1:
        return str(res[1])
    return ContextUpdated(entry_json=str(res[1]), payload_json=str(res[2]), event_id=str(res[3]))


async def context_get(keys: RoomKeys, entry_id: str) -> tuple[str, str] | None:
    """(entry JSON without payload, payload JSON), or None."""
    pipe = client().pipeline(transaction=True)
    pipe.hget(keys.context, entry_id)
    pipe.hget(keys.context_payloads, entry_id)
    entry, payload = await pipe.execute()
    if entry is None:
        return None
    return str(entry), str(payload if payload is not None else "null")


async def context_all(keys: RoomKeys) -> list[tuple[str, str]]:
    """Every entry as (entry JSON, payload JSON), newest first."""
    pipe = client().pipeline(transaction=True)
    pipe.zrevrange(keys.context_created, 0, -1)
    pipe.hgetall(keys.context)
    pipe.hgetall(keys.context_payloads)
    order, entries, payloads = await pipe.execute()
    return [(entries[i], payloads.get(i, "null")) for i in order if i in entries]


async def context_ids(keys: RoomKeys) -> list[str]:
    return [str(i) for i in await client().zrevrange(keys.context_created, 0, -1)]


# --- Events -----------------------------------------------------------------------------

StreamEntry = tuple[str, dict[str, str]]


def _entry(raw: Any) -> StreamEntry:
    eid, fields = raw[0], raw[1]
    if isinstance(fields, dict):
        return str(eid), fields
    it = iter(fields)
    return str(eid), dict(zip(it, it, strict=True))


async def event_append(
    keys: RoomKeys, *, type_: str, from_: str, to: str, payload_json: str, reply_to: str | None
) -> str | None:
    """The new event id, or None when `reply_to` names no event in the log."""
    res = await _run(
        scripts.POST_EVENT_SCRIPT,
        [keys.events],
        [type_, from_, to, payload_json, reply_to or "", _ttl(), _cap(), keys.wake],
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
    return [_entry(e) for e in raw]


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


UNREAD_SCAN_STEP = 1000


async def event_read_unread(
    keys: RoomKeys, *, agent_id: str, limit: int, addressed_only: bool
) -> UnreadBatch:
    """Take up to `limit` events after the agent's cursor, moving it atomically.

    With `addressed_only`, events for others are skipped; one script call scans at most
    UNREAD_SCAN_STEP entries (so Redis is never blocked for long), and we call again while
    it stopped at that bound, each step atomic and exactly-once on its own range.
    """
    events: list[StreamEntry] = []
    first: UnreadBatch | None = None
    while True:
        res = await _run(
            scripts.READ_UNREAD_SCRIPT,
            [keys.events, keys.cursors, keys.context_changed],
            [
                agent_id,
                limit - len(events),
                "1" if addressed_only else "0",
                _ttl(),
                UNREAD_SCAN_STEP,
            ],
        )
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


async def event_mark_read(keys: RoomKeys, *, event_id: str, agent_id: str, now_iso: str) -> bool:
    res = await _run(
        scripts.MARK_EVENT_READ_SCRIPT,
        [keys.events, keys.reads],
        [event_id, agent_id, now_iso, _ttl()],
    )
    return int(res) == 1


async def event_reads(keys: RoomKeys, event_id: str) -> str | None:
    return cast("str | None", await _awaited(client().hget(keys.reads, event_id)))


# --- Presence ---------------------------------------------------------------------------


async def presence_beat(keys: RoomKeys, *, agent_id: str, now_ms: int) -> list[tuple[str, int]]:
    res = await _run(scripts.HEARTBEAT_SCRIPT, [keys.presence], [agent_id, now_ms, _ttl()])
    it = iter(res)
    return [(str(a), int(float(s))) for a, s in zip(it, it, strict=True)]


async def presence_all(keys: RoomKeys) -> list[tuple[str, int]]:
    res = await client().zrange(keys.presence, 0, -1, withscores=True)
    return [(str(a), int(s)) for a, s in res]


# --- Locks ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LockGrant:
    acquired: bool
    holder: str | None
    token: int
    remaining_ms: int


async def lock_acquire(
    keys: RoomKeys, *, resource: str, agent_id: str, ttl_ms: int, now_ms: int
) -> LockGrant:
    res = await _run(
        scripts.ACQUIRE_LOCK_SCRIPT,
        [keys.lock(resource), keys.fence, keys.lock_index, keys.lock_tokens],
        [agent_id, ttl_ms, now_ms, resource, _ttl()],
    )
    return LockGrant(
        acquired=int(res[0]) == 1,
        holder=str(res[1]) if res[1] else None,
        token=int(res[2]),
        remaining_ms=max(int(res[3]), 0),
    )


async def lock_release(keys: RoomKeys, *, resource: str, agent_id: str) -> tuple[bool, str | None]:
    res = await _run(
        scripts.RELEASE_LOCK_SCRIPT,
        [keys.lock(resource), keys.lock_index, keys.lock_tokens],
        [agent_id, resource],
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


async def var_set(keys: RoomKeys, *, key: str, value: str, agent_id: str) -> str:
    return str(
        await _run(
            scripts.SET_SHARED_VAR_SCRIPT,
            [keys.vars, keys.events],
            [key, value, agent_id, _ttl(), _cap(), keys.wake],
        )
    )


async def var_get(keys: RoomKeys, key: str) -> str | None:
    return cast("str | None", await _awaited(client().hget(keys.vars, key)))


async def var_all(keys: RoomKeys) -> dict[str, str]:
    return cast("dict[str, str]", await _awaited(client().hgetall(keys.vars)))


# --- Housekeeping (tests and operators) -------------------------------------------------


async def delete_matching(pattern: str) -> int:
    """Delete every key matching `pattern` (SCAN, never KEYS). For test teardown only."""
    r = client()
    n = 0
    async for k in r.scan_iter(match=pattern, count=500):
        n += int(await r.delete(k))
    return n


# --- Tenancy's hot-path cache -----------------------------------------------------------


async def bearer_cache_get(digest: str) -> str | None:
    return cast("str | None", await client().get(bearer_cache(digest)))


async def bearer_cache_set(digest: str, value: str, *, ttl_seconds: int) -> None:
    await client().set(bearer_cache(digest), value, ex=ttl_seconds)


async def bearer_cache_delete(digest: str) -> None:
    await client().delete(bearer_cache(digest))


async def room_owner_cache(keys: RoomKeys, team_id: str) -> None:
    """Record the owner the database settled on (the database is the record)."""
    await client().set(keys.owner, team_id, px=_ttl())


async def room_activity_due(keys: RoomKeys, *, every_seconds: int) -> bool:
    """True at most once per `every_seconds` per room: time to write last_active_at."""
    return bool(await client().set(keys.active_mark, "1", nx=True, ex=every_seconds))


async def room_forget(keys: RoomKeys) -> None:
    """Delete every key of a room (room deletion; tests)."""
    await client().delete(*keys.durable(), keys.active_mark)


# --- Rate limiting (its own connection: when it fails, requests go through) --------------

_limiter_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = (
    weakref.WeakKeyDictionary()
)


_limiter_scripts: dict[int, AsyncScript] = {}


def _limiter() -> aioredis.Redis:
    loop = asyncio.get_running_loop()
    found = _limiter_clients.get(loop)
    if found is None:
        url = str(getattr(settings, "RATE_LIMIT_REDIS_URL", "") or redis_url())
        found = aioredis.Redis.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=0.25,
            socket_timeout=0.25,
            retry_on_timeout=False,
        )
        _limiter_clients[loop] = found
    return found


async def rate_window_hit(
    bucket: str, *, now_ms: int, window_ms: int, limit: int, member: str
) -> tuple[bool, int]:
    """(allowed, remaining) or (False, retry-after ms). Raises the client's error when the
    limiter's Redis does not answer; the caller decides to fail open."""
    r = _limiter()
    script = _limiter_scripts.get(id(r))
    if script is None:
        script = _limiter_scripts[id(r)] = r.register_script(scripts.SLIDING_WINDOW_SCRIPT)
    res = await script(keys=[rate_window(bucket)], args=[now_ms, window_ms, limit, member])
    return int(res[0]) == 1, int(res[1])


LimiterError = (aioredis.RedisError, OSError, asyncio.TimeoutError)


async def context_versions_of(keys: RoomKeys, entry_id: str) -> list[str]:
    """Every superseded version of one entry (full JSON each), in no particular order."""
    pattern = "".join("\\" + ch if ch in "*?[]\\" else ch for ch in entry_id) + "@*"
    found: list[str] = []
    async for _field, value in client().hscan_iter(keys.context_versions, match=pattern, count=200):
        found.append(str(value))
    return found


async def rate_window_count(bucket: str, *, now_ms: int, window_ms: int) -> int:
    """How many hits `bucket` has in the window ending now (0 when the limiter is down)."""
    try:
        return int(await _limiter().zcount(rate_window(bucket), f"({now_ms - window_ms}", "+inf"))
    except LimiterError:
        return 0


# --- Wake-ups: one pub/sub connection per process, any number of waiters ------------------


class WakeHub:
    """Fans the rooms' wake channels out to in-process waiters.

    One PSUBSCRIBE per event loop serves every waiter of every room, so hundreds of
    agents blocked in wait_for_events or SSE streams hold no Redis connection and no
    thread each: they wait on an asyncio.Event that the subscriber sets.
    """

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def watch(self, room_id: str) -> asyncio.Event:
        """An event set at the room's next write. Returns once the subscription is live,
        so a write that happens after this returns is never missed."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        woken = asyncio.Event()
        self._waiters.setdefault(room_id, set()).add(woken)
        await self._ready.wait()
        return woken

    def unwatch(self, room_id: str, woken: asyncio.Event) -> None:
        found = self._waiters.get(room_id)
        if found is not None:
            found.discard(woken)
            if not found:
                del self._waiters[room_id]

    def waiting(self) -> int:
        return sum(len(w) for w in self._waiters.values())

    def _wake_all(self) -> None:
        for waiters in self._waiters.values():
            for woken in waiters:
                woken.set()

    async def _run(self) -> None:
        while True:
            pubsub = client().pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.psubscribe(wake_pattern())
                self._ready.set()
                # Anything written while we were (re)connecting: let every waiter re-read.
                self._wake_all()
                async for message in pubsub.listen():
                    if message.get("type") != "pmessage":
                        continue
                    room_id = room_of_wake_channel(str(message["channel"]))
                    for woken in self._waiters.get(room_id, ()):
                        woken.set()
            except asyncio.CancelledError:
                await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
                raise
            except (aioredis.RedisError, OSError):
                self._ready.clear()
                await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
                await asyncio.sleep(0.5)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, WakeHub] = weakref.WeakKeyDictionary()


def wake_hub() -> WakeHub:
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        found = _hubs[loop] = WakeHub()
    return found


@contextlib.asynccontextmanager
async def room_watch(keys: RoomKeys) -> AsyncIterator[asyncio.Event]:
    """`async with room_watch(keys) as woken:` read, then `await woken.wait()`."""
    hub = wake_hub()
    woken = await hub.watch(keys.room_id)
    try:
        yield woken
    finally:
        hub.unwatch(keys.room_id, woken)


# --- Open streams per team ---------------------------------------------------------------


async def stream_admit(
    team_id: str, stream_id: str, *, now_ms: int, lease_ms: int, cap: int
) -> bool:
    res = await _run(
        scripts.ADMIT_STREAM_SCRIPT, [open_streams(team_id)], [stream_id, now_ms, lease_ms, cap]
    )
    return int(res) == 1


async def stream_release(team_id: str, stream_id: str) -> None:
    await client().zrem(open_streams(team_id), stream_id)
