"""The one place the protocol asks what time it is, so tests can move time instead of sleeping."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

_now: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731 - swapped by tests


def now() -> datetime:
    return _now()


def now_ms() -> int:
    return int(now().timestamp() * 1000)


def set_clock(fn: Callable[[], datetime] | None) -> None:
    """Replace the clock (tests); None restores the real one."""
    global _now
    _now = fn if fn is not None else (lambda: datetime.now(UTC))


def iso_from_ms(ms: int) -> str:
    """ISO-8601 UTC with milliseconds and a Z, the protocol's timestamp format."""
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def now_iso() -> str:
    return iso_from_ms(now_ms())


def ms_from_iso(value: str) -> int:
    """Parse an ISO-8601 time (a trailing Z or an offset; naive means UTC) to epoch ms."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)
