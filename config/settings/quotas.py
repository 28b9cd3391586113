"""Quotas: what one tenant may make the shared store hold, and what one server process
holds open for everyone.

Each is enforced in the same atomic step as the write it limits. Logs and histories are
trimmed oldest first (the newest write always lands); everything else is refused with a
tool error (429 on REST) that names the quota and the current use (rooms/quotas.py).
"""

from __future__ import annotations

from config.env import env_int

ROOM_EVENT_CAP = env_int("ROOM_EVENT_CAP", 100_000)  # events kept per room
ROOM_EVENT_BYTES_MAX = env_int("ROOM_EVENT_BYTES_MAX", 16 * 1024 * 1024)  # their bytes
ROOM_TASKS_MAX = env_int("ROOM_TASKS_MAX", 2_000)
TASK_NOTES_KEPT = env_int("TASK_NOTES_KEPT", 20)  # the newest notes kept on a task
ROOM_CONTEXT_MAX = env_int("ROOM_CONTEXT_MAX", 500)
CONTEXT_VERSIONS_KEPT = env_int("CONTEXT_VERSIONS_KEPT", 50)  # superseded versions per entry
EVENT_READS_MAX = env_int("EVENT_READS_MAX", 200)  # read receipts per event
ROOM_VARS_MAX = env_int("ROOM_VARS_MAX", 500)
ROOM_LOCKS_MAX = env_int("ROOM_LOCKS_MAX", 500)  # locks held at once
ROOM_LEASES_MAX = env_int("ROOM_LEASES_MAX", 500)  # live file leases
ROOM_FILE_READS_MAX = env_int("ROOM_FILE_READS_MAX", 5_000)  # (agent, file) hashes noted
ROOM_HANDOFFS_MAX = env_int("ROOM_HANDOFFS_MAX", 500)  # handoffs kept (resolved ones go)
ROOM_MESSAGES_MAX = env_int("ROOM_MESSAGES_MAX", 1_000)  # messages kept (the oldest go)
ROOM_DELIVERIES_MAX = env_int("ROOM_DELIVERIES_MAX", 20_000)  # their deliveries, all told
ROOM_MESSAGE_AGENTS_MAX = env_int("ROOM_MESSAGE_AGENTS_MAX", 6_000)  # agents with counts
ROOM_MESSAGE_BYTES_MAX = env_int("ROOM_MESSAGE_BYTES_MAX", 4 * 1024 * 1024)  # their JSON
CONTEXT_READERS_KEPT = env_int("CONTEXT_READERS_KEPT", 100)  # readers remembered per entry
ROOM_REVIEWS_MAX = env_int("ROOM_REVIEWS_MAX", 1_000)  # reviews, pending and resolved
# idempotencyKey records a room keeps, and their bytes; past either the oldest is forgotten
# first (a retry of a forgotten key runs again). A key is kept for the window at most.
ROOM_IDEMPOTENCY_KEYS_MAX = env_int("ROOM_IDEMPOTENCY_KEYS_MAX", 1_000)
ROOM_IDEMPOTENCY_BYTES_MAX = env_int("ROOM_IDEMPOTENCY_BYTES_MAX", 8 * 1024 * 1024)
IDEMPOTENCY_WINDOW_SECONDS = env_int("IDEMPOTENCY_WINDOW_SECONDS", 24 * 3600)
ROOM_AGENTS_MAX = env_int("ROOM_AGENTS_MAX", 1_000)  # presence (the stalest is forgotten)
# A heartbeat answers with this many agents, the most recently seen, and the total.
HEARTBEAT_PRESENCE_MAX = env_int("HEARTBEAT_PRESENCE_MAX", 100)
ROOM_CURSORS_MAX = env_int("ROOM_CURSORS_MAX", 5_000)  # agents reading the log
TEAM_ROOMS_MAX = env_int("TEAM_ROOMS_MAX", 200)  # a team's own room_cap overrides it
TEAM_KEYS_MAX = env_int("TEAM_KEYS_MAX", 200)  # live keys
ROOM_INVITES_MAX = env_int("ROOM_INVITES_MAX", 100)  # live invites and share links
ROOM_WEBHOOKS_MAX = env_int("ROOM_WEBHOOKS_MAX", 5)
TEAM_WEBHOOKS_MAX = env_int("TEAM_WEBHOOKS_MAX", 50)
# Open streams and waiting calls one server process holds, whoever they belong to.
PROCESS_STREAMS_MAX = env_int("PROCESS_STREAMS_MAX", 2_000)
PROCESS_WAITERS_MAX = env_int("PROCESS_WAITERS_MAX", 5_000)
# Kept for other teams: once a process holds all but this share (percent, rounded down) of
# its streams, or of its waiters, the rest go only to teams that hold fewer than
# PROCESS_RESERVED_PER_TEAM of them there (its guests included), so no team, with any
# number of guests, takes the last ones from another team.
PROCESS_RESERVE_PERCENT = env_int("PROCESS_RESERVE_PERCENT", 10)
PROCESS_RESERVED_PER_TEAM = env_int("PROCESS_RESERVED_PER_TEAM", 2)
