"""The connections to Redis: the store's pool, the limiter's, and the subscribers'.

One Redis or a Redis Cluster (REDIS_CLUSTER=true, REDIS_URL a seed node): every function
of the store takes its connection from here, so the rest of the store is written once for
both. A pool belongs to one event loop (it cannot cross loops), so each is kept per loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import redis.asyncio as aioredis
from django.conf import settings
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import Connection
from redis.exceptions import RedisClusterException
from redis.maint_notifications import MaintNotificationsConfig

Store = aioredis.Redis | RedisCluster
T = TypeVar("T")

# The most arguments one command may carry, its name, keys and ARGV included: ElastiCache
# Serverless refuses a longer one. A command whose length follows a room's size or a
# caller's list is sent in runs (arguments_runs); tests/lanes.py fails any test that sends
# a longer one.
REDIS_ARGS_MAX = 3_999


def arguments_runs(items: Sequence[T], *, beside: int) -> Iterator[Sequence[T]]:
    """`items` in runs that each fit one command with `beside` other arguments (its name
    and fixed keys)."""
    step = REDIS_ARGS_MAX - beside
    for at in range(0, len(items), step):
        yield items[at : at + step]


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Store] = weakref.WeakKeyDictionary()


def redis_url() -> str:
    url = str(settings.REDIS_URL)
    if not url:
        raise RuntimeError(
            "REDIS_URL is empty: start the embedded Redis first (config.embedded_redis) "
            "or point REDIS_URL at a server."
        )
    return url


def cluster_mode() -> bool:
    """REDIS_CLUSTER=true: REDIS_URL names a seed node of a Redis Cluster."""
    return bool(getattr(settings, "REDIS_CLUSTER", False))


# What the store raises when Redis does not answer: the doors turn it into "the room store
# is unavailable, retry", never an internal failure.
# On a cluster, RedisClusterException too: no node serves a slot for a moment (failover).
StoreDown = (aioredis.RedisError, RedisClusterException, OSError, asyncio.TimeoutError)


_cluster_connections: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, weakref.WeakSet[Connection]
] = weakref.WeakKeyDictionary()


class TrackedConnection(Connection):
    """A cluster node's connection, remembered by the loop it was made on.

    redis-py's cluster client can drop a connection from its books without closing it: one
    handed back to a node the topology refresh removed, or queued for a lazy disconnect
    the loop never ran. Closing the loop's client then leaves its socket open until the
    garbage collector finds it. Every one made is remembered here, so clients_close shuts
    them all, whatever redis-py still knows of them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        loop = asyncio.get_running_loop()
        made = _cluster_connections.get(loop)
        if made is None:
            made = _cluster_connections[loop] = weakref.WeakSet()
        made.add(self)


