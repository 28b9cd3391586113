"""Callers for tests that drive the access check directly (the doors resolve real
credentials; these stand for them, built the way tenants.auth builds them)."""

from __future__ import annotations

from tenants import services
from tenants.capabilities import STATIC_MANAGEMENT, Caller
from tenants.db import db_run


def team_caller(slug: str) -> Caller:
    """A static-key caller of the team `slug` (created if new)."""
    team = services.team_ensure(slug)
    return Caller(
        team_id=team.pk,
        team_slug=slug,
        kind="static",
        credential=f"static:{team.pk}",
        write=True,
        manage=STATIC_MANAGEMENT,
    )


async def team(slug: str) -> Caller:
    return await db_run(team_caller, slug)


def guest_of(caller: Caller, room_id: str, *, credential: str = "invite:999999") -> Caller:
    """An invite of the same team to one room (not backed by a row: it is never resolved)."""
    return Caller(
        team_id=caller.team_id,
        team_slug=caller.team_slug,
        kind="invite",
        credential=credential,
        room=room_id,
        write=True,
    )


def reader_of(caller: Caller, *, credential: str = "key:999999") -> Caller:
    """A read-only team key of the same team."""
    return Caller(
        team_id=caller.team_id,
        team_slug=caller.team_slug,
        kind="key",
        credential=credential,
        write=False,
    )
