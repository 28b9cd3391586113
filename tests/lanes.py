"""Which tests run where (issue 32). `make test-fast` is every test but the browser, the
production-layout and the cluster ones, in parallel: what a developer runs before every
commit. `make test` runs everything once on a single Redis, then the tests marked `store`
again on a real Redis Cluster: only a test that reaches Redis can notice its topology.

A test is `store` when its file says so (pytestmark) or its folder is one of STORE_FOLDERS
(the protocol's tests and those that start the real server, which reaches Redis through
it). Whether a test reaches a room's keys is not left to memory: on the single pass, a test
not marked `store` that sends Redis a command naming a room's key itself (its own process,
any client) fails, naming the marker it needs. `browser` and `prod` tests run once, on the
single pass.

Every command sent in-process is also measured: a test fails, naming the command, when it
sent one longer than REDIS_ARGS_MAX (its name, keys and arguments: ElastiCache Serverless
refuses it)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio.connection
import redis.connection

from rooms.store.connections import REDIS_ARGS_MAX

TESTS = Path(__file__).resolve().parent

# Folder -> the markers every test in it carries, and why.
FOLDER_MARKS: dict[str, tuple[str, ...]] = {
    "rooms": ("store",),  # the protocol, tool by tool, on the store
    "e2e": ("store",),  # the real server, which reaches Redis for every call
    "cluster": ("store",),  # the cluster itself (skipped on the single pass)
    "browser": ("browser",),  # Chromium driving the real server: once, on the single pass
}

# A room's keys are `<prefix>:{<room id>}:<part>` (rooms/keys.py): the hash tag that places a
# room on a cluster's slot. Keys of a bearer, a team or the wake channel are tagged
# `{bearer:…}`, `{team:…}`, `{*}`: single-slot counters and caches whose own tests are marked
# by hand (tests/tenants/test_budgets.py…), not every page that passes the rate limiter.
ROOM_KEY = re.compile(rb":\{(?!bearer:|team:|\*\})[^{}:]+\}:")

_sent = 0
# (command name, its length) of each command longer than REDIS_ARGS_MAX this test sent.
_too_long: list[tuple[str, int]] = []
# A RESP array's header of four digits or more: the only place a long command can start.
_LONG_ARRAY = re.compile(rb"\*\d{%d,}\r\n" % len(str(REDIS_ARGS_MAX)))


def _packed(command: Any) -> bytes:
    return command if isinstance(command, bytes) else b"".join(bytes(part) for part in command)


def _room_keys_in(packed: bytes) -> bool:
    return ROOM_KEY.search(packed) is not None


def too_long(packed: bytes) -> list[tuple[str, int]]:
    """(name, length) of each command in `packed` (one command, or a pipeline's) longer
    than REDIS_ARGS_MAX: its name, keys and arguments, as Redis counts them."""
    if _LONG_ARRAY.search(packed) is None:  # the usual case: nothing to walk through
        return []
    found = []
    at = 0
    while at < len(packed):
        end = packed.index(b"\r\n", at)
        length = int(packed[at + 1 : end])
        at, name = end + 2, b""
        for i in range(length):
            end = packed.index(b"\r\n", at)
            size = int(packed[at + 1 : end])
            if i == 0:
                name = packed[end + 2 : end + 2 + size]
            at = end + 2 + size + 2
        if length > REDIS_ARGS_MAX:
            found.append((name.decode(errors="replace").upper(), length))
    return found


def _observed(command: Any) -> None:
    global _sent
    packed = _packed(command)
    _sent += _room_keys_in(packed)
    _too_long.extend(too_long(packed))


def _counted(send: Any) -> Any:
    """`send` (a redis-py connection's send_packed_command), counting the commands it sends
    that name a room's key, and noting those too long."""
    if getattr(send, "counted", False):
        return send

    def sync_send(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        _observed(command)
        return send(self, command, *args, **kwargs)

    async def async_send(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        _observed(command)
        return await send(self, command, *args, **kwargs)

    counting = async_send if inspect.iscoroutinefunction(send) else sync_send
    counting.counted = True  # type: ignore[attr-defined]
    return counting


def pytest_configure(config: pytest.Config) -> None:
    for connection in (
        redis.connection.AbstractConnection,
        redis.asyncio.connection.AbstractConnection,
    ):
        connection.send_packed_command = _counted(connection.send_packed_command)  # type: ignore[method-assign]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks by folder; on the cluster pass, only the `store` tests that are neither `browser`
    nor `prod` are kept, and those that stop or kill the one embedded Redis (single_redis)
    are skipped: a cluster's outage is tests/cluster/test_failover.py's."""
    for item in items:
        folder = Path(str(item.path)).relative_to(TESTS).parts[0]
        for name in FOLDER_MARKS.get(folder, ()):
            item.add_marker(name)
    from tests.conftest import on_cluster

    if not on_cluster():
        return
    kept = [
        item
        for item in items
        if item.get_closest_marker("store")
        and not item.get_closest_marker("browser")
        and not item.get_closest_marker("prod")
    ]
    chosen = {id(item) for item in kept}
    config.hook.pytest_deselected(items=[item for item in items if id(item) not in chosen])
    items[:] = kept
    single = pytest.mark.skip(
        reason="stops or kills the service's single embedded Redis; on a cluster, "
        "tests/cluster/test_failover.py kills a master instead"
    )
    for item in kept:
        if item.get_closest_marker("single_redis"):
            item.add_marker(single)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    global _sent
    _sent = 0
    _too_long.clear()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, None, None]:
    result = yield
    from tests.conftest import on_cluster

    if _sent and not on_cluster() and not item.get_closest_marker("store"):
        pytest.fail(
            f"{item.nodeid} sent Redis {_sent} command(s) on a room's keys but is not marked "
            "`store`, so the "
            "cluster pass would not run it: add `pytestmark = pytest.mark.store` to its file "
            "(or the marker to the test).",
            pytrace=False,
        )
    if _too_long:
        sent = ", ".join(f"{name} with {length} arguments" for name, length in _too_long[:5])
        pytest.fail(
            f"{item.nodeid} sent Redis {len(_too_long)} command(s) longer than "
            f"REDIS_ARGS_MAX ({REDIS_ARGS_MAX}, ElastiCache Serverless refuses them): {sent}. "
            "Send it in runs (rooms.store.connections.arguments_runs) or bound its list.",
            pytrace=False,
        )
    return result
