"""The store's engine: how every step of the package reaches Redis.

Scripts are loaded and run here (EVALSHA, and EVAL where a node does not know one yet; each
round trip timed in STORE_SECONDS), and `run_write` wraps a tool's one write step in the
room's guard, its acting agent's presence, its idempotency record and its turn. Also the
store's life on an event loop (run_sync, close_client, pending_settled, store_health) and
what every domain module shares: RoomMissing, KeyReused, AtQuota, the room's idle TTL and
the event log's caps. Its public
names are what the domain modules use (`run`, `run_on`, `run_write`, `in_flight` ...); its
underscored ones are its own (tests/test_import_graph.py holds both).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

from asgiref.sync import SyncToAsync, async_to_sync
from django.conf import settings
from prometheus_client import Histogram
from redis.exceptions import NoScriptError

from rooms import clock, errors, idempotency, lua, traces, turns
from rooms.keys import RoomKeys, room_tail
from rooms.store.connections import Store, StoreDown, client, clients_close, cluster_mode
from rooms.store.wakeups import hubs_close

# Seconds, for every latency histogram of the service (tool calls use them too).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)
STORE_SECONDS = Histogram(
    "roomservice_store_seconds",
    "Round trips to the room store (one script step each).",
    buckets=LATENCY_BUCKETS,
)

_scripts: dict[str, _Script] = {}
T = TypeVar("T")
# Steps this package started and nobody awaits (events' gathered reads, budgets' slot
# releases): pending_settled waits for a loop's before its pools close.
_in_flight: set[asyncio.Task[None]] = set()


def in_flight(step: Coroutine[Any, Any, None]) -> None:
    """Start `step` on the running loop, awaited by nobody but pending_settled."""
    task = asyncio.get_running_loop().create_task(step)
    _in_flight.add(task)
    task.add_done_callback(_in_flight.discard)


async def store_health(timeout: float) -> str | None:
    """None when Redis answers a PING within `timeout` seconds, else what went wrong."""
    try:
        await asyncio.wait_for(awaited(client().ping()), timeout)
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
    """Wait for this loop's steps in flight (its deferred slot releases among them)."""
    loop = asyncio.get_running_loop()
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
    verb = "SPUBLISH" if cluster_mode() else "PUBLISH"
    return f"local WAKE_VERB = '{verb}'\nlocal TRACE = ''\n{source}"


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


async def run_on(r: Store, source: str, keys: list[str], args: list[Any]) -> Any:
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
        result = await awaited(r.eval(script.text, len(keys), *keys, *args))
        if len(_loaded) > 100_000:
            _loaded.clear()
        _loaded.add(where)
        return result
    try:
        return await awaited(r.evalsha(script.sha, len(keys), *keys, *args))
    except NoScriptError:
        return await awaited(r.eval(script.text, len(keys), *keys, *args))


# (client, node, script sha): scripts this process has seen a node run.
_loaded: set[tuple[int, str, str]] = set()


def _node_name(r: Store, keys: list[str]) -> str:
    """The node holding `keys` as the client knows it now ("" before it knows the cluster,
    and on one Redis). An attribute, not isinstance: RedisCluster is a typing Protocol's
    subclass, whose isinstance check costs a microsecond a round trip."""
    node_of = getattr(r, "get_node_from_key", None)
    if keys and node_of is not None:
        try:
            node = node_of(keys[0])
        except Exception:  # the client has not read the cluster's slots yet
            return ""
        return str(node.name) if node is not None else ""
    return ""


async def run(source: str, keys: list[str], args: list[Any]) -> Any:
    return await run_on(client(), source, keys, args)


class RoomMissing(Exception):
    """A write step found no room in Redis (no owner key): the room was archived or deleted
    since the access check, or Redis lost its keys (a restart without persistence). Nothing
    was written; the door checks the room again, which tells these apart, and retries."""


class KeyReused(Exception):
    """The call's idempotencyKey was used in the room for another call (`tool`), or, when
    `outdated`, for this same call by an older server, whose record this one cannot replay."""

    def __init__(self, tool: str, *, outdated: bool = False) -> None:
        super().__init__(tool)
        self.tool = tool
        self.outdated = outdated