class GatedCluster(RedisCluster):
    """A cluster client whose callers wait for a connection instead of failing.

    redis-py's cluster nodes raise MaxConnectionsError past their pool size; the single-node
    client waits (BlockingConnectionPool). This gate keeps the single-node behaviour: at
    most `gate` commands of this process are in flight at once, so no node's pool is ever
    exceeded, and a burst queues."""

    def __init__(self, *args: Any, gate: int = 64, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gate = asyncio.Semaphore(gate)
        # redis-py takes no connection_class for a cluster: the nodes known now get it,
        # and so do those discovered later (they are made from the manager's kwargs).
        self.nodes_manager.connection_kwargs["connection_class"] = TrackedConnection
        for node in [*self.startup_nodes, *self.nodes_manager.startup_nodes.values()]:
            node.connection_class = TrackedConnection

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        async with self._gate:
            for attempt in range(3):
                try:
                    return await super().execute_command(*args, **kwargs)
                except (AttributeError, RuntimeError) as exc:
                    # redis-py: one task's error handling disconnects a node's idle
                    # connections as another task is about to write on one of them
                    # (7.4: "'NoneType' object has no attribute 'writelines'"; 8.1 on
                    # uvloop: "unable to perform operation on <TCPTransport closed=True>;
                    # the handler is closed"). Nothing was written, so the command is sent
                    # again; past that, it is a lost connection, and is answered as one.
                    unsent = "writelines" in str(exc) or "handler is closed" in str(exc)
                    if not unsent or attempt == 2:
                        raise aioredis.ConnectionError(
                            f"connection lost mid-command: {exc}"
                        ) from exc
            raise AssertionError("unreachable")


class GatedPool(aioredis.ConnectionPool):
    """A connection pool whose callers wait for a connection (at most `timeout` seconds)
    once `max_connections` are in use, as redis-py's BlockingConnectionPool does, without
    the price it asks of every command: its Condition and a timer, taken even when a
    connection is free (bench section cost: ~10 us of CPU a round trip). A semaphore holds
    the count; only a caller that finds it exhausted waits, with the timeout."""

    def __init__(self, *args: Any, timeout: float = 20, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout = timeout
        self._gate = asyncio.Semaphore(self.max_connections)
        self._gated: set[Any] = set()  # the connections handed out under the gate

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        gate = self._gate
        if gate.locked():
            try:
                async with asyncio.timeout(self.timeout):
                    await gate.acquire()
            except TimeoutError as err:
                raise aioredis.ConnectionError("No connection available.") from err
        else:
            await gate.acquire()  # a slot is free: returns without suspending
        try:
            connection = await super().get_connection()  # type: ignore[no-untyped-call]
        except BaseException:
            gate.release()  # (a connection redis-py took back itself was never gated)
            raise
        self._gated.add(connection)
        return connection

    async def release(self, connection: Any) -> None:
        try:
            await super().release(connection)
        finally:
            if connection in self._gated:
                self._gated.discard(connection)
                self._gate.release()


def _store_client(
    url: str,
    *,
    max_connections: int,
    wait_seconds: float,
    connect_timeout: float,
    socket_timeout: float,
    retry_on_timeout: bool = True,
    decode_responses: bool = True,
) -> Store:
    if cluster_mode():
        return GatedCluster.from_url(
            url,
            gate=max_connections,
            decode_responses=decode_responses,
            max_connections=max_connections,
            socket_connect_timeout=connect_timeout,
            socket_timeout=socket_timeout,
            health_check_interval=30,
            # No CLIENT SETINFO handshake on each new connection, and no maintenance
            # notifications handshake (redis-py 8; Redis 7 has none to give): under a
            # burst of new connections each is another round trip, during which redis-py
            # can lose the connection to another task's error handling.
            driver_info=None,
            maint_notifications_config=MaintNotificationsConfig(enabled=False),
        )
    pool = GatedPool.from_url(
        url,
        decode_responses=decode_responses,
        max_connections=max_connections,
        timeout=wait_seconds,
        health_check_interval=30,
        socket_connect_timeout=connect_timeout,
        socket_timeout=socket_timeout,
        retry_on_timeout=retry_on_timeout,
    )
    return aioredis.Redis.from_pool(pool)  # closing the client closes the pool


def client() -> Store:
    """The connection pool of the running event loop (a pool cannot cross loops).

    A blocking pool: a burst of requests beyond max_connections waits for a free
    connection instead of failing (no "busy, retry" under load). Short socket timeouts:
    while Redis is away a call fails within a second, saying so, instead of hanging."""
    loop = asyncio.get_running_loop()
    found = _clients.get(loop)
    if found is None:
        found = _clients[loop] = _store_client(
            redis_url(),
            max_connections=settings.REDIS_MAX_CONNECTIONS,
            wait_seconds=30,
            connect_timeout=float(settings.REDIS_CONNECT_TIMEOUT_SECONDS),
            socket_timeout=float(settings.REDIS_SOCKET_TIMEOUT_SECONDS),
        )
    return found


_raw_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Store] = (
    weakref.WeakKeyDictionary()
)


def raw_client() -> Store:
    """A small pool that answers bytes, not text: a room's snapshot (rooms.snapshots) holds
    its search index, whose postings are binary."""
    loop = asyncio.get_running_loop()
    found = _raw_clients.get(loop)
    if found is None:
        found = _raw_clients[loop] = _store_client(
            redis_url(),
            max_connections=4,
            wait_seconds=30,
            connect_timeout=float(settings.REDIS_CONNECT_TIMEOUT_SECONDS),
            socket_timeout=max(5.0, float(settings.REDIS_SOCKET_TIMEOUT_SECONDS)),
            decode_responses=False,
        )
    return found


async def cluster_client() -> RedisCluster:
    """The cluster client of this loop, its topology read (cluster mode only)."""
    found = client()
    assert isinstance(found, RedisCluster), "cluster_client() outside cluster mode"
    if not found.get_nodes():
        await found.initialize()
    return found


_pubsub_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = (
    weakref.WeakKeyDictionary()
)


async def pubsub_client() -> aioredis.Redis:
    """Subscriptions wait for messages indefinitely, so they get no read timeout; a dead
    Redis still breaks the connection, and the hub reconnects. On a cluster, plain pub/sub
    reaches every node, so any live node will do: the first one answering."""
    loop = asyncio.get_running_loop()
    found = _pubsub_clients.get(loop)
    if found is not None:
        return found
    options: dict[str, Any] = {
        "decode_responses": True,
        "socket_connect_timeout": float(settings.REDIS_CONNECT_TIMEOUT_SECONDS),
        "health_check_interval": 30,
    }
    if cluster_mode():
        found = await _live_node(options)
    else:
        found = aioredis.Redis.from_url(redis_url(), **options)
    _pubsub_clients[loop] = found
    return found


async def _live_node(options: dict[str, Any]) -> aioredis.Redis:
    """A client of the first cluster node that answers a PING."""
    problem: BaseException | None = None
    for node in (await cluster_client()).get_nodes():
        candidate = aioredis.Redis(host=node.host, port=int(node.port), **options)
        try:
            await candidate.ping()
            return candidate
        except StoreDown as exc:
            problem = exc
            await candidate.aclose()
    raise aioredis.ConnectionError(f"no cluster node answers: {problem}")


async def pubsub_client_forget() -> None:
    """The subscription's node went away: the next one is chosen afresh."""
    found = _pubsub_clients.pop(asyncio.get_running_loop(), None)
    if found is not None:
        with contextlib.suppress(*StoreDown):
            await found.aclose()


_limiter_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Store] = (
    weakref.WeakKeyDictionary()
)


def limiter() -> Store:
    """The limiter's own pool: short socket timeouts so a dead limiter fails open fast, and
    a bounded pool whose callers wait for a connection, so a burst of calls is counted
    rather than waved through."""
    loop = asyncio.get_running_loop()
    found = _limiter_clients.get(loop)
    if found is None:
        url = str(getattr(settings, "RATE_LIMIT_REDIS_URL", "") or redis_url())
        found = _limiter_clients[loop] = _store_client(
            url,
            max_connections=settings.REDIS_MAX_CONNECTIONS,
            wait_seconds=2,
            connect_timeout=0.5,
            socket_timeout=0.5,
            retry_on_timeout=False,
        )
    return found


async def clients_close() -> None:
    """Close this loop's pools (before the loop goes away)."""
    loop = asyncio.get_running_loop()
    for registry in (_clients, _limiter_clients, _pubsub_clients, _raw_clients):
        found = registry.pop(loop, None)
        if found is not None:
            await found.aclose()
    for connection in list(_cluster_connections.pop(loop, ())):
        with contextlib.suppress(*StoreDown):
            await connection.disconnect()
