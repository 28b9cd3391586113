"""The room's search index: a query's ranked candidates, and the bounded steps that index
what a room held before the index existed (rooms/lua/search/)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rooms import scripts
from rooms.keys import RoomKeys, room_tail
from rooms.store.engine import named, run


@dataclass(frozen=True, slots=True)
class SearchCandidate:
    """One document the index ranked: its title text (title, summary) and body text, as
    indexed, for the phrase check and the snippet."""

    kind: str
    id: str
    score: float
    groups: int
    title: str
    body: str


async def search_candidates(
    keys: RoomKeys, groups: list[str], *, want: int, budget: int, expand: int
) -> tuple[int, list[SearchCandidate]]:
    """The room's documents (tasks, context entries, retained events) and the best `want`
    for the query's groups ("=word" / "*prefix"), in one step over the index."""
    res = await run(
        scripts.SEARCH_SCRIPT,
        [
            keys.search_events,
            keys.search_docs,
            keys.search_vocab,
            keys.events,
            keys.tasks,
            keys.context,
            keys.context_payloads,
        ],
        [want, budget, expand, *groups],
    )
    found = [
        SearchCandidate(
            str(res[i]),
            str(res[i + 1]),
            float(res[i + 2]),
            int(res[i + 3]),
            str(res[i + 4]),
            str(res[i + 5]),
        )
        for i in range(2, 2 + 6 * int(res[1]), 6)
    ]
    return int(res[0]), found


# One reindex step: nothing of `what` is left to index, or call again from the next start.
ReindexStep = Literal["done", "more"]


async def search_reindex_step(
    keys: RoomKeys, *, what: str, most: int, start: int
) -> tuple[bool, int, int]:
    """One bounded step of indexing what a room held before the index existed (`what`:
    events, tasks or context): (done, indexed, the next start)."""
    res = await run(
        scripts.SEARCH_REINDEX_SCRIPT,
        [
            keys.meta,
            keys.events,
            keys.tasks,
            keys.task_order,
            keys.context,
            keys.context_payloads,
            keys.context_created,
            *room_tail(keys),
        ],
        [what, most, start],
    )
    step: ReindexStep = named(res, ReindexStep)
    return step == "done", int(res[1]), int(res[2])
