"""The only place Redis key names are built (docs/architecture.md; a room's keys share its
hash tag, docs/scaling.md "What holds one room").

Every key of a room carries the room id in a hash tag, `<prefix>:{<roomId>}:<part>`, so a
whole room lives in one Redis Cluster slot and every multi-key script stays legal there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import overload

from django.conf import settings

# The room tail: the keys every room step that writes, indexes or is wrapped takes after its
# own, in this order (rooms/store/engine.py `room_tail`). Its Lua reads them by name, from
# the table ROOM that rooms/lua builds of this list once a script (ROOM.meta, ROOM.holds).
ROOM_TAIL = (
    "claims",
    "claim_holders",
    "tasks",
    "leases",
    "lease_expiry",
    "agent_tags",
    "holds",
    "presence_rest",
    "presence",
    "idempotency",
    "idempotency_times",
    "search_events",
    "search_docs",
    "search_vocab",
    "owner",
    "meta",
)


def prefix() -> str:
    return str(settings.REDIS_KEY_PREFIX)


class RoomKey:
    """One key of a room, `<prefix>:{<roomId>}:<part>`: the text says its Redis type and what it
    holds; its part is the attribute's name unless given. A durable one lives as long as the
    room does (RoomKeys.durable)."""

    def __init__(self, doc: str, *, part: str = "", durable: bool = True) -> None:
        self.__doc__ = doc
        self.part = part
        self.durable = durable

    def __set_name__(self, owner: type[RoomKeys], name: str) -> None:
        self.part = self.part or name

    @overload
    def __get__(self, room: None, owner: type[RoomKeys]) -> RoomKey: ...

    @overload
    def __get__(self, room: RoomKeys, owner: type[RoomKeys]) -> str: ...

    def __get__(self, room: RoomKeys | None, owner: type[RoomKeys]) -> RoomKey | str:
        return self if room is None else room._k(self.part)


@dataclass(frozen=True, slots=True)
class RoomKeys:
    room_id: str

    def _k(self, part: str) -> str:
        return f"{prefix()}:{{{self.room_id}}}:{part}"

    owner = RoomKey("String: the owning team id.")
    meta = RoomKey("Hash: created_at, updated_at of the plan.")
    tasks = RoomKey("Hash: task id -> task JSON.")
    task_order = RoomKey("List: task ids in plan order.")
    task_titles = RoomKey(
        "Hash: task id -> its title cut short (what unknown-task hints compare against)."
    )
    claims = RoomKey(
        "Sorted set: task id -> expiry (epoch ms) of its claim's lease, for claims taken with "
        "leaseSeconds."
    )
    claim_holders = RoomKey(
        'Hash: task id -> "<lease ms> <agent id>", who holds the lease and for how long each '
        "renewal extends it."
    )
    reviews = RoomKey("Hash: review id -> review JSON.")
    review_order = RoomKey(
        "Sorted set: review id -> the stream position of its review_requested event."
    )
    idempotency = RoomKey(
        'Hash: "k:<idempotencyKey>" -> the record of the keyed write (its fingerprint, its '
        "script's answer, what the service minted), and \"__bytes\", the records' total size.",
        part="idem",
    )
    idempotency_times = RoomKey(
        'Sorted set: "k:<idempotencyKey>" -> when it was written (epoch ms), oldest first out.',
        part="idem_at",
    )
    context = RoomKey("Hash: context id -> entry JSON without its payload.", part="ctx")
    context_payloads = RoomKey(
        "Hash: context id -> payload JSON, stored verbatim (never re-encoded by Lua).",
        part="ctx_payload",
    )
    context_created = RoomKey(
        "Sorted set: context id -> creation sequence, for newest-first listing.",
        part="ctx_created",
    )
    context_changed = RoomKey(
        "Sorted set: context id -> stream position of its last write (newContextCount).",
        part="ctx_changed",
    )
    context_versions = RoomKey(
        'Hash: "<id>@<version>" -> the full entry JSON of each superseded version.',
        part="ctx_versions",
    )
    context_version_index = RoomKey(
        'Sorted set (lexical): "<id>@<minor, 9 digits>@<version>" per superseded version, so one '
        "entry's history is one range and its oldest versions can be dropped.",
        part="ctx_version_index",
    )
    context_labels = RoomKey(
        'Hash: context id -> "<type>: <summary cut short>" (what hints compare against).',
        part="ctx_labels",
    )
    events = RoomKey("Stream: the event log; the stream id is the event id.")
    cursors = RoomKey("Hash: agent id -> last event id delivered to it.")
    cursors_readonly = RoomKey(
        "Hash: [read-only credential, agent id] (JSON) -> last event id delivered to it.",
        part="cursors_ro",
    )
    reads = RoomKey("Hash: event id -> JSON list of read receipts.")
    presence = RoomKey(
        "Sorted set: agent id -> when it last acted (any call naming it, a heartbeat), epoch ms."
    )
    presence_rest = RoomKey(
        "Hash: agent id -> when it said it went idle (a session's end), epoch ms; its next act "
        "clears it (rooms/lua/wrap/present.lua)."
    )
    holds = RoomKey(
        'Hash: agent id -> JSON list of the leased claims ("c:<task id>") and file leases '
        '("l:<lease id>") it was granted, which its every act renews (rooms/lua/lib/holds.lua).'
    )
    vars = RoomKey("Hash: shared variables.")
    lock_index = RoomKey("Sorted set: lock resource -> expiry, epoch ms (for list_locks).")
    lock_tokens = RoomKey("Hash: lock resource -> fencing token of its current grant.")
    fence = RoomKey("String counter: the room's last fencing token.")
    active_mark = RoomKey(
        "String with a short expiry: the room's last-activity time was recorded recently.",
        durable=False,
    )
    seq = RoomKey("String counter: ordering of context entries.")
    wake = RoomKey(
        "Pub/sub channel (not a key): every new event id of the room is published here.",
        durable=False,
    )
    leases = RoomKey("Hash: lease id -> lease JSON (path, mode, holder, task, reason, expiry ms).")
    lease_expiry = RoomKey(
        "Sorted set: lease id -> its expiry (epoch ms), so the expired leave first."
    )
    file_reads = RoomKey(
        'Hash: "<agent>\\n<path>" -> {sha256, at_ms}, the content hash the agent last saw '
        "(note_read), the baseline of drift_check."
    )
    context_readers = RoomKey(
        "Hash: context id -> [{a: agent, v: version, at: ms}], the version each agent last read "
        "(read_context, list_context with agentId), oldest read first.",
        part="ctx_readers",
    )
    handoffs = RoomKey(
        "Hash: handoff id -> handoff JSON (task, from, to, note, contextIds, status)."
    )
    handoff_order = RoomKey(
        "Sorted set: handoff id -> when it was offered (epoch ms), so the oldest resolved ones go"
        " first past the quota."
    )
    messages = RoomKey(
        "Hash: message id -> the message JSON (sender, selector, text, recipients, expiry)."
    )
    message_order = RoomKey(
        "Sorted set: message id -> its event's stream position, so the oldest go first."
    )
    deliveries = RoomKey(
        'Hash: inbox member -> "<state> <since ms> <expiry ms or 0>", one per recipient of each '
        "kept message (stored, read, acked)."
    )
    inbox = RoomKey(
        "Sorted set (lexical, score 0): \"<agent's length>:<agent>\\n<event position>"
        " <message id>\" per delivery, so one agent's inbox is one range, oldest first."
    )
    outbox = RoomKey("Sorted set (lexical, score 0): the same members, keyed by the sender.")
    message_stats = RoomKey(
        'Hash: agent -> "<deliveries ever> <read ever> <last delivery ms>" (what an empty inbox '
        "explains itself with)."
    )
    agent_tags = RoomKey(
        "Hash: agent -> the tags (JSON list) of its last heartbeat that carried any."
    )
    inherited = RoomKey(
        'Hash: "<room id>/<context id>" -> the entry JSON (payload included) of a durable '
        'decision or contract of an earlier room of the project (rooms.memory); "~project" -> the'
        " project's name."
    )
    search_events = RoomKey(
        "Hash: word -> the retained events holding it (rooms/lua/lib/search.lua). The three "
        "search keys are named after `meta` in the scripts that keep them: same slot."
    )
    search_docs = RoomKey(
        "Hash: word -> the tasks and context entries holding it (rooms/lua/lib/search.lua)."
    )
    search_vocab = RoomKey(
        "Sorted set: every indexed word, score 0, so a prefix is a lexical range."
    )
    loading = RoomKey(
        "String with a short expiry: an archived room's state is being loaded (a restore or a "
        "read-only view), so concurrent loaders wait for it instead of racing.",
        durable=False,
    )

    @property
    def message_keys(self) -> list[str]:
        """What every message script takes, in this order."""
        return [
            self.messages,
            self.message_order,
            self.deliveries,
            self.inbox,
            self.outbox,
            self.message_stats,
        ]

    @property
    def search(self) -> list[str]:
        """The search index's keys, which every write script may change (declared with
        each, so a slot in migration is handled for them as for the rest)."""
        return [self.search_events, self.search_docs, self.search_vocab]

    def snapshot_parts(self) -> dict[str, str]:
        """Part name -> key, for every key an archive holds: the durable keys but the owner
        (whoever loads the room sets it) and the lock index (archiving releases live locks;
        their fencing tokens stay)."""
        return {
            key.rsplit("}:", 1)[1]: key
            for key in self.durable()
            if key not in (self.owner, self.lock_index)
        }

    def staged(self, token: str, part: str) -> str:
        """A copy of one part of the room, while a snapshot is read out of it or a load is
        written into it (a short expiry of its own; `token` keeps concurrent ones apart)."""
        return self._k(f"staged:{token}:{part}")

    def lock(self, resource: str) -> str:
        """String with a PX expiry: the holder of one lock."""
        return self._k(f"lock:{resource}")

    def durable(self) -> list[str]:
        """Every key that lives as long as the room does (refreshed to the idle TTL on use), in
        the order declared."""
        return [
            self._k(key.part)
            for key in RoomKeys.__dict__.values()
            if isinstance(key, RoomKey) and key.durable
        ]


def room_tail(room: RoomKeys) -> tuple[str, ...]:
    """The keys a room step that writes, indexes or is wrapped takes after its own
    (ROOM_TAIL, which its Lua reads by name): no script builds a key name. Built once per
    room and prefix, not at every write and every read's presence step (sixteen names)."""
    return _tail(prefix(), room.room_id)


