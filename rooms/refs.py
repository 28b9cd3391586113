"""`RoomRef`: proof that the caller passed the room access check.

Every room operation takes one. The only code that makes one is the access function in
tenants/access.py, after it checked ownership or an invite's scope (STYLE.md, "the type
proves the check"); a handler never builds a RoomRef from a tool argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rooms.keys import RoomKeys


@dataclass(frozen=True, slots=True)
class RoomRef:
    room_id: str
    team_id: str
    keys: RoomKeys = field(repr=False)
    # The agent name a bound key or invite forces onto writes (tenancy issue); None = free.
    bound_agent: str | None = None
    read_only: bool = False
    # The room has an active webhook: a write should nudge the webhook relay.
    hooked: bool = False
