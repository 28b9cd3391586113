"""Every atomic step's script, by name (docs/protocol.md "Atomicity": every mutation is
one step). The Lua itself is in rooms/lua/<domain>/<step>.lua, one file a step with its
KEYS/ARGV header, assembled once at start by rooms/lua (its libraries first, placeholders
filled from FILL); the wrappers (keyed, guarded, turned) are rooms/lua/wrap/*.lua.

Scripts never build a key name for the room's own data (rooms/keys.py does, and every key
arrives in KEYS), and they refresh the idle TTL of every key they write, so a room that is
only ever written to still expires. Lua's cjson turns an empty array into `{}` on the way
back out; the few array fields a script re-encodes are put right with `fix_arrays`, and
payloads the agents wrote are never decoded there at all (they are stored verbatim and
spliced in as strings).
"""

from rooms import lua

# Replaced by the store when a script is registered: PUBLISH on one Redis, SPUBLISH (the
# room's own slot) on a cluster.
WAKE_VERB = "__WAKE_VERB__"


# The search index's bounds (rooms/search.py tokenizes queries the same way).
SEARCH_STOPWORDS = (
    "a an and are as at be but by for from has have in into is it its of on or that the "
    "their then there these this to was were will with"
)
SEARCH_FIELD_BYTES = 4096  # of each field, indexed and returned for snippets
SEARCH_DOC_TERMS = 64  # distinct words indexed per task, context entry or event
SEARCH_EVENT_POSTINGS = 512  # events kept per word: its newest
# What one word of the events' index takes in Redis besides its postings (its hash field and
# its vocabulary member), counted against ROOM_EVENT_BYTES_MAX with the events.
SEARCH_WORD_BYTES = 160
# What the Lua's placeholders stand for (lib/search.lua; WAKE_VERB is the store's).
FILL = {
    "__SEARCH_STOPWORDS__": SEARCH_STOPWORDS,
    "__SEARCH_FIELD_BYTES__": str(SEARCH_FIELD_BYTES),
    "__SEARCH_DOC_TERMS__": str(SEARCH_DOC_TERMS),
    "__SEARCH_EVENT_POSTINGS__": str(SEARCH_EVENT_POSTINGS),
    "__SEARCH_WORD_BYTES__": str(SEARCH_WORD_BYTES),
}


ACCESS_ROOM_SCRIPT = lua.assemble("room/access_room", FILL)

ADD_TASK_SCRIPT = lua.assemble("plan/add_task", FILL)

CREATE_PLAN_SCRIPT = lua.assemble("plan/create_plan", FILL)


UPDATE_TASK_SCRIPT = lua.assemble("plan/update_task", FILL)

CLAIM_TASK_SCRIPT = lua.assemble("plan/claim_task", FILL)

RELEASE_TASK_SCRIPT = lua.assemble("plan/release_task", FILL)

EXPIRE_CLAIMS_SCRIPT = lua.assemble("plan/expire_claims", FILL)

READ_PLAN_SCRIPT = lua.assemble("plan/read_plan", FILL)


TASK_HINTS_SCRIPT = lua.assemble("plan/task_hints", FILL)

WRITE_CONTEXT_SCRIPT = lua.assemble("context/write_context", FILL)

UPDATE_CONTEXT_SCRIPT = lua.assemble("context/update_context", FILL)

CONTEXT_HISTORY_SCRIPT = lua.assemble("context/context_history", FILL)

CONTEXT_HINTS_SCRIPT = lua.assemble("context/context_hints", FILL)

POST_EVENT_SCRIPT = lua.assemble("events/post_event", FILL)


READ_UNREAD_SCRIPT = lua.assemble("events/read_unread", FILL)

READ_UNREAD_MANY_SCRIPT = lua.assemble("events/read_unread_many", FILL)


MARK_EVENT_READ_SCRIPT = lua.assemble("events/mark_event_read", FILL)

HEARTBEAT_SCRIPT = lua.assemble("presence/heartbeat", FILL)

ACQUIRE_LOCK_SCRIPT = lua.assemble("locks/acquire_lock", FILL)

RELEASE_LOCK_SCRIPT = lua.assemble("locks/release_lock", FILL)

SET_SHARED_VAR_SCRIPT = lua.assemble("vars/set_shared_var", FILL)

SLIDING_WINDOW_SCRIPT = lua.assemble("budgets/sliding_window", FILL)

BUDGET_STEP_SCRIPT = lua.assemble("budgets/budget_step", FILL)

ADMIT_SLOT_SCRIPT = lua.assemble("budgets/admit_slot", FILL)

FILL_BEARER_SCRIPT = lua.assemble("bearers/fill_bearer", FILL)

FORGET_BEARER_SCRIPT = lua.assemble("bearers/forget_bearer", FILL)

CONTEXT_GET_SCRIPT = lua.assemble("context/context_get", FILL)

CONTEXT_ALL_SCRIPT = lua.assemble("context/context_all", FILL)

# --- roomd's other tools ---------------------------------------------------------------

LEAVE_ROOM_SCRIPT = lua.assemble("room/leave_room", FILL)

ROOM_INFO_SCRIPT = lua.assemble("room/room_info", FILL)

ADD_DEPENDENCY_SCRIPT = lua.assemble("plan/add_dependency", FILL)

