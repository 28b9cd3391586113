"""Who is looking at a dashboard page: a signed-in person in one of their teams, a session
entered with a team key, or (for shared rooms) a share link. Each becomes a `Caller`
through tenants.auth like every other credential, and every page asks tenants.access."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect

from tenants import selectors
from tenants.auth import KeySession, PersonSession, caller_resolve_sync
from tenants.capabilities import Caller, Manage
from tenants.models import Team

SESSION_TEAM = "team"
SESSION_KEY_DIGEST = "apikey_digest"


@dataclass
class Viewer:
    team: Team
    caller: Caller
    user: User | None = None
    teams: list[tuple[Team, str]] = field(default_factory=list)

    def may(self, what: Manage) -> bool:
        return self.caller.may(what)

    @property
    def can_manage(self) -> bool:
        """Keys, invites, share links, webhooks, rooms (owners, admins, full team keys)."""
        return self.caller.may(Manage.KEYS)

    @property
    def is_owner(self) -> bool:
        return self.caller.may(Manage.TEAM)

    @property
    def can_write(self) -> bool:
        return self.caller.write

    @property
    def role(self) -> str:
        if self.caller.role:
            return self.caller.role
        return "admin" if self.can_manage else "viewer" if not self.can_write else "member"

    @property
    def actor(self) -> str:
        return self.caller.actor


def viewer_for(request: HttpRequest) -> Viewer | None:
    digest = request.session.get(SESSION_KEY_DIGEST)
    if digest and settings.AUTH_MODE in ("apikey", "both"):
        caller = caller_resolve_sync(KeySession(str(digest)))
        team = selectors.team_get(caller.team_id) if caller is not None else None
        if caller is None or team is None:  # revoked since: the session ends with it
            request.session.flush()
            return None
        return Viewer(team=team, caller=caller, teams=[(team, "key")])
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        return None
    chosen = request.session.get(SESSION_TEAM)
    caller = caller_resolve_sync(
        PersonSession(user_id=user.pk, team_id=int(chosen) if chosen else None)
    )
    if caller is None and chosen:  # no longer a member of the chosen team: fall back
        caller = caller_resolve_sync(PersonSession(user_id=user.pk))
    if caller is None:
        return None
    team = selectors.team_get(caller.team_id)
    if team is None:
        return None
    return Viewer(team=team, caller=caller, user=user, teams=selectors.teams_for_user(user.pk))


def team_view(*, requires: Manage | None = None) -> Callable[..., Any]:
    """Require a viewer; with `requires`, one whose capabilities include it (others get
    404, not a hint)."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            viewer = viewer_for(request)
            if viewer is None:
                return redirect(f"{settings.LOGIN_URL}?next={request.path}")
            if requires is not None and not viewer.may(requires):
                raise Http404("not found")
            return view(request, viewer, *args, **kwargs)

        return wrapped

    return decorate
