"""Every request's body bounded before anything reads it (issue 31, P3).

Django's ASGI handler reads a request's whole body (into a spool on disk) before any view
runs, so a view's own bound (the hook door's 1 MB) came after a body of any size was taken
in. This stands in front of every HTTP route: a declared Content-Length over the route's
limit is answered 413 before a byte is read; an undeclared (chunked) body is counted as it
arrives and answered 413 the moment it passes the limit, the rest never read (the answer
closes the connection). The limits: ROOM_IMPORT_BYTES_MAX for a room import, /mcp's
MCP_MAX_BODY_BYTES, and REQUEST_BODY_BYTES_MAX for every other route (no other route takes
more than a tool call's arguments or a form).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings

from tenants.imports import IMPORT_TOO_LARGE

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Message, Receive, Send], Awaitable[Any]]

IMPORT_PATHS = ("/api/v1/rooms/import", "/api/v1/rooms/import/")
BODY_TOO_LARGE = (
    "This request's body is larger than {path} takes ({most} bytes), so nothing past that "
    "was read and nothing was done. Send less, or ask the operator ({setting})."
)


def limit_of(path: str) -> tuple[int, str]:
    """The most `path` reads of a body, and what a larger one is told."""
    if path in IMPORT_PATHS:
        most = int(settings.ROOM_IMPORT_BYTES_MAX)
        return most, IMPORT_TOO_LARGE.format(most=most)
    if path in ("/mcp", "/mcp/", "/oauth/mcp", "/oauth/mcp/"):
        most, setting = int(settings.MCP_MAX_BODY_BYTES), "MCP_MAX_BODY_BYTES"
    else:
        most, setting = int(settings.REQUEST_BODY_BYTES_MAX), "REQUEST_BODY_BYTES_MAX"
    return most, BODY_TOO_LARGE.format(path=path[:200], most=most, setting=setting)


async def _too_large(send: Send, message: str) -> None:
    body = json.dumps({"message": message, "code": "payload_too_large", "extra": {}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bounded(app: App) -> App:
    """`app` behind the body limit of each request's route."""

    async def limited_app(scope: Message, receive: Receive, send: Send) -> Any:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        most, too_large = limit_of(scope["path"])
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > most:
            return await _too_large(send, too_large)
        seen = 0
        answered = False

        async def counted() -> Message:
            nonlocal seen, answered
            message = await receive()
            if message["type"] == "http.request" and not answered:
                seen += len(message.get("body", b""))
                if seen > most:
                    answered = True
                    await _too_large(send, too_large)
                    return {"type": "http.disconnect"}  # the app stops reading, answers nothing
            return message

        async def sending(message: Message) -> None:
            if not answered:
                await send(message)

        return await app(scope, counted, sending)

    return limited_app
