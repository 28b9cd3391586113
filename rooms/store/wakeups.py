"""Wake-ups and service signals: Redis pub/sub fanned out to in-process listeners.

A write publishes its new event id on the room's wake channel from inside its own atomic
step (rooms.scripts). Waiting calls, event streams and the webhook relay of this process
wait on a `rooms.flag.Wake` that a hub sets; none of them holds a Redis connection.

- One Redis: one PSUBSCRIBE to every room's wake channel serves the whole process.
- A Redis Cluster: sharded pub/sub has no patterns, and a plain PUBLISH would be copied to
  every node. Writes SPUBLISH in the room's own slot; the hub SSUBSCRIBEs to the channel
  of each room someone here waits on, on one connection per node (so a process waiting on
  thousands of rooms holds as many subscriber connections as the cluster has primaries),
  follows the rooms when their slots move or a node fails over, and keeps a room's
  subscription a while after its last waiter left (a waiter that comes back at once, as
  wait_for_events callers do, finds it live).
- Signals (revocations, webhook changes) are rare: plain SUBSCRIBE on any one node.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
import weakref
from collections.abc import Callable

import redis.asyncio as aioredis
from django.conf import settings
from redis.asyncio.connection import Connection
from redis.crc import key_slot
from redis.exceptions import MovedError
from redis.maint_notifications import MaintNotificationsConfig

from rooms.flag import Wake
from rooms.keys import (
    RoomKeys,
    revocations_channel,
    room_of_wake_channel,
    wake_pattern,
    webhooks_channel,
)
from rooms.store.connections import (
    StoreDown,
    cluster_client,
    cluster_mode,
    pubsub_client,
    pubsub_client_forget,
)

log = logging.getLogger(__name__)

WAKE_READY_SECONDS = 1.0
WAKE_POLL_SECONDS = 0.5
# A room's shard subscription outlives its last waiter this long (then SUNSUBSCRIBE).
SHARD_LINGER_SECONDS = 30.0
# After a failed subscription, a room's next watch polls at once for this long instead of
# trying again (no storm of reconnections while a node fails over).
SHARD_RETRY_SECONDS = 0.5
SHARD_PING_SECONDS = 15.0


class _Waiters:
    """Who waits on which room (the part both hubs share)."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[Wake]] = {}

    def add(self, room_id: str) -> Wake:
        woken = Wake()
        self._waiters.setdefault(room_id, set()).add(woken)
        return woken

    def remove(self, room_id: str, woken: Wake) -> bool:
        """True when the room has no waiter left."""
        found = self._waiters.get(room_id)
        if found is None:
            return True
        found.discard(woken)
        if not found:
            del self._waiters[room_id]
            return True
        return False

    def wake(self, room_id: str, *, lapsed: bool = False) -> None:
        for woken in self._waiters.get(room_id, ()):
            if lapsed:
                woken.lapse()
            else:
                woken.set()

    def wake_all(self, *, lapsed: bool = False) -> None:
        for room_id in self._waiters:
            self.wake(room_id, lapsed=lapsed)

    def rooms(self) -> list[str]:
        return list(self._waiters)

    def count(self) -> int:
        return sum(len(w) for w in self._waiters.values())


def _poll_soon(woken: Wake) -> None:
    """The subscription is not live: the waiter re-reads after WAKE_POLL_SECONDS (and keeps
    its own timeout), so an outage delays a wake-up but never loses it."""
    asyncio.get_running_loop().call_later(WAKE_POLL_SECONDS, woken.lapse)


