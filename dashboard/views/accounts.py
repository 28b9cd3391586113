"""Landing and accounts: the landing page, sign-up, sign-in (a password or a team key,
throttled), the first run's one-time link, sign-out, the account page and the person's
disconnecting of an OAuth client."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import authenticate, login, logout, update_session_auth_hash
from django.http import Http404, HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from dashboard import forms
from dashboard.viewer import SESSION_KEY_DIGEST, SESSION_TEAM, Viewer, team_view, viewer_for
from rooms.errors import DomainError
from tenants import firstrun, oauth, people
from tenants.auth import KeySession, caller_resolve_sync
from tenants.backends import client_address
from tenants.credentials import secret_digest

LOGIN_THROTTLED = (
    "Too many failed attempts for this account from your address. Try again in {seconds} s."
)
SIGNUPS_THROTTLED = "Too many new accounts from your address this hour. Try again later."
# Headers a proxy or tunnel adds: a request that carries one came from elsewhere, whatever
# address the proxy connected from.
FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def landing(request: HttpRequest) -> HttpResponse:
    if viewer_for(request) is not None:
        return redirect("rooms")
    return render(
        request,
        "dashboard/landing.html",
        {
            "auth_mode": settings.AUTH_MODE,
            "signup": settings.SIGNUP,
            "demo_unclaimed": demo_unclaimed_here(request),
        },
    )


def demo_unclaimed_here(request: HttpRequest) -> bool:
    """Whether to tell this visitor that the demo team is still to be had, and only through
    the banner's links: on a fresh local run, from this machine. The page cannot offer the
    claim itself: its token is the console's proof of who started the service."""
    return request_local(request) and firstrun.demo_team_unclaimed() is not None


def request_local(request: HttpRequest) -> bool:
    """Whether the request looks sent from this machine (firstrun.looks_local): its peer
    address, the host name it was sent to, and whether a proxy says it forwarded it."""
    host, _ = split_domain_port(str(request.META.get("HTTP_HOST") or ""))
    return firstrun.looks_local(
        peer=str(request.META.get("REMOTE_ADDR") or ""),
        host=host,
        forwarded=any(request.META.get(header) for header in FORWARDING_HEADERS),
    )


def signup(request: HttpRequest) -> HttpResponse:
    """A new account, as SIGNUP allows (open, invite-only, closed); the POST is refused
    like the page says. On a fresh local run, from this machine, opened with the banner's
    link (?claim= and the demo team's claim token, which only the console has), the page
    offers the demo team the banner printed (checked by default: that is the team the
    newcomer's agents already use); without the right token, anywhere else, and once a
    person has it, it is not offered and a posted claim is ignored."""
    if settings.AUTH_MODE == "apikey":
        raise Http404("sign-up is off")
    nxt = request.GET.get("next", "")
    invite = people.member_invite_find(nxt[len("/join/") :]) if nxt.startswith("/join/") else None
    refused = people.signup_refusal(invite=invite)
    claim = request.GET.get("claim", "")
    claimable = bool(claim) and request_local(request) and firstrun.demo_claim_valid(claim)
    demo = firstrun.demo_team_unclaimed() if claimable else None
    form = forms.SignupForm(
        None if refused else request.POST or None,
        initial={"email": invite.email} if invite else None,
        offer_demo=demo is not None and invite is None,
    )
    address = client_address(request)
    if request.method == "POST" and refused:
        return render(
            request, "dashboard/signup.html", {"form": None, "refused": refused}, status=403
        )
    if request.method == "POST" and not people.signup_allowed(address=address):
        form.add_error(None, SIGNUPS_THROTTLED)
    elif request.method == "POST" and form.is_valid():
        people.signup_record(address=address)
        try:
            user = people.user_signup(
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password"],
                invite=invite,
                claim_token=claim if demo and form.cleaned_data.get("claim_demo") else "",
            )
        except DomainError as exc:  # the invitation was used meanwhile
            form.add_error(None, exc.message)
        else:
            login(request, user, backend="tenants.backends.ThrottledModelBackend")
            if invite is not None:
                request.session[SESSION_TEAM] = invite.team_id
                return redirect("rooms")
            landing = firstrun.first_run_landing(user)
            if landing is not None:
                request.session[SESSION_TEAM] = landing[0].pk
                return redirect("room", room_id=landing[1])
            return redirect("rooms")
    return render(
        request,
        "dashboard/signup.html",
        {
            "form": None if refused else form,
            "refused": refused,
            "invite": invite,
            "demo": demo if invite is None else None,
            "claim_refused": bool(claim) and demo is None and invite is None,
            "demo_unclaimed": not claim and invite is None and demo_unclaimed_here(request),
        },
    )


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
        {
            "form": form,
            "key_form": key_form,
            "error": error,
            "auth_mode": mode,
            "signup": settings.SIGNUP,
        },
    )


@never_cache
def sign_in_once(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """A one-time link printed on the console (tenants.firstrun: the banner, signin_link,
    create_admin): its account, signed in; one in the demo team lands on the demo room."""
    user = firstrun.sign_in_user(uidb64, token)
    if user is None:  # 400, as for a forged link: the two cannot be told apart
        days = settings.PASSWORD_RESET_TIMEOUT // 86400
        return render(request, "dashboard/signin_used.html", {"days": days}, status=400)
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
    has_password = viewer.user.has_usable_password()
    password_form = forms.PasswordChangeForm(
        request.POST if "new" in request.POST else None, has_password=has_password
    )
    delete_form = forms.DeleteAccountForm(request.POST if "confirm" in request.POST else None)
    message = ""
    if request.method == "POST" and "new" in request.POST and password_form.is_valid():
        if has_password and not viewer.user.check_password(password_form.cleaned_data["current"]):
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
                message = "Password changed." if has_password else "Password set."
                has_password = True
                password_form = forms.PasswordChangeForm(has_password=True)
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
            "has_password": has_password,
            "connections": oauth.connections_listed(user_id=viewer.user.pk),
        },
    )


@require_POST
@team_view()
def connection_disconnect(request: HttpRequest, viewer: Viewer, connection_id: int) -> HttpResponse:
    """The person ends the access they gave a client: their own connections alone (any
    other is 404, nothing revoked); the client's next call is refused."""
    if viewer.user is None:
        raise Http404("no account: this session entered with a team key")
    mine = oauth.connections_of(user_id=viewer.user.pk)
    oauth.connection_revoke(get_object_or_404(mine, pk=connection_id), actor=viewer.actor)
    return redirect("account")
