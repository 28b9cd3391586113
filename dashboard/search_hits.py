"""Search hits as a person reads them: a task by its title, a context entry by its summary,
an event as the sentence the feed says ("backend claimed “auth API”"), never a raw id.

The search tool answers with ids (its contract); the page fetches what those ids name and
this module puts it into words. A hit whose thing is gone since (deleted, trimmed from the
log) says so instead of showing its id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rooms.eventwords import event_words
from rooms.records import event_id_after, is_event_id
from rooms.results import Event


@dataclass(frozen=True, slots=True)
class HitRow:
    kind: str  # "task", "context" or "event"
    who: str  # who acted (events), else ""
    text: str  # what the hit is, in words
    href: str  # the page that shows it; "" when it is gone
    when: str  # an event's time, else ""
    snippet: str  # the text around the words searched for


def _event_row(hit: Mapping[str, Any], event: Event | None, titles: Mapping[str, str]) -> HitRow:
    hit_id = str(hit["id"])
    snippet = str(hit.get("snippet") or "")
    if event is None:
        return HitRow("event", "", "an event no longer in the log", "", "", snippet)
    page = f"events?before={event_id_after(hit_id)}#event-{hit_id}" if is_event_id(hit_id) else ""
    return HitRow(
        kind="event",
        who=str(event.get("from") or ""),
        text=event_words(event, titles).text,
        href=page,
        when=str(event.get("timestamp") or ""),
        snippet=snippet,
    )


def hit_rows(
    hits: Sequence[Mapping[str, Any]],
    *,
    titles: Mapping[str, str],
    summaries: Mapping[str, str],
    events: Mapping[str, Event],
) -> list[HitRow]:
    """Each hit in words. `titles`: task id -> title; `summaries`: context entry id -> its
    summary (or type); `events`: event id -> the event. Links are relative to the room's
    own URL (…/rooms/<id>/)."""
    rows = []
    for hit in hits:
        kind = str(hit.get("kind"))
        hit_id = str(hit.get("id"))
        snippet = str(hit.get("snippet") or "")
        if kind == "event":
            rows.append(_event_row(hit, events.get(hit_id), titles))
        elif kind == "task":
            title = titles.get(hit_id)
            rows.append(
                HitRow("task", "", f"“{title}”", f"tasks/{hit_id}", "", snippet)
                if title is not None
                else HitRow("task", "", "a task no longer in the plan", "", "", snippet)
            )
        elif kind == "context":
            summary = summaries.get(hit_id)
            rows.append(
                HitRow("context", "", f"“{summary}”", f"context/{hit_id}", "", snippet)
                if summary is not None
                else HitRow("context", "", "a context entry since deleted", "", "", snippet)
            )
        else:
            rows.append(HitRow(kind, "", kind.replace("_", " "), "", "", snippet))
    return rows