async def run_write(
    room: RoomKeys,
    source: str,
    keys: list[str],
    args: list[Any],
    *,
    keyed: idempotency.KeyedCall | None,
    wrote: lua.Wrote = "ok",
    turn: turns.TurnClaim | None = None,
    actor: str | None,
) -> Any:
    """A tool's one write step. For a call with an idempotencyKey (rooms.idempotency), the
    step also records the key, atomically: a repeat answers the first call's script answer
    (and hands the service back what it minted then) without running the script again.
    Raises KeyReused for the key of another call. `keyed`: the call's key (None without
    one). `turn`: the step is a post, taken only in the poster's turn (rooms.turns), in
    this same step. `actor`: the agent the call names as acting (calls.runner), which
    the step marks present and whose claims and file leases it renews (wrap/present.lua).
    What the wrappers need arrives as one named envelope, the step's last argument
    (`call_envelope`)."""
    if keyed is not None:
        assert not keyed.written, "a keyed tool call has exactly one write step"
        keyed.written = True
    envelope = call_envelope(keyed=keyed, turn=turn, actor=actor)
    res = await run(
        lua.write_step(source, wrote=wrote, post=turn is not None),
        [*keys, *room_tail(room)],
        [*args, envelope],
    )
    if not (isinstance(res, list) and len(res) == 2 and res[0] == lua.CALL_ANSWER):
        return res
    said = json.loads(str(res[1]))
    if "turn" in said:
        refused = said["turn"]
        raise errors.TurnRefusedError.of(refused["rule"], refused["holder"], refused["detail"])
    if "room" in said:
        if said["room"] == "gone":
            unwritten(keyed)  # refused before its key was looked at: it may retry
            raise RoomMissing(room.room_id)
        raise errors.RoomClosedError(
            errors.ROOM_ARCHIVED.format(room_id=room.room_id)
            if said["room"] == "archived"
            else errors.ROOM_ARCHIVING.format(room_id=room.room_id),
            extra={"roomId": room.room_id, "status": said["room"]},
        )
    assert keyed is not None, said
    if "reused" in said:
        raise KeyReused(said["reused"])
    if "outdated" in said:
        raise KeyReused(said["outdated"], outdated=True)
    keyed.replayed = True
    keyed.minted = json.loads(said["minted"])
    return _as_redis_answer(json.loads(said["replay"]))


def call_envelope(
    *, keyed: idempotency.KeyedCall | None, turn: turns.TurnClaim | None, actor: str | None
) -> str:
    """What a write step's wrappers read (rooms/lua/wrap/), by name: `keyed` the
    idempotencyKey's record, `turn` the post's turn, `present` the acting agent, `trace`
    the call's trace context; each only when the call has it (its wrapper then does
    nothing)."""
    call: dict[str, Any] = {}
    if keyed is not None:
        call["keyed"] = {
            "key": keyed.key,
            "fingerprint": keyed.fingerprint,
            "tool": keyed.tool,
            "minted": json.dumps(keyed.minted, separators=(",", ":")),
            "now": clock.now_ms(),
            "window": int(settings.IDEMPOTENCY_WINDOW_SECONDS) * 1000,
            "most": int(settings.ROOM_IDEMPOTENCY_KEYS_MAX),
            "most_bytes": int(settings.ROOM_IDEMPOTENCY_BYTES_MAX),
        }
    if turn is not None:
        call["turn"] = turn.envelope()
    if actor:
        call["present"] = {
            "agent": actor,
            "now": clock.now_ms(),
            "most": int(settings.ROOM_AGENTS_MAX),
            "ttl": idle_ttl_ms(),
        }
    trace = traces.TRACEPARENT.get()
    if trace:
        call["trace"] = trace
    return json.dumps(call, separators=(",", ":"))


def unwritten(call: idempotency.KeyedCall | None) -> None:
    """The step wrote nothing and its call will run it again (decided on a newer view)."""
    if call is not None:
        call.written = False


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


async def awaited(result: Any) -> Any:
    """redis-py types its async commands as `Awaitable[T] | T`; on the asyncio client they
    are always awaitables."""
    return await result


def idle_ttl_ms() -> int:
    return int(settings.ROOM_IDLE_TTL_SECONDS) * 1000


def event_keys(keys: RoomKeys) -> list[str]:
    """What every event-appending script takes to keep the log in its caps."""
    return [keys.events, keys.meta, keys.reads]


def event_args(keys: RoomKeys) -> list[Any]:
    return [int(settings.ROOM_EVENT_CAP), int(settings.ROOM_EVENT_BYTES_MAX), keys.wake]


@dataclass(frozen=True, slots=True)
class AtQuota:
    """A write refused by its quota; `used` is what the room holds now."""

    used: int


def named(res: Any, outcomes: Any) -> Any:
    """The outcome a step's answer names first (its script's header lists them), checked
    against `outcomes`, the Literal of the step's outcomes in Python."""
    name = str(res[0])
    if name not in get_args(outcomes):
        raise ValueError(f"a step answered {name!r}, none of {get_args(outcomes)}")
    return name


def pairs(res: Any) -> list[tuple[str, str]]:
    it = iter(res)
    return [(str(a), str(b)) for a, b in zip(it, it, strict=True)]
