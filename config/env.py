"""The one reader of the environment for settings: each function takes the variable's name
and its default, and returns the typed value.

Numbers and switches treat a variable set to the empty string as unset; text and lists keep
it (an empty HEALTH_PROCESSES means "none", not "the default"). Outside config.settings so
that `make run` can read its own variables before Django reads the settings.
"""

from __future__ import annotations

import os

TRUE = frozenset({"1", "true", "yes", "on"})


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "")
    return raw.strip().lower() in TRUE if raw else default


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) if raw else default


def env_int_or_none(name: str) -> int | None:
    raw = os.environ.get(name, "")
    return int(raw) if raw else None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    return float(raw) if raw else default


def env_holding(fragments: tuple[str, ...]) -> list[str]:
    """The names of the variables whose value contains any of `fragments`, sorted."""
    return sorted(n for n, v in os.environ.items() if any(f in v for f in fragments))


def env_list(name: str, default: str = "") -> list[str]:
    """A comma-separated list, each item stripped, empty ones dropped."""
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]
