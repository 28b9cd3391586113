"""The team's own pages: its members and their roles, joining by invitation, switching
team, acting for agents, the team's keys and its people's OAuth clients, and its audit log."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from dashboard import forms
from dashboard.viewer import SESSION_TEAM, Viewer, team_view
from dashboard.views.common import found_or_404, mcp_url, public_url
from rooms import profiles
from rooms.errors import DomainError
from tenants import acting, oauth, people, selectors, services
from tenants.capabilities import Manage


@require_POST
@team_view()
def team_switch(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    chosen = request.POST.get("team", "")
    if not any(str(t.pk) == chosen for t, _ in viewer.teams):
        raise Http404("not found")
    request.session[SESSION_TEAM] = chosen
    return redirect("rooms")


@team_view()
def team(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    form = forms.MemberInviteForm(request.POST or None)
    sent = ""
    if request.method == "POST":
        if not viewer.may(Manage.TEAM) or viewer.user is None:
            raise Http404("not found")
        if form.is_valid():
            people.member_invite_create(
                team=viewer.team,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                invited_by=viewer.user,
                link_base=public_url(request),
            )
            sent = form.cleaned_data["email"]
            form = forms.MemberInviteForm()
    return _team_page(request, viewer, form=form, sent=sent)


def _team_page(
    request: HttpRequest,
    viewer: Viewer,
    *,
    form: forms.MemberInviteForm | None = None,
    sent: str = "",
    error: DomainError | None = None,
) -> HttpResponse:
    """The team page: its members, the invite form, and what the last action said."""
    context = {
        "viewer": viewer,
        "members": selectors.members_of(viewer.team),
        "form": form or forms.MemberInviteForm(),
        "sent": sent,
    }
    if error is not None:
        context["error"] = error.message
    return render(request, "dashboard/team.html", context, status=error.status if error else 200)


@require_POST
@team_view(requires=Manage.TEAM)
def team_acting(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    """Let people act for agents (accept handoffs, resolve reviews) or stop them."""
    acting.acting_for_set(
        team=viewer.team, allowed=request.POST.get("allowed") == "1", caller=viewer.caller
    )
    return redirect("team")


@require_POST
@team_view(requires=Manage.TEAM)
def member_role(request: HttpRequest, viewer: Viewer, membership_id: int) -> HttpResponse:
    membership = found_or_404(selectors.access_membership_by_id, viewer.team, membership_id)
    form = forms.RoleForm(request.POST)
    if form.is_valid():
        try:
            services.membership_change_role(
                membership=membership, role=form.cleaned_data["role"], actor=viewer.actor
            )
        except DomainError as exc:
            return _team_page(request, viewer, error=exc)
    return redirect("team")


@require_POST
@team_view(requires=Manage.TEAM)
def member_remove(request: HttpRequest, viewer: Viewer, membership_id: int) -> HttpResponse:
    membership = found_or_404(selectors.access_membership_by_id, viewer.team, membership_id)
    try:
        services.membership_remove(membership=membership, actor=viewer.actor)
    except DomainError as exc:
        return _team_page(request, viewer, error=exc)
    return redirect("team")


def join(request: HttpRequest, token: str) -> HttpResponse:
    invite = people.member_invite_find(token)
    if invite is None:
        raise Http404("This invitation is unknown, used or expired.")
    user = request.user
    if request.method == "POST" and isinstance(user, User) and user.is_authenticated:
        people.member_invite_accept(invite=invite, user=user)
        request.session[SESSION_TEAM] = str(invite.team_id)
        return redirect("rooms")
    return render(
        request,
        "dashboard/join.html",
        {
            "invite": invite,
            "signed_in": user.is_authenticated,
            # With sign-up closed, only a person who has an account can take the invitation.
            "signup_open": settings.SIGNUP != "closed",
        },
    )


@never_cache  # it may show a secret, once: no cache keeps a copy
@team_view(requires=Manage.KEYS)
def keys(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    form = forms.KeyForm(request.POST or None)
    minted = None
    if request.method == "POST" and form.is_valid():
        try:
            minted = services.api_key_create(
                team=viewer.team,
                name=form.cleaned_data["name"],
                agent_name=form.cleaned_data["agent_name"],
                read_only=form.cleaned_data["read_only"],
                tools_profile=form.cleaned_data["tools_profile"],
                actor=viewer.actor,
                created_by=viewer.user,
            )
        except DomainError as exc:  # a quota, a person's name: said on the form
            form.add_error(None, exc.message)
        else:
            form = forms.KeyForm()
    return render(
        request,
        "dashboard/keys.html",
        {
            "viewer": viewer,
            "keys": selectors.keys_of_team(viewer.team.pk),
            "connections": oauth.connections_listed(team_id=viewer.team.pk),
            "form": form,
            "minted": minted,
            "minted_url": mcp_url(request, minted.key.tools_profile) if minted else "",
            "core_count": len(profiles.TOOLS["core"]),
            "roomd_count": len(profiles.TOOLS["roomd"]),
        },
    )


@team_view(requires=Manage.KEYS)
def key_revoke(request: HttpRequest, viewer: Viewer, key_id: int) -> HttpResponse:
    key = found_or_404(selectors.access_key_by_id, viewer.caller, key_id)
    if request.method == "POST":
        services.api_key_revoke(key=key, actor=viewer.actor)
        return redirect("keys")
    return render(
        request,
        "dashboard/confirm.html",
        {
            "viewer": viewer,
            "title": f"Revoke key “{key.name}”?",
            "body": f"Agents using {key.prefix}… will be refused from their next call. "
            "This cannot be undone.",
            "action": "Revoke key",
            "cancel": "/keys",
        },
    )


@require_POST
@team_view(requires=Manage.KEYS)
def connection_revoke(request: HttpRequest, viewer: Viewer, connection_id: int) -> HttpResponse:
    """Whoever may revoke the team's keys ends a person's client connected to the team:
    the team's connections alone (another team's is 404, nothing revoked)."""
    ours = oauth.connections_of(team_id=viewer.team.pk)
    oauth.connection_revoke(get_object_or_404(ours, pk=connection_id), actor=viewer.actor)
    return redirect("keys")


@team_view(requires=Manage.TEAM)
def audit(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    rows = list(selectors.audit_of_team(viewer.team.pk)[:500])
    who = audit_people(row.actor for row in rows)
    return render(
        request,
        "dashboard/audit.html",
        {"viewer": viewer, "rows": [(row, who.get(row.actor, "")) for row in rows]},
    )


def audit_people(actors: Iterable[str]) -> dict[str, str]:
    """The person behind each "user:<id>" actor, by email (the audit keeps the id, so a
    renamed or deleted account still has its rows); an account gone since keeps its id. An
    OAuth client's act ("user:<id> via oauth:<id>", Caller.actor) shows its person and the
    client, named as when it was connected (tenants.oauth.client_names)."""
    split = {actor: actor.split(" via oauth:", 1) for actor in actors}
    ids = {int(p[0][5:]) for p in split.values() if p[0].startswith("user:") and p[0][5:].isdigit()}
    accounts = User.objects.filter(pk__in=ids).values_list("pk", "email", "username")
    people = {f"user:{pk}": email or username for pk, email, username in accounts}
    clients = oauth.client_names(p[1] for p in split.values() if len(p) == 2)
    who = {}
    for actor, (person, *via) in split.items():
        if person in people:
            who[actor] = people[person]
            if via:
                who[actor] += f" via {clients.get(via[0]) or 'oauth:' + via[0]}"
    return who