@lru_cache(maxsize=4096)
def _tail(key_prefix: str, room_id: str) -> tuple[str, ...]:
    return tuple(f"{key_prefix}:{{{room_id}}}:{RoomKeys.__dict__[name].part}" for name in ROOM_TAIL)


def claims_due() -> str:
    """Sorted set (one key, one slot): room id -> at most the earliest expiry of its leased
    claims. One member per room, whatever its claims do (a claim only ever lowers it:
    ZADD LT), so no tenant grows it past its rooms; renewals only move expiries later, so
    the sweeper still finds every lapse."""
    return f"{prefix()}:claims:due"


def wake_pattern() -> str:
    """PSUBSCRIBE pattern matching every room's wake channel."""
    return f"{prefix()}:{{*}}:wake"


def room_of_wake_channel(channel: str) -> str:
    return channel[channel.index("{") + 1 : channel.rindex("}")]


@dataclass(frozen=True, slots=True)
class BearerKeys:
    """A credential digest's cache entry and its generation, in one slot (one hash tag), so
    "fill the cache unless the generation moved" is one atomic step on a cluster too."""

    digest: str

    @property
    def cache(self) -> str:
        """String (JSON): who the digest belongs to, cached for the hot path."""
        return f"{prefix()}:{{bearer:{self.digest}}}:caller"

    @property
    def generation(self) -> str:
        """String counter: bumped on every revocation, so a fill begun before it is dropped."""
        return f"{prefix()}:{{bearer:{self.digest}}}:gen"


