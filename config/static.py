"""/static/: files found by Django's staticfiles finders (our static/ and the apps',
the admin's included), served asynchronously with caching headers. No collectstatic
step and no CDN, so `make run` works offline."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.staticfiles import finders
from starlette.responses import FileResponse, PlainTextResponse

CACHE_SECONDS = 3600


async def static_app(scope: dict[str, Any] | Any, receive: Any, send: Any) -> None:
    relative = scope["path"][len("/static/") :]
    if scope["method"] not in ("GET", "HEAD") or ".." in relative.split("/"):
        await PlainTextResponse("not found", status_code=404)(scope, receive, send)
        return
    found = finders.find(relative) if relative else None
    path = found[0] if isinstance(found, list) else found
    if not path or not os.path.isfile(path):
        await PlainTextResponse("not found", status_code=404)(scope, receive, send)
        return
    response = FileResponse(path, headers={"Cache-Control": f"public, max-age={CACHE_SECONDS}"})
    await response(scope, receive, send)
