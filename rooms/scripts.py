"""Every atomic step's script, by name (docs/protocol.md "Atomicity": every mutation is
one step). The Lua itself is in rooms/lua/<domain>/<step>.lua, one file a step with its
KEYS/ARGV header, assembled once at start by rooms/lua (its libraries first, the constants
its header declares from CONSTANTS); the wrappers every write step runs in (guard, keyed,
turn) are Lua functions in rooms/lua/wrap/, composed by rooms/lua `write_step`.

Scripts never build a key name for the room's own data (rooms/keys.py does, and every key
arrives in KEYS), and they refresh the idle TTL of every key they write, so a room that is
only ever written to still expires. Lua's cjson turns an empty array into `{}` on the way
back out; the few array fields a script re-encodes are put right with `fix_arrays`, and
payloads the agents wrote are never decoded there at all (they are stored verbatim and
spliced in as strings).
"""

from rooms import lua

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
# Most claims and file leases an agent's every act renews (rooms/lua/lib/holds.lua): the
# bound on what one act costs, whatever an agent holds.
HOLDS_MAX = 64
# The constants a Lua file's header may declare (`--- constants: ...`, rooms/lua), by name.
CONSTANTS: dict[str, str | int] = {
    "SEARCH_STOPWORDS": SEARCH_STOPWORDS,
    "SEARCH_FIELD_BYTES": SEARCH_FIELD_BYTES,
    "SEARCH_DOC_TERMS": SEARCH_DOC_TERMS,
    "SEARCH_EVENT_POSTINGS": SEARCH_EVENT_POSTINGS,
    "SEARCH_WORD_BYTES": SEARCH_WORD_BYTES,
    "HOLDS_MAX": HOLDS_MAX,
}


ACCESS_ROOM_SCRIPT = lua.assemble("room/access_room", CONSTANTS)

ADD_TASK_SCRIPT = lua.assemble("plan/add_task", CONSTANTS)

CREATE_PLAN_SCRIPT = lua.assemble("plan/create_plan", CONSTANTS)


UPDATE_TASK_SCRIPT = lua.assemble("plan/update_task", CONSTANTS)

CLAIM_TASK_SCRIPT = lua.assemble("plan/claim_task", CONSTANTS)

RELEASE_TASK_SCRIPT = lua.assemble("plan/release_task", CONSTANTS)

EXPIRE_CLAIMS_SCRIPT = lua.assemble("plan/expire_claims", CONSTANTS)

READ_PLAN_SCRIPT = lua.assemble("plan/read_plan", CONSTANTS)


TASK_HINTS_SCRIPT = lua.assemble("plan/task_hints", CONSTANTS)

WRITE_CONTEXT_SCRIPT = lua.assemble("context/write_context", CONSTANTS)

UPDATE_CONTEXT_SCRIPT = lua.assemble("context/update_context", CONSTANTS)

CONTEXT_HISTORY_SCRIPT = lua.assemble("context/context_history", CONSTANTS)

CONTEXT_HINTS_SCRIPT = lua.assemble("context/context_hints", CONSTANTS)

POST_EVENT_SCRIPT = lua.assemble("events/post_event", CONSTANTS)


READ_UNREAD_SCRIPT = lua.assemble("events/read_unread", CONSTANTS)

READ_UNREAD_MANY_SCRIPT = lua.assemble("events/read_unread_many", CONSTANTS)


MARK_EVENT_READ_SCRIPT = lua.assemble("events/mark_event_read", CONSTANTS)

HEARTBEAT_SCRIPT = lua.assemble("presence/heartbeat", CONSTANTS)
PRESENCE_TOUCH_SCRIPT = lua.assemble("presence/touch", CONSTANTS)

ACQUIRE_LOCK_SCRIPT = lua.assemble("locks/acquire_lock", CONSTANTS)

RELEASE_LOCK_SCRIPT = lua.assemble("locks/release_lock", CONSTANTS)

SET_SHARED_VAR_SCRIPT = lua.assemble("vars/set_shared_var", CONSTANTS)

SLIDING_WINDOW_SCRIPT = lua.assemble("budgets/sliding_window", CONSTANTS)

BUDGET_STEP_SCRIPT = lua.assemble("budgets/budget_step", CONSTANTS)

ADMIT_SLOT_SCRIPT = lua.assemble("budgets/admit_slot", CONSTANTS)

FILL_BEARER_SCRIPT = lua.assemble("bearers/fill_bearer", CONSTANTS)

FORGET_BEARER_SCRIPT = lua.assemble("bearers/forget_bearer", CONSTANTS)

