"""Access: who may reach a room and how much each caller may use: rate limits, streams,
waiting calls, static keys, request bodies, the browser origins /mcp answers, hook leases."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_int_or_none, env_list, env_str

# The protocol's rule: the first team to touch an unknown room id owns it. Off: rooms are
# created only through the API or the dashboard, and an unknown id answers exactly like
# another team's room (no existence oracle, no squatting; docs/protocol.md "Tenancy and access").
ROOM_CLAIM_ON_FIRST_TOUCH = env_bool("ROOM_CLAIM_ON_FIRST_TOUCH", True)
# Tool calls a minute per team (and per invite), sliding window; 0 turns limiting off.
RATE_LIMIT_PER_MINUTE = env_int("RATE_LIMIT_PER_MINUTE", 600)
RATE_LIMIT_INVITE_PER_MINUTE = env_int("RATE_LIMIT_INVITE_PER_MINUTE", 600)
# A team's guests (invites and share links) together: calls a minute, streams, waiting
# calls. Each guest keeps its own budget too; none counts against the team's own. Unset
# (None): the larger of the team's own and one guest's (RATE_LIMIT_PER_MINUTE and
# RATE_LIMIT_INVITE_PER_MINUTE, ...), read when used; calls, unset, have no ceiling when
# the team's own limit is off.
RATE_LIMIT_GUESTS_PER_MINUTE = env_int_or_none("RATE_LIMIT_GUESTS_PER_MINUTE")
SSE_STREAMS_GUESTS_PER_TEAM = env_int_or_none("SSE_STREAMS_GUESTS_PER_TEAM")
WAITERS_GUESTS_PER_TEAM = env_int_or_none("WAITERS_GUESTS_PER_TEAM")
# The limiter's Redis (default: REDIS_URL). When it fails, requests go through (fail open).
RATE_LIMIT_REDIS_URL = env_str("RATE_LIMIT_REDIS_URL")
# Server-sent event streams a team may hold open at once in each web process (what a
# stream holds is that process's: tenants.budgets); a guest (an invite, a share link) has
# its own, smaller budget that never counts against its team's.
SSE_STREAMS_PER_TEAM = env_int("SSE_STREAMS_PER_TEAM", 20)
SSE_STREAMS_PER_GUEST = env_int("SSE_STREAMS_PER_GUEST", 2)
# The keep-alive period: a stream's comment line, a long REST wait's newline.
SSE_KEEPALIVE_SECONDS = env_int("SSE_KEEPALIVE_SECONDS", 15)
# How often every open stream and waiting call re-checks its credential against the
# database. Revocations reach them at once through Redis, and every reconnection of that
# subscription re-checks them all: this bounds only a signal lost some other way.
CREDENTIAL_RECHECK_SECONDS = env_int("CREDENTIAL_RECHECK_SECONDS", 300)
# After this long a stream ends and the client reconnects (and is checked again).
SSE_MAX_LIFETIME_SECONDS = env_int("SSE_MAX_LIFETIME_SECONDS", 900)
# wait_for_events calls waiting at once, per team and per guest, in each web process.
WAITERS_PER_TEAM = env_int("WAITERS_PER_TEAM", 1000)
WAITERS_PER_GUEST = env_int("WAITERS_PER_GUEST", 5)
# Static team keys, "team:secret,team2:secret2" (docs/protocol.md "Tenancy and access").
API_KEYS = env_str("API_KEYS")
# The largest request body /mcp reads before answering 413.
MCP_MAX_BODY_BYTES = env_int("MCP_MAX_BODY_BYTES", 1_000_000)
# The largest body any other route reads (the REST and hook doors, the dashboard's forms)
# before answering 413; a room import has ROOM_IMPORT_BYTES_MAX (config.body_limit).
REQUEST_BODY_BYTES_MAX = env_int("REQUEST_BODY_BYTES_MAX", 1_000_000)
# Browser origins /mcp answers besides the service's own host names (ALLOWED_HOSTS, or the
# loopback names while that is "*") and CSRF_TRUSTED_ORIGINS: a request with any other
# Origin header is refused with 403 (MCP's guard against DNS rebinding). Comma-separated
# scheme://host[:port], e.g. a browser-based MCP client's.
MCP_ALLOWED_ORIGINS = [o.rstrip("/") for o in env_list("MCP_ALLOWED_ORIGINS")]
# How long a client may keep a tools/list (and server/discover) answer before asking again
# (MCP 2026-07-28 ttlMs); the list changes only when the service is upgraded.
MCP_LIST_TTL_SECONDS = env_int("MCP_LIST_TTL_SECONDS", 3600)
# How long a lease the hooks endpoint makes after an edit lasts (docs/hooks.md, "Claude Code
# over HTTP"); the next edit of the file renews it. Within lease_claim's 10-3600 s.
HOOK_LEASE_SECONDS = env_int("HOOK_LEASE_SECONDS", 900)
if not 10 <= HOOK_LEASE_SECONDS <= 3600:
    raise ImproperlyConfigured("HOOK_LEASE_SECONDS must be between 10 and 3600")
