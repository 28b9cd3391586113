"""Site-wide response rules for the Django-served pages: a Content-Security-Policy on every
page, a clear 503 (not a 500) when a store is away while a page is built, and, for any
refusal a page did not answer itself (a quota, a name it may not use), its own status
and message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import markcoroutinefunction
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from rooms.errors import DATABASE_UNAVAILABLE, STORE_UNAVAILABLE, DomainError
from rooms.store import connections as connections_store

# Only our own files: no inline script (so no injected one runs), no eval, no framing.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# The Django admin sets inline style attributes on some widgets.
ADMIN_CSP = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")


class SecurityHeaders:
    """Sync only, so that Django runs a request's whole chain from one thread: async, each
    middleware's every step would be a thread hop of its own (1-1.5 ms more a request)."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return _secured(request, self.get_response(request))

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, connections_store.StoreDown):
            message = STORE_UNAVAILABLE
        elif isinstance(exception, OperationalError | InterfaceError):
            message = DATABASE_UNAVAILABLE
        elif isinstance(exception, DomainError) and not request.path.startswith("/api/"):
            # (The API answers these itself, as JSON: mcp_gateway.apis.base.exception_handler.)
            return HttpResponse(
                exception.message,
                status=exception.status,
                content_type="text/plain; charset=utf-8",
            )
        else:
            return None
        if request.path.startswith("/api/"):
            response: HttpResponse = JsonResponse(
                {"message": message, "code": "store_unavailable", "extra": {}}, status=503
            )
        else:
            response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "2"
        return response


class SecurityHeadersAsync(SecurityHeaders):
    """SecurityHeaders in a chain that runs async (config.asgi.held_app, for views that
    hold a request for minutes): a sync one in such a chain is called from a thread that
    waits for the rest of the chain, the view included, so each waiting REST call held a
    blocked thread."""

    sync_capable = False
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        super().__init__(get_response)
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponse:  # type: ignore[override]
        return _secured(request, await self.get_response(request))


def _secured(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    if "Content-Security-Policy" not in response:
        admin = request.path.startswith("/admin/")
        response["Content-Security-Policy"] = ADMIN_CSP if admin else CSP
    return response
