"""Tests that only mean something on a Redis Cluster: they run in `make test`'s cluster pass
(TEST_REDIS_CLUSTER=1, a real 3-master cluster with replicas) and skip, saying so, on one
Redis."""

from __future__ import annotations

import pytest

from tenants.capabilities import Caller
from tests import callers
from tests.conftest import local_cluster, on_cluster
from tests.redis_cluster import LocalCluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if on_cluster():
        return
    skip = pytest.mark.skip(reason="needs the cluster pass (TEST_REDIS_CLUSTER=1, make test)")
    for item in items:
        if "tests/cluster/" in str(item.fspath):
            item.add_marker(skip)


@pytest.fixture
def cluster() -> LocalCluster:
    found = local_cluster()
    assert found is not None
    return found


@pytest.fixture
async def team_a(redis_client_closed: None) -> Caller:
    return await callers.team("team-a")


@pytest.fixture(autouse=True)
def _database(transactional_db: None) -> None:
    """The access check records room ownership in the database (from another thread)."""
