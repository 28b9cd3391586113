"""/static/: files found by Django's staticfiles finders (our static/ and the apps',
the admin's included), served asynchronously with caching headers. No collectstatic
step and no CDN, so `make run` works offline."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.staticfiles import finders
from django.core.exceptions import SuspiciousFileOperation
from starlette.responses import FileResponse, PlainTextResponse

CACHE_SECONDS = 3600


def _inside(relative: str) -> bool:
    """A path the finders may look up: relative, no parent steps, no odd characters (an
    absolute path like /static//etc/passwd is refused here, not by a 500 further down)."""
    parts = relative.split("/")
    return (
        bool(relative)
        and not relative.startswith("/")
        and "\\" not in relative
        and "\x00" not in relative
        and all(part not in ("", ".", "..") for part in parts)
    )


async def static_app(scope: dict[str, Any] | Any, receive: Any, send: Any) -> None:
    relative = scope["path"][len("/static/") :]
    if scope["method"] not in ("GET", "HEAD") or not _inside(relative):
        await PlainTextResponse("not found", status_code=404)(scope, receive, send)
        return
    try:
        found = finders.find(relative)
    except SuspiciousFileOperation:
        found = None
    path = found[0] if isinstance(found, list) else found
    if not path or not os.path.isfile(path):
        await PlainTextResponse("not found", status_code=404)(scope, receive, send)
        return
    response = FileResponse(path, headers={"Cache-Control": f"public, max-age={CACHE_SECONDS}"})
    await response(scope, receive, send)
