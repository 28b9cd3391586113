"""How agents get into a room: the Connect page (a team key and the snippets that use it,
and the hook script they download) and invites (one room, one guest agent)."""

from __future__ import annotations

import json
import shlex

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from dashboard import client_setup, forms
from dashboard.viewer import Viewer, team_view
from dashboard.views.common import (
    SNIPPET_PROFILE,
    expiry_from_form,
    found_or_404,
    mcp_url,
    public_url,
    room_of_viewer,
)
from rooms import clock, profiles
from rooms.errors import DomainError
from tenants import oauth, selectors, services
from tenants.capabilities import Manage

HOOK_SCRIPT = settings.BASE_DIR / "hooks" / "roomservice-guard"


def hook_script(request: HttpRequest) -> HttpResponse:
    """The lease and message hook (hooks/roomservice-guard), so the Connect page can say
    `curl -o`: it holds no secret, and its settings come from the environment."""
    return HttpResponse(
        HOOK_SCRIPT.read_bytes(),
        content_type="text/x-shellscript; charset=utf-8",
        headers={"Content-Disposition": 'inline; filename="roomservice-guard"'},
    )


# The agent's name the page's setup commands leave for the person to fill in; the setup
# endpoint refuses it, saying so.
AGENT_PLACEHOLDER = "<AGENT_NAME>"


@require_GET
def setup_script(request: HttpRequest, client: str) -> HttpResponse:
    """`GET /connect/<client>?room=<roomId>[&agent=<name>][&tools=core]`: the sh script that
    writes the client's MCP configuration and hooks into a checkout (dashboard.client_setup).
    It needs no credential and holds no secret; nothing is looked up, so it answers the same
    for a room that exists and one that does not. Odd input (an unknown client too) answers
    a script that prints what to give and fails (client_setup.refusal_script)."""
    chosen = client_setup.client_parse(client)
    try:
        if chosen is None:
            raise client_setup.SetupRequestError(
                client_setup.SETUP_CLIENT_UNKNOWN.format(
                    client=client[:64], clients=", ".join(client_setup.CLIENTS)
                )
            )
        parsed = client_setup.setup_request_parse(
            chosen,
            request.GET.get("room", ""),
            request.GET.get("agent", ""),
            request.GET.get("tools", SNIPPET_PROFILE),
        )
    except client_setup.SetupRequestError as exc:
        script = client_setup.refusal_script(str(exc))
    else:
        base = public_url(request)
        hook_url = base + reverse("api-room-hook", args=[parsed.room_id, "claude-code"])
        hooks = claude_http_hooks(hook_url, parsed.agent, client_setup.ROOT_PLACEHOLDER)
        script = client_setup.setup_script(chosen, parsed, base, hooks)
    return HttpResponse(script, content_type="text/plain; charset=utf-8")


def _setups(base: str, mcp: str, room_id: str) -> list[dict[str, str]]:
    """The Connect page's one command per client, and the client's own one-liner that adds
    the MCP server alone."""
    return [
        {
            "client": client,
            "name": client_setup.CLIENT_NAMES[client],
            "command": "curl -fsS "
            + shlex.quote(
                f"{base}{reverse('connect-setup', args=[client])}"
                f"?room={room_id}&agent={AGENT_PLACEHOLDER}"
            )
            + " | sh",
            "one_liner": client_setup.one_liner(client, mcp),
        }
        for client in client_setup.CLIENTS
    ]


