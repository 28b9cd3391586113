from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from rooms import registry
from rooms.refs import RoomRef
from rooms.schemas import RoomInput
from tenants.access import room_access
from tenants.capabilities import Caller
from tests import callers
from tests.clock import clock_at

RoomCheck = Callable[[str, bool], Awaitable[RoomRef]]


@pytest.fixture
async def team_a(redis_client_closed: None) -> Caller:
    return await callers.team("team-a")


@pytest.fixture
async def room(room_id: str, team_a: Caller) -> AsyncIterator[RoomRef]:
    """A fresh room owned by team-a, reached through the real access check."""
    yield await room_access(team_a, room_id, write=True)


async def invoke(name: str, arguments: dict[str, Any], check: RoomCheck) -> Any:
    """One room tool through the registry, with `check` standing for the door's access
    check (rooms/ tests drive the protocol without the tenancy around it)."""
    tool = registry.tool_get(name)
    args = registry.arguments_parse(tool, arguments)
    assert isinstance(tool, registry.RoomTool) and isinstance(args, RoomInput)
    return await tool.run(await check(args.roomId, not tool.read_only), args)


@pytest.fixture(autouse=True)
def _database(transactional_db: None) -> None:
    """The access check records room ownership in the database (from another thread)."""


@pytest.fixture
def frozen_clock() -> Iterator[list[datetime]]:
    """A clock the test moves by hand (far ahead of any other test's claims and leases)."""
    with clock_at(datetime(2031, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)) as now:
        yield now
