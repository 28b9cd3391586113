from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from rooms.refs import RoomRef
from tenants.access import room_access
from tenants.auth import Caller

TEAM = Caller(team_id="team-a", kind="static", credential_id="static:team-a")


@pytest.fixture
async def room(room_id: str, redis_client_closed: None) -> AsyncIterator[RoomRef]:
    """A fresh room owned by team-a, reached through the real access check."""
    yield await room_access(TEAM, room_id, True)


@dataclass
class FunctionAccess:
    """A registry Access made of one room-check function (tests drive the check directly)."""

    check: Callable[[str, bool], Awaitable[RoomRef]]

    async def room(self, room_id: str, write: bool) -> RoomRef:
        return await self.check(room_id, write)

    async def rooms(self) -> list[dict[str, Any]]:
        raise AssertionError("this test's access lists no rooms")


def as_access(check: Callable[[str, bool], Awaitable[RoomRef]]) -> FunctionAccess:
    return FunctionAccess(check)


@pytest.fixture(autouse=True)
def _database(transactional_db: None) -> None:
    """The access check records room ownership in the database (from another thread)."""
