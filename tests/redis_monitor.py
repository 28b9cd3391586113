"""MONITOR on one or more Redis nodes, for tests that assert what the store sent where."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import AsyncIterator, Hashable
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio as aioredis

MARKER = "monitor-settled-"


@dataclass
class Monitored:
    """What the watched nodes received since the watch began. `seen`: every command, in
    arrival order; `outer`: the same without the commands scripts ran inside themselves;
    `by_node`: every command, per node."""

    urls: dict[Hashable, str]
    seen: list[str] = field(default_factory=list)
    outer: list[str] = field(default_factory=list)
    by_node: dict[Hashable, list[str]] = field(default_factory=dict)
    # settle()'s own ECHOes, kept out of the lists above.
    markers: list[str] = field(default_factory=list)
    # settle()'s connections, one per node, opened before the watch began so that their
    # handshakes (HELLO) are not among what the watch saw.
    probes: dict[Hashable, aioredis.Redis] = field(default_factory=dict)

    async def settle(self) -> None:
        """Returns once every command sent before it has been seen: a marker ECHOed to
        each node comes back through its monitor (a bounded wait)."""
        marker = f"{MARKER}{secrets.token_hex(4)}"
        for probe in self.probes.values():
            await probe.echo(marker)
        for _ in range(500):
            if sum(marker in c for c in self.markers) >= len(self.urls):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("MONITOR never showed the marker")


@contextlib.asynccontextmanager
async def commands_seen(urls: dict[Hashable, str]) -> AsyncIterator[Monitored]:
    """MONITOR on each node of `urls` (name -> Redis URL) while the block runs."""
    watched = Monitored(urls, by_node={name: [] for name in urls})
    clients = [aioredis.Redis.from_url(url, decode_responses=True) for url in urls.values()]
    watched.probes = {name: aioredis.Redis.from_url(url) for name, url in urls.items()}
    tasks: list[asyncio.Task[None]] = []
    try:
        for probe in watched.probes.values():
            await probe.ping()  # connected (and its handshake done) before the watch
        async with contextlib.AsyncExitStack() as stack:
            for name, client in zip(urls, clients, strict=True):
                monitor = await stack.enter_async_context(client.monitor())

                async def pump(name: Hashable = name, monitor: Any = monitor) -> None:
                    while True:
                        try:
                            info = await monitor.next_command()
                        except (AttributeError, ValueError):  # a line redis-py cannot parse
                            continue
                        if MARKER in info["command"]:
                            watched.markers.append(info["command"])
                            continue
                        watched.seen.append(info["command"])
                        watched.by_node[name].append(info["command"])
                        if info.get("client_type") != "lua":
                            watched.outer.append(info["command"])

                tasks.append(asyncio.get_running_loop().create_task(pump()))
            try:
                yield watched
            finally:
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
    finally:
        for client in [*clients, *watched.probes.values()]:
            await client.aclose()


def primaries() -> dict[str, str]:
    """The run's Redis nodes to watch (each primary, on a cluster), as commands_seen takes
    them."""
    from tests.conftest import on_cluster

    url = os.environ["REDIS_URL"]
    if not on_cluster():
        return {url: url}
    cluster = redis.RedisCluster.from_url(url)
    try:
        urls = [f"redis://{n.host}:{n.port}/0" for n in cluster.get_primaries()]
    finally:
        cluster.close()
    return {u: u for u in urls}
