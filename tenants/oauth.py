"""A person's OAuth connections: what they consented to for one client, and its end.

The tokens are django-oauth-toolkit's rows (kept as SHA-256 checksums); what they may do is
the connection's (tenants.auth turns a token into its `Caller`). One connection per person
and client: consenting again replaces the choices and ends every token issued under the old
ones, so no token outlives the consent it was given under.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from oauth2_provider.models import Application

from rooms import clock
from rooms.errors import DomainError
from tenants.models import AuditEvent, Membership, OAuthConnection, Room
from tenants.purges import oauth_tokens_end
from tenants.services import agent_name_check, audit_record

PATH = "/oauth/mcp"
SCOPE = "mcp"
SCOPE_TEXT = "Use the room's tools as the agent you name"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(scheme: str, host: str) -> str:
    """The service's origin as a client reached it: PUBLIC_URL when set, else the request's
    scheme and Host (as Django builds absolute URLs, so the metadata and the door agree)."""
    return str(settings.PUBLIC_URL) or f"{scheme}://{host}"


def _canonical(uri: object) -> tuple[str, str, int | None, str] | None:
    """A resource indicator compared as RFC 3986 says two URIs are the same: scheme and host
    in any case, the default port written or not, dot segments resolved; no query, user or
    fragment (none names this resource)."""
    if not isinstance(uri, str):
        return None
    parts = urlsplit(uri)
    if parts.username is not None or parts.query or parts.fragment or "#" in uri:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    return parts.scheme.lower(), parts.hostname.lower(), port, posixpath.normpath(parts.path or "/")


def resource_exact(request_uri: str, audiences: list[str]) -> bool:
    """The toolkit's audience check (RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR): the token's
    one audience is this very URL, not a prefix of it."""
    return len(audiences) == 1 and _canonical(audiences[0]) == _canonical(request_uri)


def resources_exact(here: str, asked: list[str]) -> bool:
    """Every `resource` a client asked for names `here` (none asked: here is meant)."""
    return all(resource_exact(here, [value]) for value in asked if value)


class ConnectionRefused(Exception):
    """The person may not connect the client as asked: `field` names the choice at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def connection_save(
    *,
    user: Any,
    application: Any,
    team_id: int,
    room_id: str,
    agent_name: str,
    read_only: bool,
    tools_profile: str | None,
) -> OAuthConnection:
    """The person's consent for `application`, as they chose on the page (a team of theirs,
    one of its rooms by id or "" for all): a new connection, replacing any earlier one,
    whose tokens end and whose live uses (a waiting call) end too, as their credential is
    gone. The agent name follows a key's rule (never a person's name)."""
    membership = Membership.objects.select_related("team").filter(user=user, team_id=team_id)
    found = membership.first()
    if found is None:
        raise ConnectionRefused("team", "You are not a member of that team.")
    team = found.team
    room = Room.objects.filter(team=team, room_id=room_id).first() if room_id else None
    if room_id and room is None:
        raise ConnectionRefused("room", "That room is not one of the team's.")
    if not agent_name:
        raise ConnectionRefused("agent_name", "Name the agent this client acts as.")
    try:
        agent_name_check(agent_name)
    except DomainError as refused:
        raise ConnectionRefused("agent_name", refused.message) from None
    with transaction.atomic():
        OAuthConnection.objects.filter(user=user, application=application).delete()
        oauth_tokens_end(user_id=user.pk, application_id=application.pk)  # none left behind
        connection = OAuthConnection.objects.create(
            user=user,
            application=application,
            team=team,
            room=room,
            agent_name=agent_name,
            read_only=read_only,
            tools_profile=tools_profile or None,
        )
        audit_record(
            team=team,
            actor=f"user:{user.pk}",
            action="oauth.connect",
            object_type="oauth_connection",
            object_id=connection.pk,
            detail={
                "client": application.name,
                "clientId": application.client_id,
                "room": room.room_id if room is not None else "",
                "agent": agent_name,
                "readOnly": read_only,
                "toolsProfile": connection.tools_profile,
            },
        )
    return connection


def connection_revoke(connection: OAuthConnection, *, actor: str = "system") -> None:
    """The person or their team takes the client's access away: the next call is refused."""
    with transaction.atomic():
        audit_record(
            team=connection.team,
            actor=actor,
            action="oauth.revoke",
            object_type="oauth_connection",
            object_id=connection.pk,
            detail={"client": connection.application.name, "person": f"user:{connection.user_id}"},
        )
        connection.delete()  # its tokens with it (tenants.purges)


def connections_of(**where: int) -> QuerySet[OAuthConnection]:
    """A person's (user_id=) or a team's (team_id=) connections, newest first: a page finds
    the one it revokes among these alone, so nobody reaches another's."""
    related = OAuthConnection.objects.select_related("application", "team", "room", "user")
    return related.filter(**where).order_by("-created_at", "-pk")


def connections_listed(**where: int) -> list[tuple[OAuthConnection, str]]:
    """`connections_of`, each with the host of its client_id when that is a URL (a client
    ID metadata document's), which says who runs the client; "" for a registered client's
    random id."""
    listed = []
    for connection in connections_of(**where):
        parts = urlsplit(connection.application.client_id)
        host = (parts.hostname or "") if parts.scheme in ("http", "https") else ""
        listed.append((connection, host))
    return listed


def client_names(connection_ids: Iterable[str]) -> dict[str, str]:
    """The client each connection (by id) was made for, as its oauth.connect audit row
    says: the audit log is kept, so a revoked connection's acts still name their client."""
    rows = AuditEvent.objects.filter(
        action="oauth.connect", object_type="oauth_connection", object_id__in=set(connection_ids)
    ).values_list("object_id", "detail")
    return {object_id: str(detail.get("client", "")) for object_id, detail in rows}


def registration_room() -> bool:
    """Is there room for one more client registered, or named by its metadata document, by
    a request nobody signed? Those no person has connected are deleted after
    OAUTH_REGISTRATION_UNUSED_SECONDS and at most OAUTH_REGISTRATIONS_UNUSED_MAX are kept, so
    however many addresses a flood comes from, the database holds a bounded number of them
    (the per-address limit is the first bound)."""
    sources = (Application.RegistrationSource.DCR, Application.RegistrationSource.CIMD)
    unused = Application.objects.filter(registration_source__in=sources).exclude(
        pk__in=OAuthConnection.objects.values("application_id")
    )
    since = clock.now() - timedelta(seconds=int(settings.OAUTH_REGISTRATION_UNUSED_SECONDS))
    unused.filter(created__lt=since).delete()
    return int(unused.count()) < int(settings.OAUTH_REGISTRATIONS_UNUSED_MAX)
