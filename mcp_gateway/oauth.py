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

import hashlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from oauth2_provider.oauth2_backends import OAuthLibCore
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from tenants import people
from tenants.auth import Bearer
from tenants.backends import client_address
from tenants.oauth import PATH, SCOPE, origin_of, registration_room, resource_exact

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
    if proxy is not None:
        name = proxy[0].removeprefix("HTTP_").replace("_", "-").lower()
        scheme = "https" if headers.get(name) == proxy[1] else "http"
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
        for value in [v for v in asked if v]:
            if not resource_exact(here, [value]):
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
        request.code = code and code_digest(code)
        try:
            super()._check_and_set_request_resource(request)
        finally:
            request.code = code

    # Authorization codes are kept as their SHA-256, as tokens are (the toolkit keeps them
    # plain for their minute): each step that finds one is handed the digest.

    def _create_authorization_code(self, request: Any, code: Any, expires: Any = None) -> Any:
        kept = {**code, "code": code_digest(code["code"])}
        return super()._create_authorization_code(request, kept, expires)

    def validate_code(self, client_id: str, code: str, *args: Any, **kwargs: Any) -> bool:
        return bool(super().validate_code(client_id, code_digest(code), *args, **kwargs))

    def confirm_redirect_uri(self, client_id: str, code: str, *args: Any, **kwargs: Any) -> bool:
        return bool(super().confirm_redirect_uri(client_id, code_digest(code), *args, **kwargs))

    def invalidate_authorization_code(
        self, client_id: str, code: str, *args: Any, **kwargs: Any
    ) -> None:
        super().invalidate_authorization_code(client_id, code_digest(code), *args, **kwargs)

    def get_code_challenge(self, code: str, request: Any) -> Any:
        return super().get_code_challenge(code_digest(code), request)

    def get_code_challenge_method(self, code: str, request: Any) -> Any:
        return super().get_code_challenge_method(code_digest(code), request)

    def get_authorization_code_scopes(self, client_id: str, code: str, *args: Any) -> Any:
        return super().get_authorization_code_scopes(client_id, code_digest(code), *args)

    def get_authorization_code_nonce(self, client_id: str, code: str, *args: Any) -> Any:
        return super().get_authorization_code_nonce(client_id, code_digest(code), *args)


def code_digest(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


class RegistrationAdmitted:
    """Dynamic client registration (OAUTH_DYNAMIC_REGISTRATION): open to anyone, as the
    clients that use it are not signed in, but only for what the door serves, a public client
    of the authorization code grant (the toolkit would also register confidential clients, its
    default when token_endpoint_auth_method is left out, and the password, client credentials,
    implicit and device grants), at most OAUTH_REGISTRATIONS_PER_ADDRESS_PER_HOUR from one
    address, and never more unused ones than tenants.oauth.registration_room keeps, so a flood
    cannot fill the database. The toolkit answers any refusal 401."""

    def has_permission(self, request: HttpRequest) -> bool:
        try:
            metadata = json.loads(request.body)
        except ValueError:
            metadata = None  # the toolkit answers invalid_client_metadata
        if isinstance(metadata, dict):
            grants = metadata.get("grant_types", ["authorization_code"])
            if metadata.get("token_endpoint_auth_method") != "none" or not (
                isinstance(grants, list)
                and all(g in ("authorization_code", "refresh_token") for g in grants)
            ):
                return False
        address = client_address(request)
        if not people.client_registration_allowed(address=address) or not registration_room():
            return False
        people.client_registration_record(address=address)
        return True


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
