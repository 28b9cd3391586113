"""What the page families share: the site's public URL and the MCP URL the snippets print,
the viewer's room (a 404 when it is not theirs, the same as a missing one), its RoomRef,
the same 404 for anything else of theirs looked up by id, and a form's expiry."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.http import Http404, HttpRequest

from dashboard.viewer import Viewer
from rooms import clock, profiles
from rooms.errors import DomainError
from rooms.refs import RoomRef
from rooms.store import engine as engine_store
from tenants import access
from tenants import errors as tenant_errors
from tenants.capabilities import Caller
from tenants.models import Room


def public_url(request: HttpRequest) -> str:
    return str(settings.PUBLIC_URL or request.build_absolute_uri("/").rstrip("/"))


# The profile the printed snippets ask for in their URL: an agent reads the everyday
# workflow's tools, not all of them (rooms.profiles). The URL wins over a key's default.
SNIPPET_PROFILE: profiles.Profile = "core"


def mcp_url(request: HttpRequest, default: str | None = None) -> str:
    """The MCP URL a snippet prints for a credential whose default profile is `default`
    (its own, when it has one; else SNIPPET_PROFILE)."""
    chosen = profiles.profile_stored(default) or SNIPPET_PROFILE
    return f"{public_url(request)}/mcp?tools={chosen}"


def room_of_viewer(viewer: Viewer, room_id: str) -> Room:
    try:
        return access.room_for_caller(viewer.caller, room_id)
    except DomainError:
        raise Http404("not found") from None


P = ParamSpec("P")
T = TypeVar("T")


def found_or_404(find: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """What `find` (a tenants.selectors access_..._by_id) finds, or the page's 404."""
    try:
        return find(*args, **kwargs)
    except tenant_errors.NotFoundError:
        raise Http404("not found") from None


def room_ref_read(caller: Caller, room: Room) -> RoomRef:
    return engine_store.run_sync(access.room_access, caller, room.room_id, write=False)


def expiry_from_form(seconds: str | None) -> Any:
    return clock.now() + timedelta(seconds=int(seconds)) if seconds else None
