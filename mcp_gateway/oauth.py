"""The OAuth door's rules (/oauth/mcp): which URL a token is for, the challenge that sends a
client to the metadata, and what django-oauth-toolkit must refuse beyond its defaults.

Two doors, one room: /mcp stays what header clients know (no OAuth advertised anywhere at the
root: Claude Code, VS Code and JetBrains switch to OAuth when they find any), and /oauth/mcp
serves the same tools to OAuth access tokens only. The authorization server's issuer has a
path (`<origin>/oauth`), so its RFC 8414 metadata lives at the path-inserted location, and the
resource's RFC 9728 metadata names /oauth/mcp exactly. Every token is bound to that exact URL
(RFC 8707): a `resource` naming anything else is `invalid_target`, and a token whose audience
is not this URL is refused at the door (the toolkit's own check is a prefix match)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher
from oauth2_provider.oauth2_backends import OAuthLibCore
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from tenants import people
from tenants.auth import Bearer
from tenants.backends import client_address
from tenants.credentials import secret_digest
from tenants.oauth import PATH, SCOPE, origin_of, registration_room, resources_exact

METADATA_PATH = "/.well-known/oauth-protected-resource" + PATH
UNAUTHORIZED = (
    "This door takes OAuth access tokens for it alone: follow WWW-Authenticate's "
    "resource_metadata to sign in (a team key or invite goes to /mcp)."
)


def scope_origin(scope: Mapping[str, Any]) -> str:
    """`origin_of` for an ASGI request (the door runs before Django)."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    scheme = str(scope.get("scheme") or "http")
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    said = headers.get(proxy[0].removeprefix("HTTP_").replace("_", "-").lower()) if proxy else None
    if proxy and said is not None:  # as Django reads it: the first value; absent, the socket's
        scheme = "https" if said.split(",", 1)[0].strip() == proxy[1] else "http"
    return origin_of(scheme, headers.get("host") or "localhost")


def door_url(scope: Mapping[str, Any]) -> str:
    """The URL this request reached /oauth/mcp at: what its token must be for."""
    return scope_origin(scope) + PATH


def refusal(scope: Mapping[str, Any], presented: Bearer) -> tuple[str, bytes]:
    """The door's 401: what to do, and the WWW-Authenticate (RFC 9728 §5.1, RFC 6750 §3)
    that says where the metadata is, the scope to ask for, and `invalid_token` when a token
    was sent but is not one for here."""
    value = f'Bearer resource_metadata="{scope_origin(scope)}{METADATA_PATH}", scope="{SCOPE}"'
    if presented.secret:
        value += ', error="invalid_token"'
    return UNAUTHORIZED, value.encode("latin-1")


class Backend(OAuthLibCore):  # type: ignore[misc]
    """The toolkit's request adapter, handing oauthlib absolute URIs: the validator binds a
    token to the /oauth/mcp of the origin the request reached."""

    def _get_escaped_full_path(self, request: HttpRequest) -> str:
        return request.build_absolute_uri(super()._get_escaped_full_path(request))


class Validator(OAuth2Validator):  # type: ignore[misc]
    """The toolkit's validator, binding every token to /oauth/mcp's exact URL: a `resource`
    that names anything else is `invalid_target`, and one left out is this URL (a token for
    nothing in particular would be a token for everything). Codes are bound by the consent
    page (dashboard.views.oauth), the only place one is made, and kept as digests."""

    def _bound(self, request: Any) -> None:
        parts = urlsplit(request.uri)
        here = origin_of(parts.scheme, parts.netloc) + PATH
        asked = request.resource if isinstance(request.resource, list) else [request.resource]
        if not resources_exact(here, asked):
            raise errors.CustomOAuth2Error(
                error="invalid_target",
                description=f"This server's only resource is {here}.",
                request=request,
            )
        request.resource = [here]

    def _check_and_set_request_resource(self, request: Any) -> None:
        body = [v for k, v in (getattr(request, "decoded_body", None) or []) if k == "resource"]
        request.resource = body or getattr(request, "resource", None) or []
        self._bound(request)
        code = request.code
        request.code = code and secret_digest(code)
        try:
            super()._check_and_set_request_resource(request)
        finally:
            request.code = code

    # Authorization codes are kept as their SHA-256, as tokens are (the toolkit keeps them
    # plain for their minute): each step that finds one is handed the digest.

    def _create_authorization_code(self, request: Any, code: Any, expires: Any = None) -> Any:
        kept = {**code, "code": secret_digest(code["code"])}
        return super()._create_authorization_code(request, kept, expires)

    def validate_code(self, client_id: str, code: str, *args: Any, **kwargs: Any) -> bool:
        return bool(super().validate_code(client_id, secret_digest(code), *args, **kwargs))

    def confirm_redirect_uri(self, client_id: str, code: str, *args: Any, **kwargs: Any) -> bool:
        return bool(super().confirm_redirect_uri(client_id, secret_digest(code), *args, **kwargs))

    def invalidate_authorization_code(
        self, client_id: str, code: str, *args: Any, **kwargs: Any
    ) -> None:
        super().invalidate_authorization_code(client_id, secret_digest(code), *args, **kwargs)

    def get_code_challenge(self, code: str, request: Any) -> Any:
        return super().get_code_challenge(secret_digest(code), request)

    def get_code_challenge_method(self, code: str, request: Any) -> Any:
        return super().get_code_challenge_method(secret_digest(code), request)

    def get_authorization_code_scopes(self, client_id: str, code: str, *args: Any) -> Any:
        return super().get_authorization_code_scopes(client_id, secret_digest(code), *args)

    def get_authorization_code_nonce(self, client_id: str, code: str, *args: Any) -> Any:
        return super().get_authorization_code_nonce(client_id, secret_digest(code), *args)


