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
    """Full-text search over every task, context entry and retained event of the room, best
    first, each with a snippet. q: words (hits holding all of them first), "quoted
    phrases" and prefixes (deplo*); title and summary words rank above body words. An
    index kept with every write answers it: the cost does not grow with the room."""
    return await search.room_search(room, q=a.q, limit=a.limit, semantic=a.semantic)


TOOLS = (search_room,)