def revocations_channel() -> str:
    """Pub/sub channel: a credential reference ("key:12", "user:7", "team:3") whose live
    uses must be checked again now."""
    return f"{prefix()}:revocations"


def webhooks_channel() -> str:
    """Pub/sub channel: a room id whose webhooks changed (the relay listens to it)."""
    return f"{prefix()}:webhooks-changed"


@dataclass(frozen=True, slots=True)
class TeamKeys:
    """A team's budget windows and its epoch, in one slot (one hash tag), so a tool call's
    charge and the check of every in-process cache are one step on a cluster too."""

    team_id: int

    def calls(self, bucket: str) -> str:
        """Sorted set: one member per tool call in the sliding window of `bucket` (the team
        itself, "team:3", or one of its guests, "invite:9")."""
        return f"{prefix()}:{{team:{self.team_id}}}:calls:{bucket}"

    def room_warned(self, room_id: str) -> str:
        """String with an expiry: the team was told a new room id looks like one of its
        rooms; a first touch of it while this lives creates it."""
        return f"{prefix()}:{{team:{self.team_id}}}:warned:{room_id}"

    @property
    def epoch(self) -> str:
        """String counter: bumped after each revocation or room deletion of the team, so
        every process's cached callers and room answers of the team are stale at once."""
        return f"{prefix()}:{{team:{self.team_id}}}:epoch"


def hook_notice(session_digest: str) -> str:
    """String with an expiry: a hook session (by digest of its client and session id) was
    told why its hooks cannot act; it is not told again while this lives."""
    return f"{prefix()}:hooknotice:{session_digest}"


def heartbeat(process: str) -> str:
    """String: when a background process (worker, scheduler, relay) last said it was
    alive, ms since the epoch (config/health.py reads it)."""
    return f"{prefix()}:heartbeat:{process}"


def rate_window(bucket: str) -> str:
    """Sorted set: one member per call in the sliding window of `bucket` (a team, an invite)."""
    return f"{prefix()}:ratelimit:{bucket}"


def open_slots(bucket: str) -> str:
    """Sorted set: a team's webhook deliveries under way ("deliveries:team:3") -> lease
    expiry ms."""
    return f"{prefix()}:slots:{bucket}"