def redirect_safe(uri: object) -> bool:
    """Where a client may have its codes sent: https, or plain http to this machine's own
    loopback (a desktop or command-line client); a code sent over plain http elsewhere
    could be read on the way."""
    if not isinstance(uri, str):
        return False
    parts = urlsplit(uri)
    loopback = parts.hostname in ("127.0.0.1", "::1", "localhost")
    return parts.scheme == "https" or (parts.scheme == "http" and loopback)


def _room_for_a_client(address: str) -> bool:
    """At most OAUTH_REGISTRATIONS_PER_ADDRESS_PER_HOUR new clients from one address, and
    never more unused ones than tenants.oauth.registration_room keeps: a request nobody
    signed must not be a way to fill the database."""
    if not people.client_registration_allowed(address=address) or not registration_room():
        return False
    people.client_registration_record(address=address)
    return True


class RegistrationAdmitted:
    """Dynamic client registration (OAUTH_DYNAMIC_REGISTRATION): open to anyone, as the
    clients that use it are not signed in, but only for what the door serves, a public client
    of the authorization code grant with safe redirect URIs (the toolkit would also register
    confidential clients, its default when token_endpoint_auth_method is left out, and the
    password, client credentials, implicit and device grants), within `_room_for_a_client`.
    The toolkit answers any refusal 401."""

    def has_permission(self, request: HttpRequest) -> bool:
        try:
            metadata = json.loads(request.body)
        except ValueError:
            metadata = None  # the toolkit answers invalid_client_metadata
        except RecursionError:
            return False  # nested past what a parse may take: the toolkit's would fail too
        if isinstance(metadata, dict):
            grants = metadata.get("grant_types", ["authorization_code"])
            redirects = metadata.get("redirect_uris")
            if (
                metadata.get("token_endpoint_auth_method") != "none"
                or not isinstance(grants, list)
                or not all(g in ("authorization_code", "refresh_token") for g in grants)
                or not isinstance(redirects, list)
                or not all(redirect_safe(uri) for uri in redirects)
            ):
                return False
        return _room_for_a_client(client_address(request))


class MetadataAdmitted:
    """Client ID metadata documents: any https URL may name a client (the point of them),
    but a new one is fetched and kept within `_room_for_a_client`."""

    def has_permission(self, request: Any, client_id: str) -> bool:
        return _room_for_a_client(str(request.headers.get("REMOTE_ADDR") or "unknown"))


class MetadataFetcher(SafeMetadataFetcher):  # type: ignore[misc]
    """The toolkit's fetch (SSRF-hardened: public addresses only), then this door's rules: a
    document whose redirect URIs are not `redirect_safe` is refused, and one that offers
    "none" among its token endpoint methods is a public client (ChatGPT's document names
    private_key_jwt first: django-oauth-toolkit#1857)."""

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        metadata, max_age = super().fetch(client_id)
        if not all(redirect_safe(uri) for uri in metadata.get("redirect_uris") or []):
            raise CIMDError("redirect_uris must be https, or http to a loopback address")
        if "none" in (metadata.get("token_endpoint_auth_methods_supported") or []):
            metadata = {**metadata, "token_endpoint_auth_method": "none"}
        return metadata, max_age


def registration_unmanaged(request: HttpRequest, client_id: str) -> JsonResponse:
    """RFC 7592's reading and changing of a registration is not offered (the toolkit's view
    would let a client change itself into a confidential or client-credentials one, past
    RegistrationAdmitted): the address a registration's answer names says so."""
    return JsonResponse(
        {
            "error": "invalid_request",
            "error_description": "A registration cannot be read or changed here; register anew.",
        },
        status=404,
    )


def nul_refused(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The toolkit's endpoints look every parameter up in the database as given, and
    Postgres refuses a NUL in text (a 500): a request holding one is told so instead."""

    @functools.wraps(view)
    def refusing(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        raw = b"\x00" in request.body  # read first: the form below is parsed from it
        if raw or any("\x00" in v for v in [*request.GET.values(), *request.POST.values()]):
            return JsonResponse(
                {
                    "error": "invalid_request",
                    "error_description": "A parameter holds a NUL character; send it without.",
                },
                status=400,
            )
        return view(request, *args, **kwargs)

    return refusing
