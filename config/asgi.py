"""The outer ASGI router: /mcp and /health answered before Django's request cycle
(mcp_gateway/app.py says why), everything else by Django (the views that hold a request
for minutes without a thread of their own: _SharedThreadHandler); every request's body
bounded in front of all of them (config.body_limit)."""

from __future__ import annotations

import gc
import os
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIHandler
from django.urls import Resolver404, resolve

django_app = get_asgi_application()

from config import body_limit, import_guard, telemetry  # noqa: E402
from config.health import health  # noqa: E402
from config.lifecycle import die_with_parent  # noqa: E402
from config.static import static_app  # noqa: E402
from mcp_gateway import rest, sse  # noqa: E402
from mcp_gateway.app import Receive, Scope, Send, build_server  # noqa: E402
from mcp_gateway.tools import tool_list_warm  # noqa: E402
from rooms.store import engine as engine_store  # noqa: E402
from tenants.auth import static_teams_ensure  # noqa: E402
from tenants.db import db_run  # noqa: E402

mcp_app = build_server()
oauth_mcp_app = build_server(oauth=True)


class _SharedThreadHandler(ASGIHandler):
    """Django, for the views that hold a request for minutes (HELD_VIEWS: the REST door,
    whose waits are the guard's, and the event stream): every other request runs its sync
    middleware in a thread of its own (asgiref's ThreadSensitiveContext), which waits there
    for the view and lives until the response ends, so each waiting agent and each open
    stream held an OS thread. Here the chain runs async, the site's middleware with
    SecurityHeaders' async twin, and its few sync steps share asgiref's one thread for
    such steps."""

    def load_middleware(self, is_async: bool = False) -> None:
        site = settings.MIDDLEWARE
        # Read once, here, as the process starts; the site's list is back before any request.
        settings.MIDDLEWARE = [ASYNC_TWINS.get(path, path) for path in site]
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = site

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # type: ignore[override]
        await self.handle(scope, receive, send)  # type: ignore[arg-type]  # ASGI dict types


ASYNC_TWINS = {"config.middleware.SecurityHeaders": "config.middleware.SecurityHeadersAsync"}
held_app = _SharedThreadHandler()
HELD_VIEWS = (rest.tool_door, sse.event_stream)


def _held(path: str) -> bool:
    if not path.startswith("/api/v1/"):
        return False
    try:
        return resolve(path).func in HELD_VIEWS
    except Resolver404:
        return False


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            parent = os.environ.get("ROOMSERVICE_PARENT_PID")
            if parent and int(parent) != os.getpid():  # a worker process of `make run`
                die_with_parent(int(parent))
            try:
                # The static API_KEYS teams exist before anyone can take their slugs.
                await db_run(static_teams_ensure)
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            tool_list_warm()
            # Everything imported so far, and every tools/list built, lives for the whole
            # process: keep it out of the collector's generations, so GC pauses stay short
            # under load (bench: p99).
            gc.collect()
            gc.freeze()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await engine_store.close_client()
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _route(scope: Scope, receive: Receive, send: Send) -> Any:
    kind = scope["type"]
    if kind == "http":
        path = scope["path"]
        if path in ("/mcp", "/mcp/"):
            return await mcp_app(scope, receive, send)
        if path in ("/oauth/mcp", "/oauth/mcp/"):
            return await oauth_mcp_app(scope, receive, send)
        if path == "/metrics":
            return await telemetry.metrics_app(scope, receive, send)
        if path.startswith("/static/"):
            return await static_app(scope, receive, send)
        if path in import_guard.PATHS:
            return await import_guard.guarded(django_app, scope, receive, send)  # type: ignore[arg-type]
        if path == "/health":
            status, body = await health()
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"cache-control", b"no-store"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return None
        if _held(path):
            return await held_app(scope, receive, send)
    elif kind == "lifespan":
        return await _lifespan(receive, send)
    return await django_app(scope, receive, send)  # type: ignore[arg-type]  # ASGI dict types


# Every HTTP request carries its id (config.telemetry): its logs, its answer's header.
application = telemetry.request_ids(body_limit.bounded(_route))
