"""A task's time in progress: from the event that put it in progress when the log holds
it, else from updated_at as a lower bound ("at least")."""

from __future__ import annotations

from typing import Any

from dashboard.task_age import duration_words, in_progress_ages, progress_started
from rooms import clock

NOW = clock.ms_from_iso("2026-05-16T12:00:00Z")


def _task(status: str, updated_at: str = "2026-05-16T11:50:00.000Z") -> dict[str, Any]:
    return {"id": "t1", "title": "auth API", "status": status, "updated_at": updated_at}


def _event(kind: str, at: str, **payload: Any) -> dict[str, Any]:
    return {
        "id": "1-0",
        "type": kind,
        "from": "backend",
        "timestamp": at,
        "payload": {"task": {"id": "t1", "title": "auth API"}, **payload},
    }


def test_durations_read_as_a_person_says_them() -> None:
    assert duration_words(59_000) == "under a minute"
    assert duration_words(12 * 60_000) == "12 min"
    assert duration_words((3 * 60 + 12) * 60_000) == "3 h 12 min"
    assert duration_words(2 * 3_600_000) == "2 h"
    assert duration_words((2 * 24 + 5) * 3_600_000 + 60_000) == "2 d 5 h"
    assert duration_words(3 * 24 * 3_600_000) == "3 d"


def test_the_claim_in_the_log_gives_the_exact_age() -> None:
    events = [
        _event("task_updated", "2026-05-16T11:50:00.000Z", changes={"priority": [None, 2]}),
        _event("task_claimed", "2026-05-16T08:48:00.000Z"),
    ]
    age = in_progress_ages([_task("in_progress")], events, now_ms=NOW)["t1"]
    assert age.exact and age.words == "3 h 12 min" and age.since == "2026-05-16T08:48:00.000Z"


def test_the_newest_move_into_progress_counts() -> None:
    events = [
        _event("task_claimed", "2026-05-16T06:00:00.000Z"),
        _event(
            "task_updated",
            "2026-05-16T11:00:00.000Z",
            changes={"status": ["blocked", "in_progress"]},
        ),
        _event(
            "task_updated",
            "2026-05-16T11:30:00.000Z",
            changes={"status": ["in_progress", "in_progress"]},
        ),
    ]
    assert progress_started(events) == {"t1": "2026-05-16T11:00:00.000Z"}


def test_without_the_event_updated_at_is_a_lower_bound() -> None:
    age = in_progress_ages([_task("in_progress")], [], now_ms=NOW)["t1"]
    assert not age.exact and age.words == "10 min"


def test_only_tasks_in_progress_have_an_age() -> None:
    tasks = [{**_task(s), "id": s} for s in ("pending", "blocked", "done")]
    assert in_progress_ages(tasks, [], now_ms=NOW) == {}


def test_a_handoff_taken_up_starts_the_clock_again() -> None:
    """claim, release, then another agent accepts a handoff of it: in progress since the
    handoff, not since the old claim; a handoff of a blocked task starts nothing."""
    accepted = {
        "id": "3-0",
        "type": "handoff_accepted",
        "from": "frontend",
        "timestamp": "2026-05-16T10:00:00.000Z",
        "payload": {
            "handoff": {"taskId": "t1", "from": "backend", "to": "frontend"},
            "task": {"id": "t1", "title": "auth API", "status": "in_progress"},
        },
    }
    events = [
        _event("task_claimed", "2026-05-16T06:00:00.000Z"),
        _event(
            "task_updated",
            "2026-05-16T07:00:00.000Z",
            changes={"status": ["in_progress", "pending"]},
        ),
        accepted,
    ]
    age = in_progress_ages([_task("in_progress")], events, now_ms=NOW)["t1"]
    assert age.exact and age.since == "2026-05-16T10:00:00.000Z" and age.words == "2 h"
    blocked = {
        **accepted,
        "payload": {**accepted["payload"], "task": {"id": "t1", "status": "blocked"}},
    }
    assert progress_started([blocked]) == {}
