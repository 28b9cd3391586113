"""Share links: a room's read-only links for people, and the live page a link opens
(no sign-in; the link is the credential)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from dashboard import forms
from dashboard.viewer import Viewer, team_view
from dashboard.views.common import (
    expiry_from_form,
    found_or_404,
    public_url,
    room_of_viewer,
    room_ref_read,
)
from dashboard.views.rooms import live_context
from rooms import clock
from rooms.errors import DomainError
from rooms.selectors import room as room_selectors
from rooms.store import engine as engine_store
from tenants import access, people, selectors
from tenants.auth import ShareToken, caller_resolve_sync
from tenants.capabilities import Caller, Manage
from tenants.models import Room


@never_cache  # it may show a secret, once: no cache keeps a copy
@team_view(requires=Manage.INVITES)
def shares(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    form = forms.ShareForm(request.POST or None)
    minted = None
    if request.method == "POST" and form.is_valid():
        minted = people.share_link_create(
            room=found,
            label=form.cleaned_data["label"],
            expires_at=expiry_from_form(form.cleaned_data["expires_in"]),
            created_by=viewer.user,
            actor=viewer.actor,
        )
        form = forms.ShareForm()
    return render(
        request,
        "dashboard/shares.html",
        {
            "viewer": viewer,
            "room": found,
            "links": selectors.share_links_for_room(found),
            "form": form,
            "minted": minted,
            "base": public_url(request),
            "now": clock.now(),
        },
    )


@require_POST
@team_view(requires=Manage.INVITES)
def share_revoke(request: HttpRequest, viewer: Viewer, room_id: str, link_id: int) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    link = found_or_404(selectors.access_share_link_by_id, found, link_id)
    people.share_link_revoke(link=link, actor=viewer.actor)
    return redirect("shares", room_id=found.room_id)


def _share(token: str) -> tuple[Room, Caller]:
    caller = caller_resolve_sync(ShareToken(token))
    if caller is None or caller.room is None:
        raise Http404("This link is unknown, revoked or expired.")
    try:
        return access.room_for_caller(caller, caller.room), caller
    except DomainError:
        raise Http404("This link is unknown, revoked or expired.") from None


def shared_room(request: HttpRequest, token: str) -> HttpResponse:
    found, caller = _share(token)
    snapshot = engine_store.run_sync(room_selectors.room_snapshot, room_ref_read(caller, found))
    response = render(
        request,
        "dashboard/shared.html",
        {"room": found, "live_url": "live", **live_context(snapshot)},
    )
    response["Referrer-Policy"] = "no-referrer"
    response["X-Robots-Tag"] = "noindex"
    return response


def shared_room_live(request: HttpRequest, token: str) -> HttpResponse:
    found, caller = _share(token)
    snapshot = engine_store.run_sync(room_selectors.room_snapshot, room_ref_read(caller, found))
    return render(
        request,
        "dashboard/_live.html",
        {"room": found, "oob": True, "shared": True, **live_context(snapshot)},
    )
