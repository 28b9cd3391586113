"""The secret key, the host names this service answers to, and the HTTPS shape (in
production TLS ends at a proxy in front of the web processes)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_str
from config.settings.base import DEBUG, PRODUCTION, VAR_DIR

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when PRODUCTION=1")
    # A local run's own, made on its first start and kept with its data (readable by its
    # owner only): nobody derives this install's sign-in or claim links from the source.
    from config.kept_secret import kept_secret

    SECRET_KEY = kept_secret(VAR_DIR / "secret_key")
elif PRODUCTION and len(SECRET_KEY) < 32:
    # A short one would sign sessions anyone can forge.
    raise ImproperlyConfigured(
        "SECRET_KEY is shorter than 32 characters; make one: "
        "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )
_hosts = env_list("ALLOWED_HOSTS")
if PRODUCTION and (not _hosts or "*" in _hosts):
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS must name the host names this service answers to when PRODUCTION=1 "
        "(e.g. ALLOWED_HOSTS=rooms.example.com); '*' is refused."
    )
ALLOWED_HOSTS = _hosts or ["*"]
# The URL people and agents reach this service at (for links in emails and snippets);
# empty: taken from each request.
PUBLIC_URL = env_str("PUBLIC_URL").rstrip("/")

# SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto:https": the header and value the proxy sets on
# HTTPS requests (the default in production); without it every POST behind HTTPS fails CSRF.
_proxy_ssl = env_str("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto:https" if PRODUCTION else "")
if _proxy_ssl:
    _name, _, _value = _proxy_ssl.partition(":")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _name.strip().upper().replace("-", "_"), _value.strip())
# The origins a form may be posted from (scheme://host[:port]); by default PUBLIC_URL's.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", PUBLIC_URL)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", PRODUCTION and not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
