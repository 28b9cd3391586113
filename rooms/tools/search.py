"""Full-text search over a room."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms import search
from rooms.refs import RoomRef
from rooms.selectors import events as events_selectors
from rooms.tools.rows import room_tool


@room_tool(name="search", read_only=True, section="rooms-and-templates", roomd=True)
async def search_room(room: RoomRef, a: s.SearchInput) -> r.SearchResult:
    """Call to find a task, context entry or event by its words: full text over the whole room,
    best first, each with a snippet. q: words (hits holding all first), "quoted phrases" and
    prefixes (deplo*); title and summary words rank first."""
    found = await search.room_search(room, q=a.q, limit=a.limit, semantic=a.semantic)
    if room.reader is not None:  # a guest: only the events it may read (messages: its own)
        ids = [hit["id"] for hit in found["hits"] if hit["kind"] == "event"]
        seen = await events_selectors.event_get_many(room, ids)
        found["hits"] = [h for h in found["hits"] if h["kind"] != "event" or h["id"] in seen]
        found["count"] = len(found["hits"])
    return found
