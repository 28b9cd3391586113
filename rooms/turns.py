"""Turn discipline (Agent Room; docs/durable-rooms.md "Turns"): who may post broadcasts and
messages when.

`set_room_mode(turns: ...)` picks the room's rule:
- open: anyone, any time (the default);
- sequential: agents post in turn. The order is `turnOrder` when the room set one, else
  the agents present, by name; after each post the turn passes to the next agent of the
  order who is present. If the holder has left, the first present agent of the order
  holds it;
- moderator: the moderator posts any time; anyone else only once the moderator granted
  the turn, by addressing them (a message or event whose `to` is that agent). Their post
  gives the turn back.

The posts are post_event, reply_to_event, room_broadcast and send_message. The check and
the turn's move are in the post's own write step (rooms/lua/wrap/turn.lua), so two agents
posting at once never both take one turn. A refusal says whose turn it is. The turn is
an argument of the post's step (store.event_append, store.message_send), made by the
service that posts, so no door and no direct call can leave it out.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from rooms import clock


@dataclass(frozen=True, slots=True)
class TurnClaim:
    """The post under way: who posts, and whom it addresses ("" for a selector)."""

    agent: str
    grants: str

    def envelope(self) -> dict[str, str | int]:
        """What the turn wrapper reads (rooms/lua/wrap/turn.lua): the poster, the presence
        cutoff, the agent granted."""
        online = clock.now_ms() - int(settings.PRESENCE_ONLINE_SECONDS) * 1000
        return {"agent": self.agent, "since": online, "grants": self.grants}


def turn_of_post(agent: str, to: str) -> TurnClaim:
    """The turn a post by `agent` to `to` takes (its write step's argument: the store runs
    the post only in the poster's turn, whatever the room's rule)."""
    return TurnClaim(agent=agent, grants="" if to in ("*", "all") or ":" in to else to)
