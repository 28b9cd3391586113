"""The only place Redis key names are built (docs/architecture.md; a room's keys share its
hash tag, docs/scaling.md "What holds one room").

Every key of a room carries the room id in a hash tag, `<prefix>:{<roomId>}:<part>`, so a
whole room lives in one Redis Cluster slot and every multi-key script stays legal there.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class RoomKeys:
    room_id: str

    def _k(self, part: str) -> str:
        return f"{prefix()}:{{{self.room_id}}}:{part}"

    @property
    def owner(self) -> str:
        """String: the owning team id."""
        return self._k("owner")

    @property
    def meta(self) -> str:
        """Hash: created_at, updated_at of the plan."""
        return self._k("meta")

    @property
    def tasks(self) -> str:
        """Hash: task id -> task JSON."""
        return self._k("tasks")

    @property
    def task_order(self) -> str:
        """List: task ids in plan order."""
        return self._k("task_order")

    @property
    def task_titles(self) -> str:
        """Hash: task id -> its title cut short (what unknown-task hints compare against)."""
        return self._k("task_titles")

    @property
    def claims(self) -> str:
        """Sorted set: task id -> expiry (epoch ms) of its claim's lease, for claims taken
        with leaseSeconds."""
        return self._k("claims")

    @property
    def claim_holders(self) -> str:
        """Hash: task id -> "<lease ms> <agent id>", who holds the lease and for how long
        each renewal extends it."""
        return self._k("claim_holders")

    @property
    def reviews(self) -> str:
        """Hash: review id -> review JSON."""
        return self._k("reviews")

    @property
    def review_order(self) -> str:
        """Sorted set: review id -> the stream position of its review_requested event."""
        return self._k("review_order")

    @property
    def idempotency(self) -> str:
        """Hash: "k:<idempotencyKey>" -> the record of the keyed write (its fingerprint, its
        script's answer, what the service minted), and "__bytes", the records' total size."""
        return self._k("idem")

    @property
    def idempotency_times(self) -> str:
        """Sorted set: "k:<idempotencyKey>" -> when it was written (epoch ms), oldest first
        out."""
        return self._k("idem_at")

    @property
    def context(self) -> str:
        """Hash: context id -> entry JSON without its payload."""
        return self._k("ctx")

    @property
    def context_payloads(self) -> str:
        """Hash: context id -> payload JSON, stored verbatim (never re-encoded by Lua)."""
        return self._k("ctx_payload")

    @property
    def context_created(self) -> str:
        """Sorted set: context id -> creation sequence, for newest-first listing."""
        return self._k("ctx_created")

    @property
    def context_changed(self) -> str:
        """Sorted set: context id -> stream position of its last write (newContextCount)."""
        return self._k("ctx_changed")

    @property
    def context_versions(self) -> str:
        """Hash: "<id>@<version>" -> the full entry JSON of each superseded version."""
        return self._k("ctx_versions")

    @property
    def context_version_index(self) -> str:
        """Sorted set (lexical): "<id>@<minor, 9 digits>@<version>" per superseded version,
        so one entry's history is one range and its oldest versions can be dropped."""
        return self._k("ctx_version_index")

    @property
    def context_labels(self) -> str:
        """Hash: context id -> "<type>: <summary cut short>" (what hints compare against)."""
        return self._k("ctx_labels")

    @property
    def events(self) -> str:
        """Stream: the event log; the stream id is the event id."""
        return self._k("events")

    @property
    def cursors(self) -> str:
        """Hash: agent id -> last event id delivered to it."""
        return self._k("cursors")

    @property
    def cursors_readonly(self) -> str:
        """Hash: [read-only credential, agent id] (JSON) -> last event id delivered to it."""
        return self._k("cursors_ro")

    @property
    def reads(self) -> str:
        """Hash: event id -> JSON list of read receipts."""
        return self._k("reads")

    @property
    def presence(self) -> str:
        """Sorted set: agent id -> when it last acted (any call naming it, a heartbeat),
        epoch ms."""
        return self._k("presence")

    @property
    def presence_rest(self) -> str:
        """Hash: agent id -> when it said it went idle (a session's end), epoch ms; its
        next act clears it (rooms/lua/wrap/present.lua)."""
        return self._k("presence_rest")

    @property
    def holds(self) -> str:
        """Hash: agent id -> JSON list of the leased claims ("c:<task id>") and file leases
        ("l:<lease id>") it was granted, which its every act renews (rooms/lua/lib/holds.lua)."""
        return self._k("holds")

    @property
    def vars(self) -> str:
        """Hash: shared variables."""
        return self._k("vars")

    @property
    def lock_index(self) -> str:
        """Sorted set: lock resource -> expiry, epoch ms (for list_locks)."""
        return self._k("lock_index")

    @property
    def lock_tokens(self) -> str:
        """Hash: lock resource -> fencing token of its current grant."""
        return self._k("lock_tokens")

    @property
    def fence(self) -> str:
        """String counter: the room's last fencing token."""
        return self._k("fence")

    @property
    def active_mark(self) -> str:
        """String with a short expiry: the room's last-activity time was recorded recently."""
        return self._k("active_mark")

    @property
    def seq(self) -> str:
        """String counter: ordering of context entries."""
        return self._k("seq")

    @property
    def wake(self) -> str:
        """Pub/sub channel (not a key): every new event id of the room is published here."""
        return self._k("wake")

    @property
    def leases(self) -> str:
        """Hash: lease id -> lease JSON (path, mode, holder, task, reason, expiry ms)."""
        return self._k("leases")

    @property
    def lease_expiry(self) -> str:
        """Sorted set: lease id -> its expiry (epoch ms), so the expired leave first."""
        return self._k("lease_expiry")

    @property
    def context_readers(self) -> str:
        """Hash: context id -> [{a: agent, v: version, at: ms}], the version each agent last
        read (read_context, list_context with agentId), oldest read first."""
        return self._k("ctx_readers")

    @property
    def file_reads(self) -> str:
        """Hash: "<agent>\\n<path>" -> {sha256, at_ms}, the content hash the agent last saw
        (note_read), the baseline of drift_check."""
        return self._k("file_reads")

    @property
    def handoffs(self) -> str:
        """Hash: handoff id -> handoff JSON (task, from, to, note, contextIds, status)."""
        return self._k("handoffs")

    @property
    def handoff_order(self) -> str:
        """Sorted set: handoff id -> when it was offered (epoch ms), so the oldest resolved
        ones go first past the quota."""
        return self._k("handoff_order")

    @property
    def messages(self) -> str:
        """Hash: message id -> the message JSON (sender, selector, text, recipients, expiry)."""
        return self._k("messages")

    @property
    def message_order(self) -> str:
        """Sorted set: message id -> its event's stream position, so the oldest go first."""
        return self._k("message_order")

    @property
    def deliveries(self) -> str:
        """Hash: inbox member -> "<state> <since ms> <expiry ms or 0>", one per recipient
        of each kept message (stored, read, acked)."""
        return self._k("deliveries")

    @property
    def inbox(self) -> str:
        """Sorted set (lexical, score 0): "<agent's length>:<agent>\\n<event position>
        <message id>" per delivery, so one agent's inbox is one range, oldest first."""
        return self._k("inbox")

    @property
    def outbox(self) -> str:
        """Sorted set (lexical, score 0): the same members, keyed by the sender."""
        return self._k("outbox")

    @property
    def message_stats(self) -> str:
        """Hash: agent -> "<deliveries ever> <read ever> <last delivery ms>" (what an empty
        inbox explains itself with)."""
        return self._k("message_stats")

    @property
    def agent_tags(self) -> str:
        """Hash: agent -> the tags (JSON list) of its last heartbeat that carried any."""
        return self._k("agent_tags")

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
    def search_events(self) -> str:
        """Hash: word -> the retained events holding it (rooms/lua/lib/search.lua). The three
        search keys are named after `meta` in the scripts that keep them: same slot."""
        return self._k("search_events")

    @property
    def search_docs(self) -> str:
        """Hash: word -> the tasks and context entries holding it (rooms/lua/lib/search.lua)."""
        return self._k("search_docs")

    @property
    def search_vocab(self) -> str:
        """Sorted set: every indexed word, score 0, so a prefix is a lexical range."""
        return self._k("search_vocab")

    @property
    def search(self) -> list[str]:
        """The search index's keys, which every write script may change (declared with
        each, so a slot in migration is handled for them as for the rest)."""
        return [self.search_events, self.search_docs, self.search_vocab]

    @property
    def inherited(self) -> str:
        """Hash: "<room id>/<context id>" -> the entry JSON (payload included) of a durable
        decision or contract of an earlier room of the project (rooms.memory); "~project"
        -> the project's name."""
        return self._k("inherited")

    @property
    def loading(self) -> str:
        """String with a short expiry: an archived room's state is being loaded (a restore
        or a read-only view), so concurrent loaders wait for it instead of racing."""
        return self._k("loading")

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
        """Every key that lives as long as the room does (refreshed to the idle TTL on use)."""
        return [
            self.owner,
            self.meta,
            self.tasks,
            self.task_order,
            self.task_titles,
            self.claims,
            self.claim_holders,
            self.reviews,
            self.review_order,
            self.idempotency,
            self.idempotency_times,
            self.context,
            self.context_payloads,
            self.context_created,
            self.context_changed,
            self.context_versions,
            self.context_version_index,
            self.context_labels,
            self.events,
            self.cursors,
            self.cursors_readonly,
            self.reads,
            self.presence,
            self.presence_rest,
            self.holds,
            self.vars,
            self.lock_index,
            self.lock_tokens,
            self.fence,
            self.seq,
            self.leases,
            self.lease_expiry,
            self.file_reads,
            self.context_readers,
            self.handoffs,
            self.handoff_order,
            self.messages,
            self.message_order,
            self.deliveries,
            self.inbox,
            self.outbox,
            self.message_stats,
            self.agent_tags,
            self.inherited,
            self.search_events,
            self.search_docs,
            self.search_vocab,
        ]


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
    """Sorted set: a budget's open streams or waiters ("streams:team:3") -> lease expiry ms."""
    return f"{prefix()}:slots:{bucket}"