@never_cache  # it may show a secret, once: no cache keeps a copy
@team_view()
def connect(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    """The snippets agents connect with. A key is minted only by the explicit button, and
    the page it lands on shows its secret once: a reload mints nothing and shows it no more
    (POST, then redirect; the secret waits in the session for that one GET)."""
    found = room_of_viewer(viewer, room_id)
    flash = f"connect-secret:{found.room_id}"
    if request.method == "POST" and viewer.may(Manage.KEYS):
        request.session[flash] = services.api_key_create(
            team=viewer.team, name=f"agents of {found.room_id}", actor=viewer.actor
        ).secret
        return redirect("connect", room_id=found.room_id)
    secret = str(request.session.pop(flash, ""))
    base = public_url(request)
    key = secret or "<YOUR_KEY>"
    mcp = mcp_url(request)
    snippets = _snippets(mcp)
    hook_url = base + reverse("api-room-hook", args=[found.room_id, "claude-code"])
    snippets["claude_http"] = claude_http_hooks(hook_url, AGENT_PLACEHOLDER)
    return render(
        request,
        "dashboard/connect.html",
        {
            "viewer": viewer,
            "room": found,
            "mcp_url": mcp,
            "key": key,
            "secret": secret,
            "base": base,
            "snippets": snippets,
            "hook_url": hook_url,
            "setups": _setups(base, mcp, found.room_id),
            "oauth": _oauth_setup(base),
            "profile": SNIPPET_PROFILE,
            "profile_count": len(profiles.TOOLS[SNIPPET_PROFILE]),
            "profiles": [(p, len(profiles.TOOLS[p])) for p in profiles.PROFILES],
            # Only to those who may see the Keys page itself.
            "team_keys": [
                k for k in selectors.keys_of_team(viewer.team.pk) if k.revoked_at is None
            ][:20]
            if viewer.may(Manage.KEYS)
            else [],
        },
    )


def _oauth_setup(base: str) -> dict[str, object]:
    """The OAuth door's URL (docs/oauth.md) and the setups of the clients that take a command
    or a file. The URL names no ?tools=: it is exactly the resource the door's metadata names,
    since Codex refuses to sign in when the two differ, query included (openai/codex#37387);
    the person picks the profile on the consent page instead."""
    url = base + oauth.PATH
    named = client_setup.SERVER_NAME
    return {
        "url": url,
        "claude_code": f"claude mcp add --transport http {named} {shlex.quote(url)}",
        "codex": f"codex mcp add {named} --url {shlex.quote(url)}",
        "vscode": json.dumps({"servers": {named: {"type": "http", "url": url}}}, indent=2),
        "registration": settings.OAUTH_DYNAMIC_REGISTRATION,
    }


def _snippets(mcp_url: str) -> dict[str, str]:
    """Cursor's and VS Code's MCP files. They name the key's environment variable, never the
    key: these files are usually committed (the page says what to export)."""
    named = client_setup.SERVER_NAME
    return {
        "cursor": json.dumps(
            {"mcpServers": {named: client_setup.mcp_entry("cursor", mcp_url)}}, indent=2
        ),
        "vscode": json.dumps(
            {"servers": {named: client_setup.mcp_entry("vscode", mcp_url)}}, indent=2
        ),
    }


# Claude Code's HTTP hooks (docs/hooks.md, "Claude Code over HTTP"), for
# `.claude/settings.local.json`: one person's, one checkout's, not committed. The key comes
# from the environment Claude Code starts in (`headers` and `allowedEnvVars`); the agent's
# name, not a secret, is written in, so the checkout acts as that agent with nothing else set.
HOOK_EDIT_TOOLS = "Edit|Write|MultiEdit|NotebookEdit"
HOOK_TIMEOUT_SECONDS = 10
HOOK_ENV = ["ROOMSERVICE_KEY"]


def claude_http_hooks(url: str, agent: str = "", root: str = "") -> str:
    """The hooks for the room's hooks endpoint, acting as `agent` (none: the key's own), with
    paths taken from the checkout's top `root` (percent-encoded; none: the session's cwd).
    SessionStart runs only command hooks in Claude Code, so there curl posts the same JSON
    and prints the answer."""
    headers = {"Authorization": "Bearer $ROOMSERVICE_KEY"}
    if agent:
        headers["X-Roomservice-Agent"] = agent
    if root:
        headers["X-Roomservice-Root"] = root
    http = {
        "type": "http",
        "url": url,
        "headers": headers,
        "allowedEnvVars": HOOK_ENV,
        "timeout": HOOK_TIMEOUT_SECONDS,
    }
    # The command's headers: the key from the environment, the rest as data, never code.
    fixed = "".join(
        f" -H {shlex.quote(f'{name}: {value}')}"
        for name, value in headers.items()
        if name != "Authorization"
    )
    curl = {
        "type": "command",
        "command": (
            "curl -fsS --max-time 8 -H 'Content-Type: application/json' "
            f'-H "Authorization: Bearer $ROOMSERVICE_KEY"{fixed} '
            f"--data-binary @- '{url}' || true"
        ),
        "timeout": HOOK_TIMEOUT_SECONDS,
    }
    return json.dumps(
        {
            "hooks": {
                "PreToolUse": [{"matcher": HOOK_EDIT_TOOLS, "hooks": [http]}],
                "PostToolUse": [{"matcher": HOOK_EDIT_TOOLS, "hooks": [http]}],
                "SessionStart": [{"hooks": [curl]}],
                "Stop": [{"hooks": [http]}],
                "SessionEnd": [{"hooks": [http]}],
            }
        },
        indent=2,
    )


@never_cache  # it may show a secret, once: no cache keeps a copy
@team_view(requires=Manage.INVITES)
def invites(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    form = forms.InviteForm(request.POST or None)
    flash = f"invite-secret:{found.room_id}"
    if request.method == "POST" and form.is_valid():
        try:
            minted = services.invite_create(
                room=found,
                label=form.cleaned_data["label"],
                expires_at=expiry_from_form(form.cleaned_data["expires_in"]),
                agent_name=form.cleaned_data["agent_name"],
                read_only=form.cleaned_data["read_only"],
                tools_profile=form.cleaned_data["tools_profile"],
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
            url = mcp_url(request, invite.tools_profile)
            guest = {
                "invite": invite,
                "secret": shown[1],
                "mcp_url": url,
                "snippets": _snippets(url),
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
    found = room_of_viewer(viewer, room_id)
    invite = found_or_404(selectors.access_invite_by_id, found, invite_id)
    services.invite_revoke(invite=invite, actor=viewer.actor)
    return redirect("invites", room_id=found.room_id)