DELETE_TASK_SCRIPT = lua.assemble("plan/delete_task", FILL)

DELETE_CONTEXT_SCRIPT = lua.assemble("context/delete_context", FILL)

DELETE_EVENT_SCRIPT = lua.assemble("events/delete_event", FILL)

REQUEST_REVIEW_SCRIPT = lua.assemble("reviews/request_review", FILL)

SUBMIT_TASK_SCRIPT = lua.assemble("reviews/submit_task", FILL)

SET_ROOM_MODE_SCRIPT = lua.assemble("room/set_room_mode", FILL)

RESOLVE_REVIEW_SCRIPT = lua.assemble("reviews/resolve_review", FILL)


ROOM_ANALYTICS_SCRIPT = lua.assemble("room/room_analytics", FILL)

# --- Keyed writes (idempotencyKey) ------------------------------------------------------

KEYED_WRAP = lua.assemble("wrap/keyed", FILL)

# What __WROTE__ is for each kind of answer.
WROTE_ONE = "type(__res) == 'table' and __res[1] == 1"  # {1, ...} changed the room
WROTE_ALWAYS = "true"  # every answer is a write (heartbeat; release_lock answers either way)
WROTE_UNLESS_QUOTA = "type(__res) == 'table' and __res[1] ~= -1"  # acquire_lock
WROTE_MARK = "__res == 1"  # mark_event_read: 1 recorded


def keyed(source: str, wrote: str, *, tail: int = 0) -> str:
    """`source` (a write script) as one keyed step; `tail`: arguments after the keyed ones
    (a turn step's, TURN_WRAP)."""
    return (
        KEYED_WRAP.replace("__WRITE__", source)
        .replace("__WROTE__", wrote)
        .replace("__TAIL__", str(tail))
    )


SEARCH_REINDEX_SCRIPT = lua.assemble("search/search_reindex", FILL)


SEARCH_SCRIPT = lua.assemble("search/search", FILL)


# --- Leases (rooms/paths.py says what a path and a glob are) -----------------------------


LEASE_CLAIM_SCRIPT = lua.assemble("leases/lease_claim", FILL)

LEASE_CHANGE_SCRIPT = lua.assemble("leases/lease_change", FILL)

LEASES_VIEW_SCRIPT = lua.assemble("leases/leases_view", FILL)


NOTE_READ_SCRIPT = lua.assemble("leases/note_read", FILL)

DRIFT_SCRIPT = lua.assemble("leases/drift", FILL)


CONTEXT_READERS_SCRIPT = lua.assemble("context/context_readers", FILL)


# --- Messages (rooms/services/messages.py) -----------------------------------------------


SEND_MESSAGE_SCRIPT = lua.assemble("messages/send_message", FILL)

INBOX_SCRIPT = lua.assemble("messages/inbox", FILL)

ACK_MESSAGE_SCRIPT = lua.assemble("messages/ack_message", FILL)

SENT_MESSAGES_SCRIPT = lua.assemble("messages/sent_messages", FILL)


# --- Handoffs (rooms/services/handoffs.py) ------------------------------------------------

HANDOFF_OFFER_SCRIPT = lua.assemble("handoffs/handoff_offer", FILL)

HANDOFF_RESOLVE_SCRIPT = lua.assemble("handoffs/handoff_resolve", FILL)


# --- Lifecycle (rooms/services/lifecycle.py) ---------------------------------------------

SET_ROOM_STATUS_SCRIPT = lua.assemble("room/set_room_status", FILL)


STATUS_EVENT_SCRIPT = lua.assemble("room/status_event", FILL)


# --- Archives (rooms/snapshots.py; tenants/archives.py moves rooms to and from Postgres) ---

GUARD_WRAP = lua.assemble("wrap/guard", FILL)


def guarded(source: str) -> str:
    """`source` (a write step, keyed or not) refused on a room that is no longer live."""
    return GUARD_WRAP.replace("__WRITE__", source)


FREEZE_ROOM_SCRIPT = lua.assemble("archives/freeze_room", FILL)

OWNER_CACHE_SCRIPT = lua.assemble("archives/owner_cache", FILL)

THAW_ROOM_SCRIPT = lua.assemble("archives/thaw_room", FILL)

COPY_ROOM_SCRIPT = lua.assemble("archives/copy_room", FILL)

RANGE_CHUNK_SCRIPT = lua.assemble("archives/range_chunk", FILL)

LOAD_ROOM_SCRIPT = lua.assemble("archives/load_room", FILL)


TURN_WRAP = lua.assemble("wrap/turn", FILL)


def turned(source: str, wrote: str) -> str:
    """`source` (a post's write step) taken only in the poster's turn (rooms.turns)."""
    return TURN_WRAP.replace("__WRITE__", source).replace("__WROTE__", wrote)


INHERITED_REPLACE_SCRIPT = lua.assemble("room/inherited_replace", FILL)

BUDGET_STEP_GUEST_SCRIPT = lua.assemble("budgets/budget_step_guest", FILL)
ADMIT_SLOTS_SCRIPT = lua.assemble("budgets/admit_slots", FILL)
RELEASE_MARK_SCRIPT = lua.assemble("imports/release_mark", FILL)
