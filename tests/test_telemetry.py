"""The service's own operator (issue 14, point 9): /metrics in the Prometheus format with
tool calls, errors and latency by tool, waiters and streams, webhook queue depth and
failures, refusals and store round trips; access by METRICS_ACCESS; a request id on every
answer, in the text of our own failures and on every log line, JSON with LOG_FORMAT=json."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from calls import runner
from calls.runner import tool_run
from config import telemetry
from config.asgi import application
from rooms import errors
from tests import callers
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]


def client(address: str = "127.0.0.1") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=application, client=(address, 5000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one series in a Prometheus text page (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        head, _, rest = series.partition("{")
        got = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
        if head == name and got == wanted:
            return float(value)
    return 0.0


async def http_get_metrics() -> httpx.Response:
    async with client() as http:
        return await http.get("/metrics")


@pytest.fixture(autouse=True)
def _database(transactional_db: None) -> None:
    """The access check reaches the database from its worker threads."""


async def test_metrics_count_calls_errors_and_latency_by_tool(
    redis_client_closed: None, settings: Any
) -> None:
    settings.METRICS_ACCESS = "local"
    team = await callers.team("metrics-a")
    room = new_room_id("metrics")
    async with client() as http:
        before = (await http.get("/metrics")).text
        await tool_run(team, "add_task", {"roomId": room, "title": "counted"})
        with pytest.raises(errors.DomainError):
            await tool_run(team, "get_task", {"roomId": room, "taskId": "t_nosuchtask00"})
        page = await http.get("/metrics")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    text = page.text
    ok = "roomservice_tool_calls_total"
    assert sample(text, ok, tool="add_task", outcome="ok") == (
        sample(before, ok, tool="add_task", outcome="ok") + 1
    )
    assert sample(text, ok, tool="get_task", outcome="task_not_found") >= 1
    assert sample(text, "roomservice_tool_seconds_count", tool="add_task") >= 1
    assert sample(text, "roomservice_store_seconds_count") > sample(
        before, "roomservice_store_seconds_count"
    )
    assert "roomservice_webhook_queue_depth" in text
    # A refusal by a quota or a budget is counted as one.
    runner.tool_observed("add_task", "rate_limited", 0.001)
    after = (await http_get_metrics()).text
    assert sample(after, "roomservice_quota_refusals_total", code="rate_limited") >= 1
    assert "roomservice_open" in text or "# HELP roomservice_open" in text


async def test_metrics_are_closed_to_other_clients_unless_opened(settings: Any) -> None:
    """The attack: a tenant scrapes the operator's figures from outside. Refused."""
    settings.METRICS_ACCESS = "local"
    async with client("203.0.113.9") as http:
        assert (await http.get("/metrics")).status_code == 403
    settings.METRICS_ACCESS = "token"
    settings.METRICS_TOKEN = "scrape-secret-123"
    async with client("203.0.113.9") as http:
        assert (await http.get("/metrics")).status_code == 403
        wrong = await http.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 403
        right = await http.get("/metrics", headers={"Authorization": "Bearer scrape-secret-123"})
        assert right.status_code == 200
    settings.METRICS_ACCESS = "off"
    async with client() as http:
        assert (await http.get("/metrics")).status_code == 403


async def test_every_answer_carries_a_request_id_that_its_log_lines_carry_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with client() as http:
        given = await http.get("/health", headers={"X-Request-ID": "support-case-0042"})
        made = await http.get("/health")
        odd = await http.get("/health", headers={"X-Request-ID": "bad id with spaces"})
    assert given.headers["x-request-id"] == "support-case-0042"
    assert len(made.headers["x-request-id"]) == 16
    assert odd.headers["x-request-id"] != "bad id with spaces"

    token = telemetry.REQUEST_ID.set("abc123def456")
    try:
        assert telemetry.with_request_id("It failed.") == "It failed. (request id abc123def456)"
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "boom %s", ("!",), None)
        telemetry.RequestIdFilter().filter(record)
        line = json.loads(telemetry.JsonFormatter().format(record))
    finally:
        telemetry.REQUEST_ID.reset(token)
    assert line["requestId"] == "abc123def456" and line["message"] == "boom !"
    assert line["level"] == "ERROR" and line["time"].endswith("Z")


async def test_local_metrics_refuse_a_request_that_came_through_a_proxy(settings: Any) -> None:
    """The attack: a remote client names 127.0.0.1 in X-Forwarded-For. Refused."""
    settings.METRICS_ACCESS = "local"
    async with client() as http:
        forged = await http.get("/metrics", headers={"X-Forwarded-For": "127.0.0.1"})
    assert forged.status_code == 403
