"""The operators' pages. Function views, thin: resolve the viewer, call one service or
selector, render. Every room, key, invite and share link is fetched through a scoped
selector, so another team's URL is a 404."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import authenticate, login, logout, update_session_auth_hash
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from dashboard import actions, forms
from dashboard.viewer import SESSION_KEY_DIGEST, SESSION_TEAM, Viewer, team_view, viewer_for
from rooms import clock, store
from rooms import selectors as room_selectors
from rooms.errors import DomainError, TaskNotFoundError
from rooms.eventwords import WORDS as EVENT_TYPES
from rooms.eventwords import event_words
from rooms.records import event_id_after, is_event_id
from rooms.refs import RoomRef
from rooms.report import room_report
from rooms.results import Event, RoomSnapshot
from tenants import access, acting, archives, firstrun, people, selectors, services, webhooks
from tenants import errors as tenant_errors
from tenants.auth import KeySession, ShareToken, caller_resolve_sync
from tenants.backends import client_address
from tenants.calls import tool_run
from tenants.capabilities import Caller, Manage
from tenants.credentials import secret_digest
from tenants.models import Membership, Room


def public_url(request: HttpRequest) -> str:
    return str(settings.PUBLIC_URL or request.build_absolute_uri("/").rstrip("/"))


def _room(viewer: Viewer, room_id: str) -> Room:
    try:
        return access.room_for_caller(viewer.caller, room_id)
    except DomainError:
        raise Http404("not found") from None


def _ref(caller: Caller, room: Room) -> RoomRef:
    return store.run_sync(access.room_access, caller, room.room_id, write=False)


def _expiry(seconds: str | None) -> Any:
    return clock.now() + timedelta(seconds=int(seconds)) if seconds else None


# --- Landing and accounts ---------------------------------------------------------------------


LOGIN_THROTTLED = (
    "Too many failed attempts for this account from your address. Try again in {seconds} s."
)
SIGNUPS_THROTTLED = "Too many new accounts from your address this hour. Try again later."


HOOK_SCRIPT = settings.BASE_DIR / "hooks" / "roomservice-guard"


def hook_script(request: HttpRequest) -> HttpResponse:
    """The lease and message hook (hooks/roomservice-guard), so the Connect page can say
    `curl -o`: it holds no secret, and its settings come from the environment."""
    return HttpResponse(
        HOOK_SCRIPT.read_bytes(),
        content_type="text/x-shellscript; charset=utf-8",
        headers={"Content-Disposition": 'inline; filename="roomservice-guard"'},
    )


def landing(request: HttpRequest) -> HttpResponse:
    if viewer_for(request) is not None:
        return redirect("rooms")
    return render(request, "dashboard/landing.html", {"auth_mode": settings.AUTH_MODE})


def signup(request: HttpRequest) -> HttpResponse:
    if settings.AUTH_MODE == "apikey":
        raise Http404("sign-up is off")
    form = forms.SignupForm(request.POST or None)
    address = client_address(request)
    if request.method == "POST" and not people.signup_allowed(address=address):
        form.add_error(None, SIGNUPS_THROTTLED)
    elif request.method == "POST" and form.is_valid():
        people.signup_record(address=address)
        user = people.user_signup(
            email=form.cleaned_data["email"], password=form.cleaned_data["password"]
        )
        login(request, user, backend="tenants.backends.ThrottledModelBackend")
        nxt = request.GET.get("next", "")
        return redirect(nxt if nxt.startswith("/join/") else "rooms")
    return render(request, "dashboard/signup.html", {"form": form})


def login_view(request: HttpRequest) -> HttpResponse:
    mode = settings.AUTH_MODE
    form = forms.LoginForm(request.POST or None) if mode != "apikey" else None
    key_form = forms.KeyLoginForm(request.POST or None) if mode in ("apikey", "both") else None
    error = ""
    if request.method == "POST":
        address = client_address(request)
        if "key" in request.POST and key_form is not None and key_form.is_valid():
            wait = people.login_wait(account="apikey", address=address)
            if wait:
                error = LOGIN_THROTTLED.format(seconds=wait)
            else:
                digest = secret_digest(key_form.cleaned_data["key"].strip())
                if caller_resolve_sync(KeySession(digest)) is not None:
                    request.session.cycle_key()
                    request.session[SESSION_KEY_DIGEST] = digest
                    return redirect("rooms")
                people.login_failure_record(account="apikey", address=address)
                error = "That is not a live team key."
        elif form is not None and form.is_valid():
            email = form.cleaned_data["email"].strip().lower()
            user = authenticate(request, username=email, password=form.cleaned_data["password"])
            if user is not None:
                login(request, user)
                nxt = request.GET.get("next", "")
                return redirect(
                    nxt if nxt.startswith("/") and not nxt.startswith("//") else "rooms"
                )
            wait = getattr(request, "login_wait", 0)
            error = LOGIN_THROTTLED.format(seconds=wait) if wait else "Wrong email or password."
    return render(
        request,
        "dashboard/login.html",
        {"form": form, "key_form": key_form, "error": error, "auth_mode": mode},
    )


SIGN_IN_USED = (
    "This sign-in link was used already or has expired. Restart `make run` for a new one "
    "(it is printed in the banner)."
)


@never_cache
def sign_in_once(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """The first run's one-time link (tenants.firstrun): the local operator, signed in to
    the demo team, lands on the demo room."""
    if settings.PRODUCTION:
        raise Http404("not found")
    user = firstrun.first_run_user(uidb64, token)
    if user is None:
        return HttpResponse(SIGN_IN_USED, status=400, content_type="text/plain")
    login(request, user, backend=settings.AUTHENTICATION_BACKENDS[0])
    landing = firstrun.first_run_landing(user)
    if landing is None:
        return redirect("rooms")
    request.session[SESSION_TEAM] = landing[0].pk
    return redirect("room", room_id=landing[1])


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    logout(request)
    request.session.flush()
    return redirect("landing")


@team_view()
def account(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    if viewer.user is None:
        raise Http404("no account: this session entered with a team key")
    password_form = forms.PasswordChangeForm(request.POST if "new" in request.POST else None)
    delete_form = forms.DeleteAccountForm(request.POST if "confirm" in request.POST else None)
    message = ""
    if request.method == "POST" and "new" in request.POST and password_form.is_valid():
        if not viewer.user.check_password(password_form.cleaned_data["current"]):
            password_form.add_error("current", "That is not your current password.")
        else:
            from django.contrib.auth.password_validation import validate_password
            from django.core.exceptions import ValidationError

            try:
                validate_password(password_form.cleaned_data["new"], viewer.user)
            except ValidationError as exc:
                password_form.add_error("new", exc)
            else:
                viewer.user.set_password(password_form.cleaned_data["new"])
                viewer.user.save(update_fields=["password"])
                update_session_auth_hash(request, viewer.user)
                message = "Password changed."
    if request.method == "POST" and "confirm" in request.POST and delete_form.is_valid():
        try:
            people.user_delete(user=viewer.user)
        except DomainError as exc:
            delete_form.add_error(None, exc.message)
        else:
            logout(request)
            return redirect("landing")
    return render(
        request,
        "dashboard/account.html",
        {
            "viewer": viewer,
            "password_form": password_form,
            "delete_form": delete_form,
            "message": message,
        },
    )


# --- Teams ------------------------------------------------------------------------------------


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
    membership = _membership(viewer, membership_id)
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
    membership = _membership(viewer, membership_id)
    try:
        services.membership_remove(membership=membership, actor=viewer.actor)
    except DomainError as exc:
        return _team_page(request, viewer, error=exc)
    return redirect("team")


def _membership(viewer: Viewer, membership_id: int) -> Membership:
    try:
        found: Membership = selectors.access_membership_by_id(viewer.team, membership_id)
    except tenant_errors.NotFoundError:
        raise Http404("not found") from None
    return found


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
        request, "dashboard/join.html", {"invite": invite, "signed_in": user.is_authenticated}
    )


# --- Rooms ------------------------------------------------------------------------------------


async def _room_cards(caller: Caller, rooms: list[Room]) -> list[dict[str, Any]]:
    return [
        {
            "room": room,
            **await room_selectors.room_overview(
                await access.room_access(caller, room.room_id, write=False)
            ),
        }
        for room in rooms
    ]


@team_view()
def rooms(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    form = forms.RoomForm(request.POST or None)
    if request.method == "POST":
        if not viewer.may(Manage.ROOMS):
            raise Http404("not found")
        if form.is_valid():
            try:
                room = services.room_create(
                    team=viewer.team,
                    room_id=form.cleaned_data["room_id"] or None,
                    name=form.cleaned_data["name"],
                    actor=viewer.actor,
                    project=form.cleaned_data["project"].strip(),
                )
            except DomainError as exc:
                form.add_error("room_id", exc.message)
            else:
                return redirect("room", room_id=room.room_id)
    listed = list(selectors.rooms_of_team(viewer.team.pk))
    cards = store.run_sync(_room_cards, viewer.caller, listed)
    return render(
        request,
        "dashboard/rooms.html",
        {"viewer": viewer, "cards": cards, "form": form, "now": clock.now()},
    )


def _context_view(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for entry in entries:
        entry["payload_json"] = json.dumps(entry["payload"], indent=2, ensure_ascii=False)
    return entries


STATUS_LABELS = (
    ("pending", "Pending"),
    ("in_progress", "In progress"),
    ("blocked", "Blocked"),
    ("done", "Done"),
)


def _feed(events: list[Any], titles: dict[str, str]) -> list[dict[str, Any]]:
    """Events as the feed shows them: each in words (rooms.eventwords), with its thread."""
    rows: list[dict[str, Any]] = [dict(e) for e in events]
    by_id = {e["id"]: e for e in rows}
    for event in rows:
        parent = event.get("reply_to_id")
        event["parent"] = by_id.get(parent) if parent else None
        event["words"] = event_words(cast(Event, event), titles)
    return rows


def _live_context(snapshot: RoomSnapshot) -> dict[str, Any]:
    tasks = snapshot["plan"]["tasks"]
    titles = {t["id"]: t["title"] for t in tasks}
    columns = [
        (status, label, [t for t in tasks if t["status"] == status])
        for status, label in STATUS_LABELS
    ]
    return {
        "snapshot": snapshot,
        "columns": columns,
        "titles": titles,
        "events": _feed(snapshot["events"], titles),
        "context": _context_view([dict(e) for e in snapshot["context"]]),
    }


def _acting(viewer: Viewer, found: Room) -> dict[str, Any]:
    """What the page lets this person do: act at all (a writer, in an active room), act for
    agents (tenants.acting), and under which name."""
    return {
        "can_act": viewer.can_write and found.status == "active",
        "acts_for_agents": acting.acting_for_allowed(viewer.caller, viewer.team),
        "me": acting.person_agent(viewer.caller, viewer.user),
    }


def _live(viewer: Viewer, found: Room) -> dict[str, Any]:
    live = store.run_sync(room_selectors.room_live, _ref(viewer.caller, found))
    titles = {t["id"]: t["title"] for t in live["snapshot"]["plan"]["tasks"]}
    agents = [
        {**a, "last": {**a["last"], "words": event_words(a["last"], titles)} if a["last"] else None}
        for a in live["agents"]
    ]
    return {
        **_live_context(live["snapshot"]),
        "agents": agents,
        "waiting": live["waiting"],
        **_acting(viewer, found),
    }


@team_view()
def room(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = _room(viewer, room_id)
    return render(
        request,
        "dashboard/room.html",
        {
            "viewer": viewer,
            "room": found,
            "live_url": "live",
            "stream_url": f"/api/v1/rooms/{found.room_id}/events/stream",
            "archive": selectors.room_archive_info(found),
            "room_tab": "live",
            **_live(viewer, found),
        },
    )


ROOM_STATUSES = ("active", "paused", "completed", "archived")


@team_view(requires=Manage.ROOMS)
def room_export(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    """The room as one signed JSON document, live or archived (the API's export)."""
    found = _room(viewer, room_id)
    response = HttpResponse(archives.room_export(found.room_id), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{found.room_id}.room.json"'
    return response


@require_POST
@team_view(requires=Manage.ROOMS)
def room_status(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    """Pause, complete or reopen the room: the set_room_status tool, as this person (the
    same checks, the same event, the same audit row as an agent's call)."""
    found = _room(viewer, room_id)
    status = request.POST.get("status", "")
    if status not in ROOM_STATUSES:
        return HttpResponse(
            f"status must be one of {', '.join(ROOM_STATUSES)}",
            status=400,
            content_type="text/plain",
        )
    try:
        store.run_sync(
            tool_run,
            viewer.caller,
            "set_room_status",
            {"roomId": found.room_id, "status": status, "agentId": viewer.actor[:128]},
        )
    except DomainError as exc:  # a budget, a store outage: said, never a 500
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain")
    return redirect("room", room_id=found.room_id)


@team_view()
def room_live(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = _room(viewer, room_id)
    return render(
        request,
        "dashboard/_live.html",
        {"viewer": viewer, "room": found, "oob": True, **_live(viewer, found)},
    )


def _back(request: HttpRequest, found: Room) -> str:
    """Where an action returns to: the page it was posted from, within this room."""
    back = request.POST.get("next", "")
    base = f"/rooms/{found.room_id}/"
    return back if back.startswith(base) and "//" not in back[1:] else base


@require_POST
@team_view()
def room_act(request: HttpRequest, viewer: Viewer, room_id: str, action: str) -> HttpResponse:
    """A person acts in the room (dashboard.actions): the outcome, or what was wrong, is
    shown on the page it came from. A credential that may not write is refused by the
    tool's own access check, like an agent's."""
    found = _room(viewer, room_id)
    actor = actions.Actor(caller=viewer.caller, user=viewer.user, team=viewer.team, room=found)
    form = {k: v for k, v in request.POST.items() if isinstance(v, str)}
    try:
        messages.success(request, actions.person_act(actor, action, form))
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect(_back(request, found))


@team_view()
def task_detail(request: HttpRequest, viewer: Viewer, room_id: str, task_id: str) -> HttpResponse:
    """One task opened: description, notes, history, leases, evidence, related context and
    events, and what a person can do with it."""
    found = _room(viewer, room_id)
    try:
        detail = store.run_sync(
            room_selectors.task_detail, _ref(viewer.caller, found), task_id=task_id
        )
    except TaskNotFoundError:
        raise Http404("not found") from None
    plan_titles = {t["id"]: t["title"] for t in detail["dependents"]}
    plan_titles[detail["task"]["id"]] = detail["task"]["title"]
    offered = [h for h in detail["handoffs"] if h["status"] == "offered"]
    return render(
        request,
        "dashboard/task.html",
        {
            "viewer": viewer,
            "room": found,
            "room_tab": "live",
            "t": detail["task"],
            "detail": detail,
            "offered": offered,
            "events": _feed(detail["events"], plan_titles),
            "statuses": STATUS_LABELS,
            **_acting(viewer, found),
        },
    )


EVENTS_PER_PAGE = 50


@team_view()
def room_events(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    """The whole log, page by page (older), filtered by agent and type, or searched (the
    search tool)."""
    found = _room(viewer, room_id)
    agent = request.GET.get("agent", "").strip()[:128] or None
    kind = request.GET.get("type", "").strip()[:64] or None
    before = request.GET.get("before", "").strip()[:64] or None
    q = request.GET.get("q", "").strip()[:200]
    ref = _ref(viewer.caller, found)
    hits: list[Any] = []
    error = ""
    if q:
        try:
            hits = store.run_sync(
                tool_run, viewer.caller, "search", {"roomId": found.room_id, "q": q, "limit": 50}
            )["hits"]
        except DomainError as exc:
            error = exc.message
        for hit in hits:  # an event hit opens the page that starts with it
            if hit["kind"] == "event" and is_event_id(hit["id"]):
                hit["page_before"] = event_id_after(hit["id"])
    page = store.run_sync(
        room_selectors.event_page,
        ref,
        before=before,
        limit=EVENTS_PER_PAGE,
        agent=agent,
        type_=kind,
    )
    plan = store.run_sync(room_selectors.plan_get, ref)
    titles = {t["id"]: t["title"] for t in plan["tasks"]}
    query = {k: v for k, v in (("agent", agent), ("type", kind)) if v}
    return render(
        request,
        "dashboard/events.html",
        {
            "viewer": viewer,
            "room": found,
            "room_tab": "events",
            "events": _feed(page["events"], titles),
            "older": page["older"],
            "scanned": page["scanned"],
            "agent": agent or "",
            "type": kind or "",
            "q": q,
            "hits": hits,
            "error": error,
            "filtered": bool(query),
            "query": query,
            "before": before,
            "titles": titles,
            "event_types": sorted(EVENT_TYPES),
            "per_page": EVENTS_PER_PAGE,
        },
    )


@team_view()
def context_entry(
    request: HttpRequest, viewer: Viewer, room_id: str, entry_id: str
) -> HttpResponse:
    found = _room(viewer, room_id)
    try:
        history = store.run_sync(
            room_selectors.context_history, _ref(viewer.caller, found), entry_id=entry_id
        )
    except DomainError:
        raise Http404("not found") from None
    return render(
        request,
        "dashboard/context.html",
        {
            "viewer": viewer,
            "room": found,
            "history": _context_view([dict(e) for e in reversed(history)]),
            "current": history[-1],
            **_acting(viewer, found),
        },
    )


@never_cache  # it may show a secret, once: no cache keeps a copy
@team_view()
def connect(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    """The snippets agents connect with. A key is minted only by the explicit button, and
    the page it lands on shows its secret once: a reload mints nothing and shows it no more
    (POST, then redirect; the secret waits in the session for that one GET)."""
    found = _room(viewer, room_id)
    flash = f"connect-secret:{found.room_id}"
    if request.method == "POST" and viewer.may(Manage.KEYS):
        request.session[flash] = services.api_key_create(
            team=viewer.team, name=f"agents of {found.room_id}", actor=viewer.actor
        ).secret
        return redirect("connect", room_id=found.room_id)
    secret = str(request.session.pop(flash, ""))
    base = public_url(request)
    key = secret or "<YOUR_KEY>"
    mcp_url = f"{base}/mcp"
    snippets = _snippets(mcp_url, key)
    return render(
        request,
        "dashboard/connect.html",
        {
            "viewer": viewer,
            "room": found,
            "mcp_url": mcp_url,
            "key": key,
            "secret": secret,
            "base": base,
            "snippets": snippets,
            # Only to those who may see the Keys page itself.
            "team_keys": [
                k for k in selectors.keys_of_team(viewer.team.pk) if k.revoked_at is None
            ][:20]
            if viewer.may(Manage.KEYS)
            else [],
        },
    )


def _snippets(mcp_url: str, key: str) -> dict[str, str]:
    return {
        "cursor": json.dumps(
            {
                "mcpServers": {
                    "roomservice": {"url": mcp_url, "headers": {"Authorization": f"Bearer {key}"}}
                }
            },
            indent=2,
        ),
        "vscode": json.dumps(
            {
                "servers": {
                    "roomservice": {
                        "type": "http",
                        "url": mcp_url,
                        "headers": {"Authorization": f"Bearer {key}"},
                    }
                }
            },
            indent=2,
        ),
    }


def _report(caller: Caller, found: Room) -> str:
    async def build() -> str:
        return await room_report(await access.room_access(caller, found.room_id, write=False))

    return store.run_sync(build)


@team_view()
def report(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = _room(viewer, room_id)
    return render(
        request,
        "dashboard/report.html",
        {"viewer": viewer, "room": found, "markdown": _report(viewer.caller, found)},
    )


@team_view()
def report_download(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = _room(viewer, room_id)
    response = HttpResponse(
        _report(viewer.caller, found), content_type="text/markdown; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{found.room_id}-report.md"'
    return response


# --- Keys, invites, share links ------------------------------------------------------------------


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
            "form": form,
            "minted": minted,
        },
    )


@team_view(requires=Manage.KEYS)
def key_revoke(request: HttpRequest, viewer: Viewer, key_id: int) -> HttpResponse:
    try:
        key = selectors.access_key_by_id(viewer.caller, key_id)
    except tenant_errors.NotFoundError:
        raise Http404("not found") from None
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


@never_cache  # it may show a secret, once: no cache keeps a copy
@team_view(requires=Manage.INVITES)
def invites(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = _room(viewer, room_id)
    form = forms.InviteForm(request.POST or None)
    flash = f"invite-secret:{found.room_id}"
    if request.method == "POST" and form.is_valid():
        try:
            minted = services.invite_create(
                room=found,
                label=form.cleaned_data["label"],
                expires_at=_expiry(form.cleaned_data["expires_in"]),
                agent_name=form.cleaned_data["agent_name"],
                read_only=form.cleaned_data["read_only"],
                actor=viewer.actor,
                created_by=viewer.user,
            )
        except DomainError as exc:  # a quota, a person's name: said on the form
            form.add_error(None, exc.message)
        else:
            # Shown once, on the page the redirect lands on: a reload makes no second one.
            request.session[flash] = [minted.invite.pk, minted.secret]
            return redirect("invites", room_id=found.room_id)
    shown = request.session.pop(flash, None)
    guest = None
    if shown:
        invite = next((i for i in selectors.invites_for_room(found) if i.pk == shown[0]), None)
        if invite is not None:
            mcp_url = f"{public_url(request)}/mcp"
            guest = {
                "invite": invite,
                "secret": shown[1],
                "mcp_url": mcp_url,
                "snippets": _snippets(mcp_url, shown[1]),
            }
    return render(
        request,
        "dashboard/invites.html",
        {
            "viewer": viewer,
            "room": found,
            "invites": selectors.invites_for_room(found),
            "form": form,
            "guest": guest,
            "now": clock.now(),
        },
    )


@require_POST
@team_view(requires=Manage.INVITES)
def invite_revoke(
    request: HttpRequest, viewer: Viewer, room_id: str, invite_id: int
) -> HttpResponse:
    found = _room(viewer, room_id)
    try:
        invite = selectors.access_invite_by_id(found, invite_id)
    except tenant_errors.NotFoundError:
        raise Http404("not found") from None
    services.invite_revoke(invite=invite, actor=viewer.actor)
    return redirect("invites", room_id=found.room_id)


@never_cache  # it may show a secret, once: no cache keeps a copy
@team_view(requires=Manage.INVITES)
def shares(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = _room(viewer, room_id)
    form = forms.ShareForm(request.POST or None)
    minted = None
    if request.method == "POST" and form.is_valid():
        minted = people.share_link_create(
            room=found,
            label=form.cleaned_data["label"],
            expires_at=_expiry(form.cleaned_data["expires_in"]),
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
    found = _room(viewer, room_id)
    try:
        link = selectors.access_share_link_by_id(found, link_id)
    except tenant_errors.NotFoundError:
        raise Http404("not found") from None
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
    snapshot = store.run_sync(room_selectors.room_snapshot, _ref(caller, found))
    response = render(
        request,
        "dashboard/shared.html",
        {"room": found, "live_url": "live", **_live_context(snapshot)},
    )
    response["Referrer-Policy"] = "no-referrer"
    response["X-Robots-Tag"] = "noindex"
    return response


def shared_room_live(request: HttpRequest, token: str) -> HttpResponse:
    found, caller = _share(token)
    snapshot = store.run_sync(room_selectors.room_snapshot, _ref(caller, found))
    return render(
        request,
        "dashboard/_live.html",
        {"room": found, "oob": True, "shared": True, **_live_context(snapshot)},
    )


# --- Audit ------------------------------------------------------------------------------------


@team_view(requires=Manage.TEAM)
def audit(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    rows = selectors.audit_of_team(viewer.team.pk)[:500]
    return render(request, "dashboard/audit.html", {"viewer": viewer, "rows": rows})


# --- Webhooks ---------------------------------------------------------------------------------


@never_cache  # it may show a secret, once: no cache keeps a copy
@team_view(requires=Manage.WEBHOOKS)
def room_webhooks(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = _room(viewer, room_id)
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
    found = _room(viewer, room_id)
    try:
        hook = selectors.access_webhook_by_id(found, webhook_id)
    except tenant_errors.NotFoundError:
        raise Http404("not found") from None
    webhooks.webhook_disable(hook=hook, reason="disabled in the dashboard", actor=viewer.actor)
    return redirect("webhooks", room_id=found.room_id)
