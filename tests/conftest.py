"""Test wiring: a real Redis (REDIS_URL, or the embedded server started here) under a key
prefix of this run's own, removed at the end; never a flush of data we did not write.
In parallel (pytest-xdist), each Redis has one worker for its client: the first worker uses
REDIS_URL when it is set, every other one an embedded server of its own, since some tests
read what the whole server saw (MONITOR, INFO commandstats).

TEST_REDIS_CLUSTER=1: the suite runs on a real Redis Cluster of its own instead (3 masters,
3 replicas: tests/redis_cluster.py), with Celery's broker on an embedded single Redis
(Celery cannot use a cluster). `make test` runs the tests that reach Redis a second time
this way (tests/lanes.py says which)."""

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

pytest_plugins = ("tests.lanes",)

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


def runs_no_tests(config: pytest.Config) -> bool:
    """pytest-xdist's controller (`-n N`): its workers run the tests, each on a Redis (or
    cluster) and a test database of its own; it starts nothing."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    global _embedded
    if runs_no_tests(config):
        return
    if on_cluster():
        _cluster_start()
    elif not os.environ.get("REDIS_URL") or os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        _embedded = EmbeddedRedis(
            folder=Path(tempfile.mkdtemp(prefix="rs-redis-")), persistent=False
        )
        os.environ["REDIS_URL"] = _embedded.start()
    settings.REDIS_URL = os.environ["REDIS_URL"]
    settings.REDIS_KEY_PREFIX = RUN_PREFIX
    os.environ["REDIS_KEY_PREFIX"] = RUN_PREFIX


def pytest_unconfigure(config: pytest.Config) -> None:
    if runs_no_tests(config):
        return
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


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """The cluster pass has a test database of its own (it may run beside the single one)."""
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
    _postgres_flush_by_delete()
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        name = connection.settings_dict["NAME"]
        cursor.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
        cursor.execute("SET synchronous_commit = off")


def _postgres_flush_by_delete() -> None:
    """After each test that commits (most do: the service reads the database from threads
    of its own), the test database is flushed. Postgres's TRUNCATE makes every table anew,
    a fixed cost per table that a DELETE of a few rows does not have (the flush's teardown
    took four times SQLite's). Foreign keys are checked at the flush's commit (Django makes
    them deferred), so the order of the tables does not matter."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(
        self: DatabaseOperations,
        style: Any,
        tables: Any,
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        if reset_sequences or allow_cascade:
            return truncate(
                self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        return [f"DELETE FROM {self.quote_name(table)};" for table in tables]

    DatabaseOperations.sql_flush = sql_flush  # type: ignore[method-assign,assignment]


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
    from rooms.store import engine as engine_store

    yield
    await engine_store.close_client()


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
