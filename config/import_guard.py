"""POST /api/v1/rooms/import bounded before Django reads it (tenants.imports).

Django's ASGI handler reads a request's whole body (into a spool on disk) before any view
runs, so the view's own bound would come after a body of any size was taken in. This
stands in front of it, for the import path alone: a declared Content-Length over
ROOM_IMPORT_BYTES_MAX is answered 413 before a byte is read; an undeclared (chunked) body
is counted as it arrives and answered 413 the moment it passes the limit, the rest never
read. More than ROOM_IMPORTS_PER_PROCESS imports in flight in this process: 503 with
Retry-After, before the body is read.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings

from tenants.imports import IMPORT_TOO_LARGE, IMPORTS_FULL, RETRY_AFTER_SECONDS

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Message, Receive, Send], Awaitable[Any]]

PATHS = ("/api/v1/rooms/import", "/api/v1/rooms/import/")
_in_flight = 0


async def _answer(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"message": message, "code": code, "extra": {}}).encode()
    headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
    if status == 503:
        headers.append((b"retry-after", str(RETRY_AFTER_SECONDS).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def guarded(app: App, scope: Message, receive: Receive, send: Send) -> Any:
    global _in_flight
    most = int(settings.ROOM_IMPORT_BYTES_MAX)
    too_large = IMPORT_TOO_LARGE.format(most=most)
    declared = dict(scope.get("headers") or []).get(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > most:
        return await _answer(send, 413, "payload_too_large", too_large)
    if _in_flight >= int(settings.ROOM_IMPORTS_PER_PROCESS):
        full = IMPORTS_FULL.format(seconds=RETRY_AFTER_SECONDS)
        return await _answer(send, 503, "imports_full", full)
    seen = 0
    answered = False

    async def limited() -> Message:
        nonlocal seen, answered
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > most and not answered:
                answered = True
                await _answer(send, 413, "payload_too_large", too_large)
                return {"type": "http.disconnect"}  # Django stops reading and answers nothing
        return message

    held = True

    def release() -> None:
        global _in_flight
        nonlocal held
        if held:
            held = False
            _in_flight -= 1

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body"):
            release()  # answered: Django may go on a moment (its request_finished work)
        if not answered:
            await send(message)

    _in_flight += 1
    try:
        return await app(scope, limited, sending)
    finally:
        release()
