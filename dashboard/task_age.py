"""How long a task has been in progress, in words a person reads at a glance (a duration,
so the page shows it as text, not as a <time> the script would turn into "3 h ago").

A task record keeps when it last changed (updated_at), not when it went in progress, so
the start comes from the log when the log still holds it: the newest event that put the
task in progress (a claim, a status change to in_progress, a rejected submission). When
the events read do not reach that far, updated_at is the best the service knows, and
since any change moves it, the age is then only a lower bound, said as "at least".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from rooms import clock
from rooms.eventwords import event_words
from rooms.results import Event

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS


@dataclass(frozen=True, slots=True)
class TaskAge:
    since: str  # ISO time it has been in progress since (or at least since)
    words: str  # "3 h 12 min"
    exact: bool  # False: only updated_at was known, so the task may be older in progress


def duration_words(ms: int) -> str:
    """A duration as a person says it, to the minute: "under a minute", "12 min",
    "3 h 12 min", "2 d 5 h"."""
    if ms < MINUTE_MS:
        return "under a minute"
    days, rest = divmod(ms, DAY_MS)
    hours, rest = divmod(rest, HOUR_MS)
    minutes = rest // MINUTE_MS
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min"


def _puts_in_progress(event: Mapping[str, Any]) -> bool:
    kind = event.get("type")
    if kind in ("task_claimed", "task_rejected"):
        return True
    payload = event.get("payload")
    if not isinstance(payload, dict):
        return False
    if kind == "handoff_accepted":  # the new owner takes the task up (unless it is blocked)
        task = payload.get("task")
        return isinstance(task, dict) and task.get("status") == "in_progress"
    if kind != "task_updated":
        return False
    changes = payload.get("changes")
    status = changes.get("status") if isinstance(changes, dict) else None
    if isinstance(status, list) and len(status) == 2:
        return bool(status[1] == "in_progress" and status[0] != "in_progress")
    task = payload.get("task")
    now_status = task.get("status") if isinstance(task, dict) else None
    before = payload.get("previousStatus")
    return now_status == "in_progress" and before not in (None, "in_progress")


def progress_started(events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Task id -> the time of the newest of `events` that put it in progress."""
    started: dict[str, str] = {}
    for event in events:
        if not _puts_in_progress(event):
            continue
        task_id = event_words(cast(Event, event), {}).task_id
        at = event.get("timestamp")
        if task_id and isinstance(at, str) and at > started.get(task_id, ""):
            started[task_id] = at
    return started


def in_progress_age(
    task: Mapping[str, Any], started: Mapping[str, str], *, now_ms: int
) -> TaskAge | None:
    """How long `task` has been in progress (None unless it is), from `started`
    (progress_started) or, failing that, its updated_at as a lower bound."""
    if task.get("status") != "in_progress":
        return None
    since = started.get(str(task.get("id")))
    exact = since is not None
    if since is None:
        since = str(task.get("updated_at") or "")
    try:
        since_ms = clock.ms_from_iso(since)
    except ValueError:
        return None
    return TaskAge(since=since, words=duration_words(max(now_ms - since_ms, 0)), exact=exact)


def in_progress_ages(
    tasks: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]], *, now_ms: int
) -> dict[str, TaskAge]:
    """Every in-progress task's age, by task id."""
    started = progress_started(events)
    ages = {}
    for task in tasks:
        age = in_progress_age(task, started, now_ms=now_ms)
        if age is not None:
            ages[str(task["id"])] = age
    return ages
