"""Which browser pages may use /mcp: a request with an Origin header other than the service's
own is refused with 403 before anything else is read (MCP streamable HTTP, "Security":
DNS rebinding lets a page of another site reach a server on this machine)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import validate_host


def origin_allowed(origin: str) -> bool:
    """Whether a request from a page of `origin` may use /mcp: one of the service's own host
    names (ALLOWED_HOSTS; while that is "*", the loopback names only) or an origin listed in
    MCP_ALLOWED_ORIGINS or CSRF_TRUSTED_ORIGINS."""
    given = origin.strip().rstrip("/")
    if given in settings.MCP_ALLOWED_ORIGINS or given in settings.CSRF_TRUSTED_ORIGINS:
        return True
    try:
        parts = urlsplit(given)
        host = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    named = [h for h in settings.ALLOWED_HOSTS if h != "*"]
    if "*" in settings.ALLOWED_HOSTS:
        named += LOOPBACK_HOSTS
    return validate_host(host, named)


LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "::1", "[::1]"]
