"""A room's activity over time as bar charts the page draws as SVG, with no chart library.

Only counts the service really has are drawn: the per-day counts the store keeps with every
append, trim and deletion (get_room_analytics' byDate), and per hour for the last day, the
events the log still holds. An hour the read did not reach is "not counted", drawn as a
gap and said so, never as zero. The template turns the geometry here into <rect>s and
<text>s; the same figures are the text table beside the chart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

HOUR_MS = 3_600_000

WIDTH = 480  # the SVG's own units; it scales to its box (a phone: about 0.7)
HEIGHT = 170
TOP = 20  # room above the tallest bar for its figure
BOTTOM = 24  # room under the bars for their labels
SIDE = 8
GAP_SHARE = 0.25  # of each bar's slot, left empty between bars
LABELS_MOST = 7  # more bars than this: only every n-th is labelled under the axis


@dataclass(frozen=True, slots=True)
class Period:
    """One bar's worth of time: its short label, its full name, and its count (None: the
    period was not counted, so nothing is known about it)."""

    label: str
    when: str
    count: int | None


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    when: str
    count: int | None
    x: float
    y: float
    width: float
    height: float
    centre: float
    labelled: bool  # its label is drawn under the axis

    @property
    def figure_y(self) -> float:
        return round(self.y - 4, 2)


@dataclass(frozen=True, slots=True)
class BarChart:
    title: str
    summary: str  # the chart in one sentence: the SVG's description
    bars: list[Bar]
    width: int
    height: int
    baseline: float
    most: int  # the tallest bar's count
    unit: str  # what one bar is: "day", "hour"

    @property
    def label_y(self) -> float:
        return self.baseline + 16

    @property
    def unknown_y(self) -> float:
        return self.baseline - 6


def _day_label(day: str) -> str:
    parsed = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    return f"{parsed.day} {parsed.strftime('%b')}"


def day_periods(by_date: Mapping[str, int]) -> list[Period]:
    """get_room_analytics' byDate ("YYYY-MM-DD" -> events, oldest first) as periods."""
    return [
        Period(label=_day_label(day), when=day, count=int(count))
        for day, count in sorted(by_date.items())
    ]


def hour_periods(
    times_ms: Iterable[int], *, now_ms: int, hours: int, counted_since_ms: int | None
) -> list[Period]:
    """Events per UTC hour over the last `hours` hours (the current one last) from their
    times. `counted_since_ms`: the read of the log stopped there (it held more events), so
    an hour starting before it is not counted; None when every event of the window was read.
    """
    this_hour = now_ms - now_ms % HOUR_MS
    first = this_hour - (hours - 1) * HOUR_MS
    counts = dict.fromkeys(range(hours), 0)
    for at in times_ms:
        slot = (at - first) // HOUR_MS
        if 0 <= slot < hours:
            counts[slot] += 1
    periods = []
    for slot in range(hours):
        start = first + slot * HOUR_MS
        begins = datetime.fromtimestamp(start / 1000, UTC)
        known = counted_since_ms is None or start >= counted_since_ms
        periods.append(
            Period(
                label=begins.strftime("%H"),
                when=f"{begins:%Y-%m-%d %H}:00 UTC",
                count=counts[slot] if known else None,
            )
        )
    return periods


def bar_chart(periods: Sequence[Period], *, title: str, unit: str) -> BarChart:
    """Bars scaled to the busiest period; `unit` names a period in the summary ("day")."""
    counted = [p.count for p in periods if p.count is not None]
    most = max(counted, default=0)
    total = sum(counted)
    plot_height = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - 2 * SIDE) / max(len(periods), 1)
    every = max(1, -(-len(periods) // LABELS_MOST))
    bars = []
    for index, period in enumerate(periods):
        height = plot_height * period.count / most if period.count and most else 0.0
        x = SIDE + index * slot + slot * GAP_SHARE / 2
        bars.append(
            Bar(
                label=period.label,
                when=period.when,
                count=period.count,
                x=round(x, 2),
                y=round(TOP + plot_height - height, 2),
                width=round(slot * (1 - GAP_SHARE), 2),
                height=round(height, 2),
                centre=round(x + slot * (1 - GAP_SHARE) / 2, 2),
                labelled=(len(periods) - 1 - index) % every == 0,
            )
        )
    return BarChart(
        title=title,
        summary=_summary(periods, total=total, most=most, unit=unit),
        bars=bars,
        width=WIDTH,
        height=HEIGHT,
        baseline=TOP + plot_height,
        most=most,
        unit=unit,
    )


def _summary(periods: Sequence[Period], *, total: int, most: int, unit: str) -> str:
    if not periods:
        return "No periods to show."
    span = f"from {periods[0].when} to {periods[-1].when}"
    missing = sum(1 for p in periods if p.count is None)
    gaps = f" ({missing} {unit}s not counted)" if missing else ""
    if not total:
        return f"No events {span}{gaps}."
    busiest = next(p for p in periods if p.count == most)
    return (
        f"{total} event{'s' if total != 1 else ''} {span}{gaps}; "
        f"the busiest {unit} was {busiest.when} with {most}."
    )
