"""One percentile rule for every bench section. The sections each had their own copy, some
a floor index of a fraction, some the nearest rank of a percent, so two sections' p99 were
not the same statistic: here it is the nearest rank, and no values give nan."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0 < p <= 100) by nearest rank; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    # round() drops float error: a fraction's 0.07 * 100 is 7.000000000000001, and of 100
    # values that is still rank 7, not 8.
    rank = math.ceil(round(p * len(ordered) / 100, 9))
    return ordered[max(0, min(len(ordered) - 1, rank - 1))]


def env_int(name: str, default: int) -> int:
    """The environment variable `name` as an int; `default` when unset or not an int."""
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default
