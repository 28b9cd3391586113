"""Who is looking at a dashboard page: a signed-in person with their teams, or a session
entered with a team key. Every view scopes by this and nothing else."""

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
from tenants.auth import Caller, caller_for_team_key_digest
from tenants.models import Team

MANAGERS = ("owner", "admin")
SESSION_TEAM = "team"
SESSION_KEY_DIGEST = "apikey_digest"


@dataclass
class Viewer:
    team: Team
    role: str
    caller: Caller
    user: User | None = None
    teams: list[tuple[Team, str]] = field(default_factory=list)

    @property
    def can_manage(self) -> bool:
        return self.role in MANAGERS

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"

    @property
    def actor(self) -> str:
        return f"user:{self.user.pk}" if self.user is not None else self.caller.actor


def viewer_for(request: HttpRequest) -> Viewer | None:
    digest = request.session.get(SESSION_KEY_DIGEST)
    if digest and settings.AUTH_MODE in ("apikey", "both"):
        caller = caller_for_team_key_digest(str(digest))
        if caller is None:  # revoked since: the session ends with it
            request.session.flush()
            return None
        team = selectors.team_get(caller.team_id)
        if team is None:
            from tenants.services import team_for_slug

            team = team_for_slug(caller.team_id)
        return Viewer(team=team, role="admin", caller=caller, teams=[(team, "admin")])
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        return None
    teams = selectors.teams_for_user(user.pk)
    if not teams:
        return None
    chosen = request.session.get(SESSION_TEAM)
    team, role = next(((t, r) for t, r in teams if t.slug == chosen), teams[0])
    caller = Caller(team_id=team.slug, kind="user", credential_id=str(user.pk))
    return Viewer(team=team, role=role, caller=caller, user=user, teams=teams)


def team_view(*, manage: bool = False, owner: bool = False) -> Callable[..., Any]:
    """Require a viewer; `manage`/`owner` narrow it by role (others get 404, not a hint)."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            viewer = viewer_for(request)
            if viewer is None:
                return redirect(f"{settings.LOGIN_URL}?next={request.path}")
            if (manage and not viewer.can_manage) or (owner and not viewer.is_owner):
                raise Http404("not found")
            return view(request, viewer, *args, **kwargs)

        return wrapped

    return decorate
