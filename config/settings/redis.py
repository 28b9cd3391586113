"""Redis: the hot room state (docs/scaling.md)."""

from __future__ import annotations

from config.env import env_bool, env_float, env_int, env_str

# Empty means "the embedded server": whoever starts the process (serve, tests, bench)
# starts it first and exports its URL here.
REDIS_URL = env_str("REDIS_URL")
# REDIS_URL names a seed node of a Redis Cluster (docs/scaling.md); the embedded Redis is
# one node, the default.
REDIS_CLUSTER = env_bool("REDIS_CLUSTER", False)
# Every key this deployment writes starts with this prefix; tests use their own.
REDIS_KEY_PREFIX = env_str("REDIS_KEY_PREFIX", "rs")
REDIS_MAX_CONNECTIONS = env_int("REDIS_MAX_CONNECTIONS", 64)
# While Redis is away, calls fail within about this long, saying the store is unavailable.
REDIS_CONNECT_TIMEOUT_SECONDS = env_float("REDIS_CONNECT_TIMEOUT_SECONDS", 0.5)
REDIS_SOCKET_TIMEOUT_SECONDS = env_float("REDIS_SOCKET_TIMEOUT_SECONDS", 0.8)