CONTEXT_GET_SCRIPT = lua.assemble("context/context_get", CONSTANTS)

CONTEXT_ALL_SCRIPT = lua.assemble("context/context_all", CONSTANTS)

# --- roomd's other tools ---------------------------------------------------------------

LEAVE_ROOM_SCRIPT = lua.assemble("room/leave_room", CONSTANTS)

ROOM_INFO_SCRIPT = lua.assemble("room/room_info", CONSTANTS)

ADD_DEPENDENCY_SCRIPT = lua.assemble("plan/add_dependency", CONSTANTS)

DELETE_TASK_SCRIPT = lua.assemble("plan/delete_task", CONSTANTS)

DELETE_CONTEXT_SCRIPT = lua.assemble("context/delete_context", CONSTANTS)

DELETE_EVENT_SCRIPT = lua.assemble("events/delete_event", CONSTANTS)

REQUEST_REVIEW_SCRIPT = lua.assemble("reviews/request_review", CONSTANTS)

SUBMIT_TASK_SCRIPT = lua.assemble("reviews/submit_task", CONSTANTS)

SET_ROOM_MODE_SCRIPT = lua.assemble("room/set_room_mode", CONSTANTS)

RESOLVE_REVIEW_SCRIPT = lua.assemble("reviews/resolve_review", CONSTANTS)


ROOM_ANALYTICS_SCRIPT = lua.assemble("room/room_analytics", CONSTANTS)

SEARCH_REINDEX_SCRIPT = lua.assemble("search/search_reindex", CONSTANTS)


SEARCH_SCRIPT = lua.assemble("search/search", CONSTANTS)


# --- Leases (rooms/paths.py says what a path and a glob are) -----------------------------


LEASE_CLAIM_SCRIPT = lua.assemble("leases/lease_claim", CONSTANTS)

LEASE_CHANGE_SCRIPT = lua.assemble("leases/lease_change", CONSTANTS)

LEASES_VIEW_SCRIPT = lua.assemble("leases/leases_view", CONSTANTS)


NOTE_READ_SCRIPT = lua.assemble("leases/note_read", CONSTANTS)

DRIFT_SCRIPT = lua.assemble("leases/drift", CONSTANTS)


CONTEXT_READERS_SCRIPT = lua.assemble("context/context_readers", CONSTANTS)


# --- Messages (rooms/services/messages.py) -----------------------------------------------


SEND_MESSAGE_SCRIPT = lua.assemble("messages/send_message", CONSTANTS)

INBOX_SCRIPT = lua.assemble("messages/inbox", CONSTANTS)

ACK_MESSAGE_SCRIPT = lua.assemble("messages/ack_message", CONSTANTS)

SENT_MESSAGES_SCRIPT = lua.assemble("messages/sent_messages", CONSTANTS)


# --- Handoffs (rooms/services/handoffs.py) ------------------------------------------------

HANDOFF_OFFER_SCRIPT = lua.assemble("handoffs/handoff_offer", CONSTANTS)

HANDOFF_RESOLVE_SCRIPT = lua.assemble("handoffs/handoff_resolve", CONSTANTS)


# --- Lifecycle (rooms/services/lifecycle.py) ---------------------------------------------

SET_ROOM_STATUS_SCRIPT = lua.assemble("room/set_room_status", CONSTANTS)


STATUS_EVENT_SCRIPT = lua.assemble("room/status_event", CONSTANTS)


# --- Archives (rooms/snapshots.py; tenants/archives.py moves rooms to and from Postgres) ---

FREEZE_ROOM_SCRIPT = lua.assemble("archives/freeze_room", CONSTANTS)

OWNER_CACHE_SCRIPT = lua.assemble("archives/owner_cache", CONSTANTS)

THAW_ROOM_SCRIPT = lua.assemble("archives/thaw_room", CONSTANTS)

COPY_ROOM_SCRIPT = lua.assemble("archives/copy_room", CONSTANTS)

RANGE_CHUNK_SCRIPT = lua.assemble("archives/range_chunk", CONSTANTS)

LOAD_ROOM_SCRIPT = lua.assemble("archives/load_room", CONSTANTS)


INHERITED_REPLACE_SCRIPT = lua.assemble("room/inherited_replace", CONSTANTS)

BUDGET_STEP_GUEST_SCRIPT = lua.assemble("budgets/budget_step_guest", CONSTANTS)
RELEASE_MARK_SCRIPT = lua.assemble("imports/release_mark", CONSTANTS)
