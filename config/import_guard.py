"""POST /api/v1/rooms/import: at most ROOM_IMPORTS_PER_PROCESS imports in flight in this
process (tenants.imports); one more is answered 503 with Retry-After before its body is
read. (Its size is bounded in front of it, as every route's is: config.body_limit.)
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings

from config.body_limit import IMPORT_PATHS
from tenants.imports import IMPORTS_FULL, RETRY_AFTER_SECONDS

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Message, Receive, Send], Awaitable[Any]]

PATHS = IMPORT_PATHS
_in_flight = 0


async def guarded(app: App, scope: Message, receive: Receive, send: Send) -> Any:
    global _in_flight
    if _in_flight >= int(settings.ROOM_IMPORTS_PER_PROCESS):
        body = json.dumps(
            {
                "message": IMPORTS_FULL.format(seconds=RETRY_AFTER_SECONDS),
                "code": "imports_full",
                "extra": {},
            }
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"connection", b"close"),
            (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return None
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
        await send(message)

    _in_flight += 1
    try:
        return await app(scope, receive, sending)
    finally:
        release()