class _Listening:
    """A hub whose subscription runs as one background task of the loop; closing it
    cancels the task and waits for it to end."""

    _task: asyncio.Task[None] | None = None

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class WakeHub(_Listening):
    """One Redis: one PSUBSCRIBE per event loop serves every waiter of every room."""

    def __init__(self) -> None:
        self._waiters = _Waiters()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def watch(self, room_id: str) -> Wake:
        """An event set at the room's next write. Returns once the subscription is live,
        so a write that happens after this returns is never missed. While the subscription
        is down (Redis away) it returns within WAKE_READY_SECONDS anyway, with an event that
        is also set after WAKE_POLL_SECONDS: waiters then poll, and keep their timeouts."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        woken = self._waiters.add(room_id)
        if not self._ready.is_set():
            try:
                await asyncio.wait_for(self._ready.wait(), WAKE_READY_SECONDS)
            except TimeoutError:
                _poll_soon(woken)
        return woken

    def unwatch(self, room_id: str, woken: Wake) -> None:
        self._waiters.remove(room_id, woken)

    def waiting(self) -> int:
        return self._waiters.count()

    async def _run(self) -> None:
        while True:
            pubsub = (await pubsub_client()).pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.psubscribe(wake_pattern())
                self._ready.set()
                # Anything written while we were (re)connecting: let every waiter re-read.
                self._waiters.wake_all()
                async for message in pubsub.listen():
                    if message.get("type") == "pmessage":
                        self._waiters.wake(room_of_wake_channel(str(message["channel"])))
            except asyncio.CancelledError:
                await pubsub.aclose()
                raise
            except StoreDown:
                self._ready.clear()
                # Every waiter reads now: with Redis away that read fails and says so (a
                # stream's "unavailable", a wait's error) rather than sleeping through it.
                self._waiters.wake_all(lapsed=True)
                await pubsub.aclose()
                await asyncio.sleep(0.5)


class _Shard:
    """One connection to one cluster node, carrying the SSUBSCRIBEs of the rooms whose
    slots that node serves. Replies come back in the order the commands went out, so the
    pending queue pairs each reply (or error, e.g. MOVED) with its command."""

    def __init__(self, hub: ShardedWakeHub, host: str, port: int) -> None:
        self.hub = hub
        self.name = f"{host}:{port}"
        self.conn = Connection(
            host=host,
            port=port,
            decode_responses=True,
            socket_connect_timeout=float(settings.REDIS_CONNECT_TIMEOUT_SECONDS),
            socket_keepalive=True,
            # No maintenance-notifications handshake (redis-py 8; Redis 7 has none).
            maint_notifications_config=MaintNotificationsConfig(enabled=False),
        )
        self.channels: set[str] = set()
        self.pending: collections.deque[tuple[str, str, asyncio.Future[None] | None]] = (
            collections.deque()
        )
        self.reader: asyncio.Task[None] | None = None
        self.pinger: asyncio.Task[None] | None = None
        self.closed = False
        self._last_heard = time.monotonic()

    async def open(self) -> None:
        await self.conn.connect()  # type: ignore[no-untyped-call]  # untyped in redis-py
        loop = asyncio.get_running_loop()
        self.reader = loop.create_task(self._read())
        self.pinger = loop.create_task(self._ping())

    def _usable(self) -> None:
        # redis-py reconnects a disconnected connection on the next send: a lost shard
        # must not quietly open a socket that nothing reads and nothing closes.
        if self.closed:
            raise aioredis.ConnectionError(f"the subscriber connection to {self.name} is closed")

    async def subscribe(self, channel: str) -> None:
        self._usable()
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending.append(("ssubscribe", channel, done))
        await self.conn.send_command("SSUBSCRIBE", channel, check_health=False)
        await done

    async def unsubscribe(self, channel: str) -> None:
        self._usable()
        self.channels.discard(channel)
        self.pending.append(("sunsubscribe", channel, None))
        await self.conn.send_command("SUNSUBSCRIBE", channel, check_health=False)

    async def _ping(self) -> None:
        """A node that vanished without closing the connection (a dead machine) is noticed
        within two ping periods."""
        while True:
            await asyncio.sleep(SHARD_PING_SECONDS)
            if self.closed:
                return
            if time.monotonic() - self._last_heard > 2 * SHARD_PING_SECONDS:
                await self.conn.disconnect()
                return
            with contextlib.suppress(*StoreDown):
                self.pending.append(("pong", "", None))
                await self.conn.send_command("PING", check_health=False)

    async def _read(self) -> None:
        try:
            while True:
                try:
                    reply = await self.conn.read_response(timeout=None, push_request=True)
                except aioredis.ResponseError as exc:  # MOVED, CLUSTERDOWN: for the oldest
                    self._last_heard = time.monotonic()
                    if self.pending:
                        _, _, done = self.pending.popleft()
                        if done is not None and not done.done():
                            done.set_exception(exc)
                    continue
                self._last_heard = time.monotonic()
                self._reply(reply)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the connection is gone, whatever broke it
            self._lost(exc)

    def _reply(self, reply: object) -> None:
        if not isinstance(reply, list) or not reply:
            return
        kind = str(reply[0]).lower()
        if kind == "smessage":
            self.hub.woken(str(reply[1]))
            return
        channel = str(reply[1]) if len(reply) > 1 else ""
        if self.pending and self.pending[0][0] == kind and self.pending[0][1] in (channel, ""):
            _, _, done = self.pending.popleft()
            if kind == "ssubscribe":
                self.channels.add(channel)
            if done is not None and not done.done():
                done.set_result(None)
        elif kind == "sunsubscribe":
            # Unasked: the slot moved to another node (resharding, failover).
            self.channels.discard(channel)
            self.hub.moved(channel, self)

    def _lost(self, exc: BaseException) -> None:
        if self.closed:
            return
        self.closed = True
        error = exc if isinstance(exc, Exception) else ConnectionError("subscriber closed")
        while self.pending:
            _, _, done = self.pending.popleft()
            if done is not None and not done.done():
                done.set_exception(error)
        if self.pinger is not None:
            self.pinger.cancel()
        self.hub.shard_lost(self)

    async def close(self) -> None:
        self.closed = True
        for task in (self.reader, self.pinger):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        with contextlib.suppress(Exception):
            await self.conn.disconnect()


class ShardedWakeHub:
    """A Redis Cluster: one SSUBSCRIBE per waited-on room, one connection per node."""

    def __init__(self) -> None:
        self._waiters = _Waiters()
        self._shards: dict[str, _Shard] = {}
        self._opening: dict[str, asyncio.Task[_Shard]] = {}
        # channel -> the subscription under way or made (its result: the shard holding it)
        self._subscriptions: dict[str, asyncio.Task[_Shard]] = {}
        self._failed_at: dict[str, float] = {}
        self._idle_since: dict[str, float] = {}
        self._sweeper: asyncio.Task[None] | None = None
        # Every shard opened and not yet closed, lost ones included: close() shuts them all.
        self._opened: set[_Shard] = set()
        self._closing: set[asyncio.Task[None]] = set()

    def shards(self) -> int:
        """Subscriber connections open now (at most one per node)."""
        return sum(1 for s in self._shards.values() if not s.closed)

    def subscribed(self) -> int:
        return sum(len(s.channels) for s in self._shards.values() if not s.closed)

    async def watch(self, room_id: str) -> Wake:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())
        woken = self._waiters.add(room_id)
        channel = RoomKeys(room_id).wake
        self._idle_since.pop(channel, None)
        try:
            await asyncio.wait_for(asyncio.shield(self._subscription(channel)), WAKE_READY_SECONDS)
        except (TimeoutError, *StoreDown):
            _poll_soon(woken)
        return woken

    def unwatch(self, room_id: str, woken: Wake) -> None:
        if self._waiters.remove(room_id, woken):
            self._idle_since[RoomKeys(room_id).wake] = time.monotonic()

    def waiting(self) -> int:
        return self._waiters.count()

    def woken(self, channel: str) -> None:
        self._waiters.wake(room_of_wake_channel(channel))

    def _subscription(self, channel: str) -> asyncio.Task[_Shard]:
        found = self._subscriptions.get(channel)
        if found is not None and (
            not found.done() or (found.exception() is None and not found.result().closed)
        ):
            return found
        if (
            found is not None
            and time.monotonic() - self._failed_at.get(channel, 0.0) < SHARD_RETRY_SECONDS
        ):
            return found  # failed a moment ago: poll, don't hammer a failing node
        task = asyncio.get_running_loop().create_task(self._subscribe(channel))
        self._subscriptions[channel] = task
        return task

    async def _subscribe(self, channel: str) -> _Shard:
        last: BaseException | None = None
        moved_to: tuple[str, int] | None = None
        for _ in range(3):
            try:
                shard = await self._shard_for(channel, moved_to)
                await shard.subscribe(channel)
                return shard
            except MovedError as exc:  # the slot lives elsewhere now: go there
                last, moved_to = exc, (exc.host, int(exc.port))
            except (aioredis.ResponseError, *StoreDown) as exc:  # CLUSTERDOWN, a node away
                last, moved_to = exc, None
                await self._topology_refresh(channel)
        self._failed_at[channel] = time.monotonic()
        assert last is not None
        raise last

    @staticmethod
    async def _topology_refresh(channel: str) -> None:
        """Let the store's cluster client learn where the channel's slot lives, the way it
        always does: one keyed command to that slot (it follows MOVED, and re-reads the
        topology when the node it knew is away)."""
        with contextlib.suppress(*StoreDown):
            await (await cluster_client()).exists(channel)

    async def _shard_for(self, channel: str, moved_to: tuple[str, int] | None) -> _Shard:
        if moved_to is not None:
            host, port = moved_to
        else:
            cluster = await cluster_client()
            node = cluster.nodes_manager.get_node_from_slot(key_slot(channel.encode()))
            host, port = node.host, int(node.port)
        name = f"{host}:{port}"
        found = self._shards.get(name)
        if found is not None and not found.closed:
            return found
        opening = self._opening.get(name)
        if opening is None or opening.done():
            opening = asyncio.get_running_loop().create_task(self._open(host, port))
            self._opening[name] = opening
        return await asyncio.shield(opening)

    async def _open(self, host: str, port: int) -> _Shard:
        shard = _Shard(self, host, port)
        self._opened.add(shard)
        try:
            await shard.open()
        except BaseException:
            # Cancelled (the hub closing) or failed mid-handshake: the socket may be open
            # already, and nothing else knows of this shard to close it.
            await shard.close()
            raise
        self._shards[shard.name] = shard
        return shard

    def _forget(self, channel: str) -> None:
        self._subscriptions.pop(channel, None)

    def moved(self, channel: str, shard: _Shard) -> None:
        """The node dropped a room's subscription (its slot moved): waiters re-read now and
        their next watch subscribes where the slot lives now (following MOVED)."""
        self._forget(channel)
        self._lapsed(channel)

    def _lapsed(self, channel: str) -> None:
        self._waiters.wake(room_of_wake_channel(channel), lapsed=True)

    def shard_lost(self, shard: _Shard) -> None:
        """A node's connection broke (the node failed, or failed over): every room it
        carried is re-read by its waiters, who subscribe again through the new topology."""
        if self._shards.get(shard.name) is shard:
            del self._shards[shard.name]
        # Its socket is closed now, not when the hub closes: a long-lived server loses
        # shards at every failover.
        closing = asyncio.get_running_loop().create_task(shard.close())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)
        closing.add_done_callback(lambda _: self._opened.discard(shard))
        for channel, task in list(self._subscriptions.items()):
            if task.done() and task.exception() is None and task.result() is shard:
                self._forget(channel)
                self._lapsed(channel)
        for channel in shard.channels:
            self._forget(channel)
            self._lapsed(channel)

    async def _sweep(self) -> None:
        """SUNSUBSCRIBE rooms nobody has waited on for SHARD_LINGER_SECONDS."""
        while True:
            await asyncio.sleep(SHARD_LINGER_SECONDS / 3)
            now = time.monotonic()
            for channel, since in list(self._idle_since.items()):
                if now - since < SHARD_LINGER_SECONDS:
                    continue
                del self._idle_since[channel]
                task = self._subscriptions.pop(channel, None)
                if task is None or not task.done() or task.exception() is not None:
                    continue
                shard = task.result()
                if not shard.closed:
                    with contextlib.suppress(*StoreDown):
                        await shard.unsubscribe(channel)

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        for task in [*self._subscriptions.values(), *self._opening.values()]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await asyncio.gather(*self._closing, return_exceptions=True)
        for shard in [*self._shards.values(), *self._opened]:
            await shard.close()
        self._opened.clear()
        self._shards.clear()
        self._subscriptions.clear()


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, WakeHub | ShardedWakeHub] = (
    weakref.WeakKeyDictionary()
)


def wake_hub() -> WakeHub | ShardedWakeHub:
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        found = _hubs[loop] = ShardedWakeHub() if cluster_mode() else WakeHub()
    return found


class room_watch:  # lowercase, as contextlib.suppress: used as `async with room_watch(keys)`
    """`async with room_watch(keys) as woken:` clear, read, `await woken.wait()`, and
    again until `woken.rewatch`; then watch again. A class rather than a generator: a
    waiting call holds it for as long as it waits."""

    __slots__ = ("_hub", "_room_id", "_woken")

    def __init__(self, keys: RoomKeys) -> None:
        self._room_id = keys.room_id
        self._hub: WakeHub | ShardedWakeHub | None = None
        self._woken: Wake | None = None

    async def __aenter__(self) -> Wake:
        hub = self._hub = wake_hub()
        self._woken = await hub.watch(self._room_id)
        return self._woken

    async def __aexit__(self, *exc: object) -> None:
        if self._hub is not None and self._woken is not None:
            self._hub.unwatch(self._room_id, self._woken)


# --- Service signals: revocations and webhook changes, to every process ------------------

SignalCallback = Callable[[str, str], None]


class SignalHub(_Listening):
    """One SUBSCRIBE per event loop to the service's signal channels; each message is
    handed to every registered callback as (channel, payload). A reconnection is reported
    as ("", "") so listeners can re-check everything they hold."""

    def __init__(self) -> None:
        self._callbacks: list[SignalCallback] = []
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def listen(self, callback: SignalCallback) -> None:
        """Register `callback`; returns once subscribed, or after WAKE_READY_SECONDS while
        Redis is away (the listener is told ("", "") when the subscription comes back)."""
        self._callbacks.append(callback)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), WAKE_READY_SECONDS)

    def _tell(self, channel: str, payload: str) -> None:
        for callback in list(self._callbacks):
            try:
                callback(channel, payload)
            except Exception:  # a listener's bug must not stop the others
                log.exception("signal listener failed")

    async def _run(self) -> None:
        channels = [revocations_channel(), webhooks_channel()]
        while True:
            pubsub: aioredis.client.PubSub | None = None
            try:
                pubsub = (await pubsub_client()).pubsub(ignore_subscribe_messages=True)
                await pubsub.subscribe(*channels)
                self._ready.set()
                self._tell("", "")
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._tell(str(message["channel"]), str(message["data"]))
            except asyncio.CancelledError:
                if pubsub is not None:
                    await pubsub.aclose()
                raise
            except StoreDown:
                self._ready.clear()
                if pubsub is not None:
                    await pubsub.aclose()
                await pubsub_client_forget()
                await asyncio.sleep(0.5)


_signal_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SignalHub] = (
    weakref.WeakKeyDictionary()
)


def signal_hub() -> SignalHub:
    loop = asyncio.get_running_loop()
    found = _signal_hubs.get(loop)
    if found is None:
        found = _signal_hubs[loop] = SignalHub()
    return found


def is_revocation(channel: str) -> bool:
    return channel == revocations_channel()


def is_webhooks_change(channel: str) -> bool:
    return channel == webhooks_channel()


async def hubs_close() -> None:
    loop = asyncio.get_running_loop()
    for hubs in (_hubs, _signal_hubs):
        hub = hubs.pop(loop, None)
        if hub is not None:
            await hub.close()
