"""Webhooks: where deliveries may go, how they are retried and given up on, and how often
the relay that feeds them looks again."""

from __future__ import annotations

from config.env import env_bool, env_float, env_int

# Receivers on private, loopback, link-local (cloud metadata) or reserved addresses are
# refused unless this is on (tests and local development receivers).
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env_bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 5)
WEBHOOK_DNS_TIMEOUT_SECONDS = env_float("WEBHOOK_DNS_TIMEOUT_SECONDS", 2.0)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 6)
# After this many failed attempts in a row a webhook's breaker opens: no attempt on it for
# WEBHOOK_BREAKER_SECONDS (a black-holed receiver stops holding workers).
WEBHOOK_BREAKER_FAILURES = env_int("WEBHOOK_BREAKER_FAILURES", 5)
WEBHOOK_BREAKER_SECONDS = env_int("WEBHOOK_BREAKER_SECONDS", 60)
# Deliveries one team may have in flight at once (its slow receivers hold no one else's).
WEBHOOK_TEAM_CONCURRENCY = env_int("WEBHOOK_TEAM_CONCURRENCY", 2)
# Finished delivery records are deleted after this many days.
WEBHOOK_DELIVERY_RETENTION_DAYS = env_int("WEBHOOK_DELIVERY_RETENTION_DAYS", 14)
# A webhook is disabled after this many deliveries in a row failed for good.
WEBHOOK_DISABLE_AFTER = env_int("WEBHOOK_DISABLE_AFTER", 5)
# How often the relay re-reads which rooms have webhooks (it is also told at once).
RELAY_REFRESH_SECONDS = env_int("RELAY_REFRESH_SECONDS", 30)
