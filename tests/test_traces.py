"""Trace context (rooms.traces): only a well-formed W3C traceparent is carried, and a
request's log lines carry it (tests/test_protocol_revision.py: the events a call writes
record it; tests/tenants/test_webhooks.py: the deliveries they cause send it)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.conf import settings

from config import telemetry
from rooms import traces

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
PLAIN: str = settings.LOGGING["formatters"]["plain"]["format"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("given", "carried"),
    [
        (TRACE, TRACE),
        (TRACE.upper(), ""),
        ("00-" + "0" * 32 + "-00f067aa0ba902b7-01", ""),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01", ""),
        ("ff" + TRACE[2:], ""),
        (TRACE + "-extra", ""),  # version 00 has exactly four fields
        ("01" + TRACE[2:] + "-later-fields", "01" + TRACE[2:]),
        ("x" * 10_000, ""),
        (42, ""),
        (None, ""),
    ],
)
def test_only_a_well_formed_traceparent_is_carried(given: Any, carried: str) -> None:
    assert traces.traceparent_valid(given) == carried


def test_a_requests_log_lines_carry_its_trace() -> None:
    token = traces.TRACEPARENT.set(TRACE)
    try:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "boom", (), None)
        telemetry.RequestIdFilter().filter(record)
        line = json.loads(telemetry.JsonFormatter().format(record))
        plain = logging.Formatter(PLAIN).format(record)
    finally:
        traces.TRACEPARENT.reset(token)
    assert line["traceparent"] == TRACE and line["traceId"] == TRACE[3:35]
    assert f"trace {TRACE}]" in plain
    bare = logging.LogRecord("x", logging.ERROR, __file__, 1, "boom", (), None)
    telemetry.RequestIdFilter().filter(bare)
    assert "traceparent" not in json.loads(telemetry.JsonFormatter().format(bare))
