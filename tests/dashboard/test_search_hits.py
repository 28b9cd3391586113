"""Search hits in words: tasks by title, context by summary, events as the feed's sentence,
and what is gone since says so, never an id."""

from __future__ import annotations

from typing import Any

from dashboard.search_hits import hit_rows

EVENT_ID = "1750000000000-0"


def test_each_kind_of_hit_reads_as_words_with_its_page() -> None:
    event: Any = {
        "id": EVENT_ID,
        "type": "task_claimed",
        "from": "backend",
        "timestamp": "2025-06-15T15:06:40.000Z",
        "payload": {"task": {"id": "t_1"}},
    }
    hits = [
        {"kind": "task", "id": "t_1", "score": 3.0, "snippet": "auth API"},
        {"kind": "context", "id": "c_1", "score": 2.0, "snippet": "the contract"},
        {"kind": "event", "id": EVENT_ID, "score": 1.0, "snippet": "auth"},
    ]
    rows = hit_rows(
        hits,
        titles={"t_1": "auth API"},
        summaries={"c_1": "auth-contract"},
        events={EVENT_ID: event},
    )
    assert [(r.kind, r.who, r.text, r.href) for r in rows] == [
        ("task", "", "“auth API”", "tasks/t_1"),
        ("context", "", "“auth-contract”", "context/c_1"),
        (
            "event",
            "backend",
            "claimed “auth API”",
            f"events?before=1750000000000-1#event-{EVENT_ID}",
        ),
    ]
    assert rows[2].when == event["timestamp"]
    assert all(EVENT_ID not in r.text and "t_1" not in r.text for r in rows)


def test_a_hit_whose_thing_is_gone_says_so() -> None:
    hits = [
        {"kind": "task", "id": "t_9", "score": 1.0, "snippet": ""},
        {"kind": "context", "id": "c_9", "score": 1.0, "snippet": ""},
        {"kind": "event", "id": EVENT_ID, "score": 1.0, "snippet": ""},
    ]
    rows = hit_rows(hits, titles={}, summaries={}, events={})
    assert [r.text for r in rows] == [
        "a task no longer in the plan",
        "a context entry since deleted",
        "an event no longer in the log",
    ]
    assert all(r.href == "" for r in rows)
