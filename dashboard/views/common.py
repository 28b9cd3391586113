"""What the page families share: the site's public URL and the MCP URL the snippets print,
the viewer's room (a 404 when it is not theirs, the same as a missing one), its RoomRef,
and a form's expiry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest

from dashboard.viewer import Viewer
from rooms import clock, profiles, store
from rooms.errors import DomainError
from rooms.refs import RoomRef
from tenants import access
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


def room_ref_read(caller: Caller, room: Room) -> RoomRef:
    return store.run_sync(access.room_access, caller, room.room_id, write=False)


def expiry_from_form(seconds: str | None) -> Any:
    return clock.now() + timedelta(seconds=int(seconds)) if seconds else None
