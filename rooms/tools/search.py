"""Full-text search over a room."""

from __future__ import annotations

from pydantic import TypeAdapter

from rooms import results as r
from rooms import schemas as s
from rooms import (
    search,
)
from rooms.refs import RoomRef
from rooms.tools.rows import room_tool


@room_tool("search", s.SearchInput, TypeAdapter(r.SearchResult), read_only=True)
async def search_room(room: RoomRef, a: s.SearchInput) -> r.SearchResult:
    """Call to find a task, context entry or event by its words: full text over the whole room,
    best first, each with a snippet. q: words (hits holding all first), "quoted phrases" and
    prefixes (deplo*); title and summary words rank first."""
    return await search.room_search(room, q=a.q, limit=a.limit, semantic=a.semantic)


TOOLS = (search_room,)
