"""Test wiring: a real Redis (REDIS_URL, or the embedded server started here) under a key
prefix of this run's own, removed at the end; never a flush of data we did not write.

TEST_REDIS_CLUSTER=1: the suite runs on a real Redis Cluster of its own instead (3 masters,
3 replicas: tests/redis_cluster.py), with Celery's broker on an embedded single Redis
(Celery cannot use a cluster). `make test` runs the whole suite a second time this way;
tests marked single_redis (they stop or kill the one embedded Redis) skip themselves."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings

from config.embedded_redis import EmbeddedRedis
from tests.redis_cluster import LocalCluster

RUN_PREFIX = f"rstest-{secrets.token_hex(4)}"
_embedded: EmbeddedRedis | None = None
_cluster: LocalCluster | None = None


def on_cluster() -> bool:
    return os.environ.get("TEST_REDIS_CLUSTER", "") in ("1", "true", "yes")


def local_cluster() -> LocalCluster | None:
    """The cluster this run started (None unless TEST_REDIS_CLUSTER)."""
    return _cluster


def _cluster_start() -> None:
    global _cluster, _embedded
    _cluster = LocalCluster()
    os.environ["REDIS_URL"] = _cluster.start()
    os.environ["REDIS_CLUSTER"] = "true"
    settings.REDIS_CLUSTER = True
    _embedded = EmbeddedRedis(folder=Path(tempfile.mkdtemp(prefix="rs-broker-")), persistent=False)
    broker = "redis+socket://" + _embedded.start()[len("unix://") :]
    os.environ["CELERY_BROKER_URL"] = broker
    settings.CELERY_BROKER_URL = broker


def pytest_configure(config: pytest.Config) -> None:
    global _embedded
    if on_cluster():
        _cluster_start()
    elif not os.environ.get("REDIS_URL"):
        _embedded = EmbeddedRedis(
            folder=Path(tempfile.mkdtemp(prefix="rs-redis-")), persistent=False
        )
        os.environ["REDIS_URL"] = _embedded.start()
    settings.REDIS_URL = os.environ["REDIS_URL"]
    settings.REDIS_KEY_PREFIX = RUN_PREFIX
    os.environ["REDIS_KEY_PREFIX"] = RUN_PREFIX
    # Tests share team names across a minute of calls; the limiter's own tests set limits.
    settings.RATE_LIMIT_PER_MINUTE = 1_000_000
    settings.RATE_LIMIT_INVITE_PER_MINUTE = 1_000_000
    settings.SIGNUPS_PER_ADDRESS_PER_HOUR = 1_000_000
    # Webhook deliveries run in the calling thread, retries included (no worker needed).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    from config.celery import app as celery_app

    celery_app.conf.task_always_eager = True


def pytest_unconfigure(config: pytest.Config) -> None:
    if _cluster is not None:
        _cluster.stop()  # its data goes with it
    else:
        try:
            r = redis.Redis.from_url(os.environ["REDIS_URL"])
            for key in r.scan_iter(match=f"{RUN_PREFIX}:*", count=1000):
                r.delete(key)
            r.close()
        except redis.RedisError:
            pass
    if _embedded is not None:
        _embedded.stop()
        shutil.rmtree(_embedded.folder, ignore_errors=True)  # this run's own folder


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the cluster run, the tests that stop, kill or restart the single embedded Redis
    they start with the service (marker single_redis) are skipped: a cluster's outage is
    the failover test's (tests/cluster/test_failover.py). The browser tests marked
    browser_only run once, in the single pass: what a page shows does not depend on how
    the store is laid out, and the cluster pass is the longer of the two."""
    if not on_cluster():
        return
    skip = pytest.mark.skip(
        reason="stops or kills the service's single embedded Redis; on a cluster, "
        "tests/cluster/test_failover.py kills a master instead"
    )
    once = pytest.mark.skip(
        reason="checks what a browser shows (accessibility, every page action), which the "
        "store's topology does not change: run once, in the single-Redis pass"
    )
    for item in items:
        if item.get_closest_marker("single_redis"):
            item.add_marker(skip)
        elif item.get_closest_marker("browser_only"):
            item.add_marker(once)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """The cluster pass runs beside the single one (make test): a test database of its own."""
    if on_cluster():
        from pytest_django.fixtures import _set_suffix_to_test_databases

        _set_suffix_to_test_databases(suffix="cluster")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    """Postgres: the test database commits without waiting for its WAL to reach the disk
    (synchronous_commit off, for every connection to it, the end-to-end servers' too).
    Hundreds of tests each flush and refill it; a crash loses a throwaway database at most.
    The service's own databases keep the server's setting."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        name = connection.settings_dict["NAME"]
        cursor.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
        cursor.execute("SET synchronous_commit = off")


@pytest.fixture(scope="session", autouse=True)
def _sync_thread_connections_closed(django_db_setup: None) -> Iterator[None]:
    """Django's async test client and async views run their sync parts in asgiref's one
    shared thread, whose database connection nothing closes; on Postgres it would keep the
    test database from being dropped. Closed here, before the database is."""
    yield
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import connections

    asyncio.run(sync_to_async(connections.close_all, thread_sensitive=True)())


@pytest.fixture(autouse=True)
def _process_caches_cleared() -> Iterator[None]:
    """Each test's database starts empty: what this process remembers of it must too."""
    from tenants.access import caches_clear as access_caches_clear
    from tenants.auth import caches_clear

    caches_clear()
    access_caches_clear()
    yield
    caches_clear()
    access_caches_clear()


@pytest.fixture
async def redis_client_closed() -> AsyncIterator[None]:
    """Close this test's event-loop Redis pool at teardown (a pool cannot outlive its loop)."""
    from rooms import store

    yield
    await store.close_client()


def new_room_id(label: str = "room") -> str:
    return f"{label}-{secrets.token_hex(5)}"


@pytest.fixture
def room_id() -> str:
    return new_room_id()


def redis_for_assertions(*, decode_responses: bool = True) -> redis.Redis:
    """A plain client for assertions on what the store wrote (tests only); on the cluster
    run, a cluster client (the same commands, routed by slot)."""
    if on_cluster():
        return redis.RedisCluster.from_url(  # type: ignore[return-value]  # same commands
            os.environ["REDIS_URL"], decode_responses=decode_responses
        )
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=decode_responses)


# What the cluster's nodes send each other (replication acks, gossip, health checks), at
# moments of their own: not a client's work.
CLUSTER_OWN_TRAFFIC = {
    "cmdstat_replconf",
    "cmdstat_ping",
    "cmdstat_cluster",
    "cmdstat_psync",
    "cmdstat_info",
}


async def commandstats(r: Any) -> dict[str, int]:
    """Calls per command since start, on the store's Redis; on the cluster run, summed over
    every primary, with EVAL and EVALSHA counted as one ("cmdstat_eval*"): which of the
    two the client sends depends on whether it has used the script on that node before;
    the nodes' own traffic to each other is left out."""
    if not on_cluster():
        stats = await r.info("commandstats")
        return {name: int(s["calls"]) for name, s in stats.items()}
    total: dict[str, int] = {}
    for node in r.get_primaries():
        stats = await r.info("commandstats", target_nodes=node)
        for name, s in stats.items():
            if name in CLUSTER_OWN_TRAFFIC:
                continue
            merged = "cmdstat_eval*" if name in ("cmdstat_eval", "cmdstat_evalsha") else name
            total[merged] = total.get(merged, 0) + int(s["calls"])
    return total


@pytest.fixture
def sync_redis() -> Iterator[redis.Redis]:
    r = redis_for_assertions()
    yield r
    r.close()
