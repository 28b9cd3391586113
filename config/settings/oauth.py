"""The OAuth door (/oauth/mcp): django-oauth-toolkit is the authorization server, its issuer
`<origin>/oauth`, for the clients that cannot paste a key (docs/oauth.md). Authorization code
with S256 PKCE only, public clients, short access tokens, rotating refresh tokens, tokens
kept only as their SHA-256, the `iss` response parameter, revocation; each token bound to
the exact URL of /oauth/mcp (mcp_gateway.oauth)."""

from __future__ import annotations

from config.env import env_bool, env_int
from config.settings.security import PUBLIC_URL

# RFC 7591 registration for the clients that know no client ID metadata documents (older
# ones, Copilot CLI): off unless set, and bounded when on.
OAUTH_DYNAMIC_REGISTRATION = env_bool("OAUTH_DYNAMIC_REGISTRATION", False)
OAUTH_REGISTRATIONS_PER_ADDRESS_PER_HOUR = env_int("OAUTH_REGISTRATIONS_PER_ADDRESS_PER_HOUR", 10)
# Registered clients no person has connected: deleted after this long, and never more kept.
OAUTH_REGISTRATION_UNUSED_SECONDS = env_int("OAUTH_REGISTRATION_UNUSED_SECONDS", 3600)
OAUTH_REGISTRATIONS_UNUSED_MAX = env_int("OAUTH_REGISTRATIONS_UNUSED_MAX", 1000)
OAUTH_ACCESS_TOKEN_SECONDS = env_int("OAUTH_ACCESS_TOKEN_SECONDS", 900)
# Idle lifetime of a refresh token: a client that has not refreshed for this long signs in
# again.
OAUTH_REFRESH_TOKEN_SECONDS = env_int("OAUTH_REFRESH_TOKEN_SECONDS", 30 * 24 * 3600)

OAUTH2_PROVIDER = {
    "OAUTH2_SERVER_CLASS": "oauthlib.oauth2.WebApplicationServer",
    "OAUTH2_VALIDATOR_CLASS": "mcp_gateway.oauth.Validator",
    "OAUTH2_BACKEND_CLASS": "mcp_gateway.oauth.Backend",
    "SCOPES": {"mcp": "Use the room's tools as the agent you name"},  # tenants.oauth.SCOPE_TEXT
    "DEFAULT_SCOPES": ["mcp"],
    "PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": OAUTH_REFRESH_TOKEN_SECONDS,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    **{
        f"COMPLIANT_BCP_RFC9700_{gate}": True
        for gate in (
            "IMPLICIT_GRANT",
            "PASSWORD_GRANT",
            "PKCE_METHOD",
            "PKCE_REQUIRED",
            "ACCESS_TOKEN_TRANSPORT",
            "AUTHZ_RESPONSE_ISS",
            "TOKEN_STORAGE",
            "REFRESH_TOKEN",
            "REDIRECT_URI_MATCHING",
        )
    },
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none"],
    # With PUBLIC_URL the issuer and the resource are fixed; without it each is the
    # request's origin (the address the client used).
    "OIDC_ISS_ENDPOINT": f"{PUBLIC_URL}/oauth" if PUBLIC_URL else "",
    "OAUTH2_PROTECTED_RESOURCE_IDENTIFIER": f"{PUBLIC_URL}/oauth/mcp" if PUBLIC_URL else "",
    "RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR": "tenants.oauth.resource_exact",
    "CIMD_ENABLED": True,
    "CIMD_REGISTRATION_PERMISSION_CLASSES": ("mcp_gateway.oauth.MetadataAdmitted",),
    "CIMD_METADATA_FETCHER": "mcp_gateway.oauth.MetadataFetcher",
    "DCR_ENABLED": OAUTH_DYNAMIC_REGISTRATION,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("mcp_gateway.oauth.RegistrationAdmitted",),
}
# Named here because a foreign key to a swappable model reads it (tenants.OAuthConnection).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
