"""The service's own operator: Prometheus metrics at /metrics, structured logs, request ids.

Metrics use `prometheus-client`. With several processes (WEB_CONCURRENCY > 1, the Celery
worker) `make run` points PROMETHEUS_MULTIPROC_DIR at a folder of its own, and /metrics sums
what every process wrote there; a single process reports its own registry.

Who may read /metrics is a setting (METRICS_ACCESS): `local` (the default: clients on the
loopback only), `token` (Authorization: Bearer METRICS_TOKEN), `open`, or `off`.

Every HTTP request has an id: the caller's `X-Request-ID` when it is a plain token, else a
new one. It is on every response's `X-Request-ID` header, on every log line of the request
(`LOG_FORMAT=json` writes one JSON object per line), and in the text of the answer to a
failure of ours ("... (request id ...)"), so a support person finds the log line of the
error an agent saw. Answers to mistakes the caller can correct (4xx) carry it in the header
only: their bodies and texts are the protocol's, which clients compare.
"""

from __future__ import annotations

import contextvars
import hmac
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from rooms import traces

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# Collected at scrape time, once, outside the per-process registries (an app adds them when
# it is ready: tenants adds the webhook queue's depth, which every process reads alike).
_SCRAPED: list[Collector] = []


def scraped_add(collector: Collector) -> None:
    """Collect `collector` on every scrape of /metrics (a number every process sees alike)."""
    if collector not in _SCRAPED:
        _SCRAPED.append(collector)


def _registry() -> CollectorRegistry:
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        return REGISTRY
    from prometheus_client import multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=folder)  # type: ignore[no-untyped-call]
    return registry


def metrics_text() -> bytes:
    """Every metric: defined where it is measured (calls.runner, tenants.budgets,
    rooms.store, mcp_gateway.webhooks), served here."""
    registry = _registry()
    scraped = CollectorRegistry()
    for collector in _SCRAPED:
        scraped.register(collector)
    try:
        return generate_latest(registry) + generate_latest(scraped)
    finally:
        close_old_connections()  # a scraped collector may have used the database


# --- Who may read /metrics --------------------------------------------------------------


def _allowed(scope: Scope) -> bool:
    from django.conf import settings

    mode = str(settings.METRICS_ACCESS)
    if mode == "open":
        return True
    if mode == "token":
        token = str(settings.METRICS_TOKEN)
        given = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        return bool(token) and hmac.compare_digest(given, f"Bearer {token}")
    if mode == "local":
        # A request that came through a proxy is not local, whatever address the proxy
        # headers name (a client can write them; uvicorn may have taken them as the peer).
        headers = dict(scope.get("headers") or [])
        if b"x-forwarded-for" in headers or b"forwarded" in headers:
            return False
        client = scope.get("client") or ("", 0)
        return str(client[0]) in ("127.0.0.1", "::1", "localhost")
    return False


async def metrics_app(scope: Scope, receive: Receive, send: Send) -> None:
    if not _allowed(scope):
        await _answer(send, 403, b"metrics are not open to this client (METRICS_ACCESS)\n")
        return
    body = await sync_to_async(metrics_text, thread_sensitive=False)()
    await _answer(send, 200, body, CONTENT_TYPE_LATEST.encode())


async def _answer(send: Send, status: int, body: bytes, kind: bytes = b"text/plain") -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", kind), (b"cache-control", b"no-store")],
        }
    )
    await send({"type": "http.response.body", "body": body})


# --- Request ids ------------------------------------------------------------------------

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_GIVEN_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


def request_id() -> str:
    return REQUEST_ID.get()


def with_request_id(text: str) -> str:
    """A failure's text, with the id a support person looks the log line up by."""
    rid = REQUEST_ID.get()
    return text if rid == "-" else f"{text} (request id {rid})"


def _request_context(scope: Scope) -> tuple[str, str]:
    """The request's id (the caller's X-Request-ID if it is a plain token) and its W3C Trace
    Context header (the REST door's and the hooks' way to carry it; an MCP request's
    params._meta.traceparent, read by mcp_gateway.app, overrides it). A function of its
    own, so the headers it reads are not kept through a request that waits for minutes."""
    headers = dict(scope.get("headers") or [])
    given = headers.get(b"x-request-id", b"").decode("latin-1")
    rid = given if _GIVEN_ID.match(given) else secrets.token_hex(8)
    return rid, traces.traceparent_valid(headers.get(b"traceparent", b"").decode("latin-1"))


def request_ids(app: Callable[[Scope, Receive, Send], Awaitable[Any]]) -> Any:
    """ASGI middleware: every HTTP request gets its id (the caller's X-Request-ID if it is
    a plain token), in the context of everything it runs and on its response."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        rid, traced = _request_context(scope)
        token = REQUEST_ID.set(rid)
        trace_token = traces.TRACEPARENT.set(traced)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-request-id"]
                message = {**message, "headers": [*headers, (b"x-request-id", rid.encode())]}
            await send(message)

        try:
            return await app(scope, receive, sending)
        finally:
            traces.TRACEPARENT.reset(trace_token)
            REQUEST_ID.reset(token)

    return wrapped


# --- Logs -------------------------------------------------------------------------------


class RequestIdFilter(logging.Filter):
    """Every record carries the request id it was logged under ("-" outside a request),
    and the trace context of the call, when it has one."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        traceparent = traces.TRACEPARENT.get()
        record.traceparent = traceparent
        record.trace = f" trace {traceparent}" if traceparent else ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, and the
    exception's traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "requestId": getattr(record, "request_id", "-"),
        }
        traceparent = getattr(record, "traceparent", "")
        if traceparent:
            line["traceparent"] = traceparent
            line["traceId"] = traces.trace_id(traceparent)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)
