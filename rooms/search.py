"""Full-text search over a room: every task, context entry and retained event, ranked.

The index is kept by the write scripts themselves (rooms/lua/lib/search.lua), in the step that
writes, so a search sees every write that was answered and nothing that was trimmed or
deleted. A query reads only the postings of its own words (bounded per word), never the
room: its cost does not grow with the room.

Words here are cut exactly as the scripts cut them (runs of ASCII letters and digits and
of non-ASCII UTF-8, ASCII lowered, JSON escapes left out): a word the index holds is found
by the same word in a query. A query is words (all of them ranked first, then those with
fewer), "quoted phrases" (the words next to each other, in order), and prefixes (`deplo*`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rooms import errors, scripts
from rooms.keys import RoomKeys
from rooms.refs import RoomRef
from rooms.results import SearchHit, SearchResult
from rooms.store import search as search_store

GROUPS_MAX = 8  # words and prefixes of one query
POSTINGS_READ = 4096  # per word or prefix: its best-ranked documents beyond these are not read
PREFIX_TERMS = 32  # words one prefix stands for at most
SNIPPET_CHARS = 160

STOPWORDS = frozenset(scripts.SEARCH_STOPWORDS.split())
SEMANTIC_NOT_CONFIGURED = (
    "semantic search is not configured on this server (no embedding model ships with it): "
    "these are full-text hits; leave out semantic, or use exact words and prefixes (deplo*)."
)
NO_WORDS = (
    "q has no word to search for: words are 2 to 32 letters or digits, and common words "
    "({sample}...) are not indexed. Try a rarer word, a prefix (deplo*) or an id."
)
TOO_MANY_WORDS = "q has more than {most} words and prefixes; the first {most} were searched."

_ESCAPE = re.compile(rb'\\u[0-9A-Fa-f]{4}|\\[nrtbf"\\/]')
_WORD = re.compile(rb"[A-Za-z0-9\x80-\xff]+")
_TEXT_ESCAPE = re.compile(r'\\u[0-9A-Fa-f]{4}|\\[nrtbf"\\/]')
_QUERY_PART = re.compile(r'"([^"]*)"?|(\S+)')


def words(text: str) -> list[str]:
    """The words of a text, as the index cuts them (scripts.search_words)."""
    plain = _ESCAPE.sub(b" ", text.encode("utf-8", "replace")).lower()
    return [w.decode("utf-8", "replace") for w in _WORD.findall(plain)]


def indexed(word: str) -> bool:
    return 2 <= len(word.encode()) <= 32 and word not in STOPWORDS


@dataclass
class Query:
    """What a q asks for: its groups for the index ("=word", "*prefix") and the phrases
    every hit must hold (each word list contiguous and in order)."""

    groups: list[str] = field(default_factory=list)
    phrases: list[list[str]] = field(default_factory=list)
    cut_short: bool = False

    def add(self, group: str) -> None:
        if group in self.groups:
            return
        if len(self.groups) >= GROUPS_MAX:
            self.cut_short = True
            return
        self.groups.append(group)


def query_parse(q: str) -> Query:
    query = Query()
    for match in _QUERY_PART.finditer(q):
        quoted, bare = match.group(1), match.group(2)
        part = quoted if quoted is not None else bare
        prefix = bare is not None and bare.endswith("*")
        found = words(part)
        if len(found) > 1 and not prefix:
            query.phrases.append(found)  # "a b" and task_claimed alike: the words in order
        for i, word in enumerate(found):
            last = i == len(found) - 1
            if prefix and last and len(word.encode()) >= 2:
                query.add("*" + word[:32])
            elif indexed(word):
                query.add("=" + word)
    if not query.groups:
        raise errors.ToolArgumentsError(
            NO_WORDS.format(sample=", ".join(sorted(STOPWORDS)[:6])), extra={"fields": ["q"]}
        )
    return query


def _holds(tokens: list[str], phrase: list[str]) -> bool:
    n = len(phrase)
    return any(tokens[i : i + n] == phrase for i in range(len(tokens) - n + 1))


def _plain(text: str) -> str:
    return " ".join(_TEXT_ESCAPE.sub(" ", text).split())


def snippet(title: str, body: str, query: Query) -> str:
    """Up to SNIPPET_CHARS of the text around the first word of the query it holds."""
    wanted = [g[1:] for g in query.groups] + [w for p in query.phrases for w in p]
    for text in (_plain(title), _plain(body)):
        lowered = text.lower()
        starts = [
            m.start()
            for w in wanted
            if (m := re.search(r"(?<![A-Za-z0-9])" + re.escape(w), lowered)) is not None
        ]
        if not starts:
            continue
        start = max(0, min(starts) - SNIPPET_CHARS // 3)
        cut = text[start : start + SNIPPET_CHARS]
        return ("…" if start else "") + cut + ("…" if start + SNIPPET_CHARS < len(text) else "")
    text = _plain(title) or _plain(body)
    return text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else "")


async def room_search(room: RoomRef, *, q: str, limit: int, semantic: bool) -> SearchResult:
    query = query_parse(q)
    want = min(limit * 3, 150) if query.phrases else limit
    _, candidates = await search_store.search_candidates(
        room.keys, query.groups, want=want, budget=POSTINGS_READ, expand=PREFIX_TERMS
    )
    hits: list[SearchHit] = []
    for c in candidates:
        if query.phrases:
            tokens = [*words(c.title), "", *words(c.body)]
            if not all(_holds(tokens, p) for p in query.phrases):
                continue
        hits.append(
            {
                "kind": c.kind,  # type: ignore[typeddict-item]  # the script answers these three
                "id": c.id,
                "score": round(c.score, 3),
                "snippet": snippet(c.title, c.body, query),
            }
        )
        if len(hits) >= limit:
            break
    result: SearchResult = {"q": q, "hits": hits, "count": len(hits)}
    warnings = []
    if semantic:
        warnings.append(SEMANTIC_NOT_CONFIGURED)
    if query.cut_short:
        warnings.append(TOO_MANY_WORDS.format(most=GROUPS_MAX))
    if warnings:
        result["warnings"] = warnings
    return result


REINDEX_STEP = 500  # events, tasks or entries per step: each step is short for Redis


async def room_reindex(keys: RoomKeys) -> dict[str, int]:
    """Index what a room held before the index existed (its events below the index's floor,
    and every task and context entry again), in short steps that writes may run between.
    Running it again indexes nothing twice: it is safe to repeat and to interrupt."""
    indexed: dict[str, int] = {}
    for what in ("tasks", "context", "events"):
        done, start, total = False, 0, 0
        while not done:
            done, n, start = await search_store.search_reindex_step(
                keys, what=what, most=REINDEX_STEP, start=start
            )
            total += n
        indexed[what] = total
    return indexed
