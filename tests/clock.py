"""The clock a test moves by hand: the one way tests set rooms.clock (no sleeping)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from rooms import clock


@contextmanager
def clock_at(start: datetime) -> Iterator[list[datetime]]:
    """Inside the block every clock read is `now[0]` (first `start`; the test moves it by
    setting `now[0]`); the real clock is back after it."""
    now = [start]
    clock.set_clock(lambda: now[0])
    try:
        yield now
    finally:
        clock.set_clock(None)
