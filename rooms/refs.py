"""`RoomRef`: proof that the caller passed the room access check.

Every room operation takes one. The only code that makes one is the access function in
tenants/access.py, after it checked ownership or an invite's scope (docs/contributing.md,
"The type proves the check"); a handler never builds a RoomRef from a tool argument.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from rooms.idempotency import KeyedCall
from rooms.keys import RoomKeys

# The longest one wait_for_events waits, whatever it asks for: MCP clients give up on a call
# after about 60 s (Claude Code, Codex), and a proxy's idle timeout may be shorter; an agent
# that wants to go on waiting calls again (the result says when its ask was cut). A door
# that keeps the connection alive while it waits (the REST door sends keep-alive bytes) lets
# its callers, who wait longer than a tool call may (the guard's hooks), wait up to
# LONG_WAIT_MAX_MS: one arming for minutes instead of one every 30 s.
WAIT_MAX_MS = 30_000
LONG_WAIT_MAX_MS = 600_000


@dataclass(frozen=True, slots=True)
class RoomRef:
    room_id: str
    team_id: str
    keys: RoomKeys = field(repr=False)
    # A read-only caller reads with cursors of its own (its credential's namespace), so it
    # can follow the log without ever moving the cursor of the agent it names.
    cursor_scope: str | None = None
    # The room's status as the access check saw it (set_room_status: archive or restore).
    status: str = "active"
    # The tool call's idempotencyKey, when it has one (rooms.idempotency): each write step
    # takes it as its `keyed` argument, so the step records the key with the write.
    call: KeyedCall | None = field(default=None, repr=False)
    # The agent the tool call names as acting (calls.runner): each write step marks it
    # present and renews what it holds, in that same step (rooms/lua/wrap/present.lua).
    actor: str | None = None
    # Whose messages this caller may read, for a guest (an invite): its agent's, or none
    # ("") for an invite bound to no agent; None: the team's caller, who reads them all.
    # rooms.selectors.messages.message_visible applies it to every read that carries one.
    reader: str | None = None
    # The longest a waiting call on this room may wait (the door's: WAIT_MAX_MS, or
    # LONG_WAIT_MAX_MS where the door keeps the connection alive).
    wait_most_ms: int = WAIT_MAX_MS

    def keyed_by(self, call: KeyedCall | None) -> RoomRef:
        """This room, for a call keyed `call` (the door's, after the access check)."""
        return self if call is None else replace(self, call=call)

    def acted_by(self, actor: str | None) -> RoomRef:
        """This room, for a call whose acting agent is `actor` (None: it names none)."""
        return self if actor == self.actor else replace(self, actor=actor)

    def waiting_up_to(self, most_ms: int) -> RoomRef:
        """This room, for a waiting call that may wait up to `most_ms`."""
        return self if most_ms == self.wait_most_ms else replace(self, wait_most_ms=most_ms)

    @property
    def cursors_key(self) -> str:
        return self.keys.cursors if self.cursor_scope is None else self.keys.cursors_readonly

    def cursor_field(self, agent_id: str) -> str:
        """The field of `cursors_key` that holds this agent's position (a JSON pair in the
        read-only hash, so no agent name can collide with a namespaced one)."""
        if self.cursor_scope is None:
            return agent_id
        return json.dumps([self.cursor_scope, agent_id], ensure_ascii=False)
