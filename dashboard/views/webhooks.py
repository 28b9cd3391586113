"""A room's webhooks: register one (its signing secret shown once), see its deliveries,
disable it."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from dashboard import forms
from dashboard.viewer import Viewer, team_view
from dashboard.views.common import found_or_404, room_of_viewer
from rooms.errors import DomainError
from tenants import selectors, webhooks
from tenants.capabilities import Manage


@never_cache  # it may show a secret, once: no cache keeps a copy
@team_view(requires=Manage.WEBHOOKS)
def room_webhooks(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    form = forms.WebhookForm(request.POST or None)
    minted = None
    if request.method == "POST" and form.is_valid():
        try:
            minted = webhooks.webhook_create(
                room=found,
                url=form.cleaned_data["url"],
                agent_filter=form.cleaned_data["agent_filter"],
                event_types=form.cleaned_data["event_types"],
                actor=viewer.actor,
                created_by=viewer.user,
            )
        except DomainError as exc:
            form.add_error("url", exc.message)
        else:
            form = forms.WebhookForm()
    hooks = list(selectors.webhooks_for_room(found))
    deliveries = {h.pk: list(h.deliveries.all()[:20]) for h in hooks}
    return render(
        request,
        "dashboard/webhooks.html",
        {
            "viewer": viewer,
            "room": found,
            "form": form,
            "minted": minted,
            "hooks": hooks,
            "deliveries": deliveries,
        },
    )


@require_POST
@team_view(requires=Manage.WEBHOOKS)
def webhook_disable(
    request: HttpRequest, viewer: Viewer, room_id: str, webhook_id: int
) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    hook = found_or_404(selectors.access_webhook_by_id, found, webhook_id)
    webhooks.webhook_disable(hook=hook, reason="disabled in the dashboard", actor=viewer.actor)
    return redirect("webhooks", room_id=found.room_id)
