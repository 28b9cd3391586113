from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rooms.refs import RoomRef
from tenants.access import room_access
from tenants.auth import Caller

TEAM = Caller(team_id="team-a", kind="static", credential_id="static:team-a")


@pytest.fixture
async def room(room_id: str, redis_client_closed: None) -> AsyncIterator[RoomRef]:
    """A fresh room owned by team-a, reached through the real access check."""
    yield await room_access(TEAM, room_id, True)
