"""The activity charts draw only counts the service has: days from the store's per-day
counts, hours from the events read, and an hour the read did not reach is not counted."""

from __future__ import annotations

from dashboard.charts import HOUR_MS, Period, bar_chart, day_periods, hour_periods

NOW = 1_750_000_000_000 + 25 * 60_000  # 25 minutes into an hour


def test_days_come_in_date_order_with_short_labels() -> None:
    periods = day_periods({"2026-05-15": 4, "2026-05-14": 0, "2026-05-16": 9})
    assert [p.when for p in periods] == ["2026-05-14", "2026-05-15", "2026-05-16"]
    assert [p.label for p in periods] == ["14 May", "15 May", "16 May"]
    assert [p.count for p in periods] == [0, 4, 9]


def test_hours_bucket_event_times_and_the_current_hour_is_last() -> None:
    this_hour = NOW - NOW % HOUR_MS
    times = [NOW, NOW - 60_000, this_hour - 1, this_hour - 23 * HOUR_MS, this_hour - 24 * HOUR_MS]
    periods = hour_periods(times, now_ms=NOW, hours=24, counted_since_ms=None)
    assert len(periods) == 24
    assert periods[-1].count == 2  # the two in the current hour
    assert periods[-2].count == 1
    assert periods[0].count == 1  # 23 hours back is the first hour; 24 back is outside
    assert sum(p.count or 0 for p in periods) == 4
    assert periods[-1].when.endswith(":00 UTC")


def test_hours_before_the_read_stopped_are_not_counted_never_zero() -> None:
    this_hour = NOW - NOW % HOUR_MS
    cut = this_hour - 2 * HOUR_MS + 5  # the read reached only partway into an hour
    periods = hour_periods([NOW], now_ms=NOW, hours=6, counted_since_ms=cut)
    assert [p.count for p in periods] == [None, None, None, None, 0, 1]


def test_bars_scale_to_the_busiest_and_say_so() -> None:
    chart = bar_chart(
        [Period("a", "day a", 2), Period("b", "day b", 8), Period("c", "day c", 0)],
        title="Events per day",
        unit="day",
    )
    tallest = max(chart.bars, key=lambda b: b.height)
    assert tallest.count == 8 and tallest.y + tallest.height == chart.baseline
    assert chart.bars[0].height == tallest.height / 4
    assert chart.bars[2].height == 0
    assert chart.summary == "10 events from day a to day c; the busiest day was day b with 8."
    assert all(b.x + b.width <= chart.width for b in chart.bars)


def test_an_empty_window_and_uncounted_periods_are_said() -> None:
    chart = bar_chart(
        [Period("1", "h1", None), Period("2", "h2", 0)], title="Events per hour", unit="hour"
    )
    assert chart.summary == "No events from h1 to h2 (1 hours not counted)."
    assert chart.most == 0 and all(b.height == 0 for b in chart.bars)


def test_many_bars_label_every_few_and_always_the_newest() -> None:
    chart = bar_chart([Period(str(i), str(i), i) for i in range(24)], title="t", unit="hour")
    labelled = [b.label for b in chart.bars if b.labelled]
    assert labelled[-1] == "23" and 4 <= len(labelled) <= 7
