"""What a caller may do: one description, made in one place (tenants.auth), read by every
check (tenants.access) at every door.

A `Caller` is the resolved credential. It names its team by id (never by slug), the rooms it
reaches (the team's, or one), whether it may write, what it may manage, and the agent it is
bound to. Nothing else in the service decides capabilities; doors only ask.

The rules (docs/architecture.md has the table):

| credential                 | rooms      | write        | manage                          |
|----------------------------|------------|--------------|---------------------------------|
| static key (API_KEYS)      | team       | yes          | everything, and creating teams  |
| team key                   | team       | unless r/o   | keys, invites, webhooks, rooms  |
| team key, bound or r/o     | team       | unless r/o   | nothing                         |
| invite                     | its room   | unless r/o   | nothing                         |
| dashboard owner            | team       | yes          | keys, invites, webhooks, rooms, team |
| dashboard admin            | team       | yes          | keys, invites, webhooks, rooms  |
| dashboard member           | team       | yes          | nothing                         |
| dashboard key session      | the key's  | the key's    | the key's                       |
| share link                 | its room   | no           | nothing                         |
| OAuth connection           | team or one room | unless r/o | nothing                     |

An OAuth connection is a person's consent for one client (tenants.models.OAuthConnection),
bound to the agent the person named; managing stays the person's own, in the dashboard.

A bound or read-only key cannot manage at all (rather than "mint keys no broader than
itself"): the simplest rule that can never mint upward, and what an agent's key needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rooms.profiles import Profile


class Manage(StrEnum):
    KEYS = "keys"
    INVITES = "invites"
    WEBHOOKS = "webhooks"
    ROOMS = "rooms"
    # Members, roles and the audit log: a person's team, in the dashboard.
    TEAM = "team"
    # Creating new teams (docs/protocol.md "Tenancy and access"): static keys only.
    TEAMS = "teams"


TEAM_MANAGEMENT = frozenset({Manage.KEYS, Manage.INVITES, Manage.WEBHOOKS, Manage.ROOMS})
OWNER_MANAGEMENT = TEAM_MANAGEMENT | {Manage.TEAM}
STATIC_MANAGEMENT = OWNER_MANAGEMENT | {Manage.TEAMS}

# The names people act under in rooms (tenants.acting): no agent may take one, so what a
# person did is never forged by an agent, nor an agent's act blamed on a person.
PERSON_PREFIX = "person:"

CallerKind = Literal["static", "key", "invite", "session", "key_session", "share", "oauth"]


@dataclass(frozen=True, slots=True)
class Caller:
    team_id: int
    team_slug: str  # for people and messages; never used to find anything
    kind: CallerKind
    # The credential this caller stands for: "static:<team id>", "key:<id>", "invite:<id>",
    # "user:<id>", "share:<id>". Revocations and budgets are keyed by it.
    credential: str
    # None: every room of the team; otherwise the one room this credential reaches.
    room: str | None = None
    write: bool = False
    manage: frozenset[Manage] = frozenset()
    # Every argument that names the acting agent must be this one (tenants.access).
    agent: str | None = None
    expires_at_ms: int | None = None
    user_id: int | None = None
    role: str | None = None  # a person's role in the team (sessions)
    # Bound to a person's own name for one dashboard action (tenants.acting.acting_as): the
    # only caller whose acting names may start with PERSON_PREFIX.
    person: bool = False
    # The tool profile the credential's connections get when their URL names none
    # (rooms.profiles); None: every tool.
    tools_profile: Profile | None = None
    # An OAuth access token's audience: the one door URL it is good at (mcp_gateway.oauth);
    # None for every other credential, which the key doors alone take.
    resource: str | None = None

    def may(self, what: Manage) -> bool:
        return what in self.manage

    @property
    def guest(self) -> bool:
        """Reaches one room only (an invite or a share link)."""
        return self.room is not None

    @property
    def budget(self) -> str:
        """Whose rate limit, stream and waiter slots this caller spends: a guest's own, so
        one invite can never exhaust its team's."""
        return self.credential if self.guest else f"team:{self.team_id}"

    @property
    def actor(self) -> str:
        """How the audit log names this caller: its credential; an OAuth connection's with
        its person first ("user:7 via oauth:3"), so each act names them whatever becomes of
        the connection (the audit page shows the client its oauth.connect row names)."""
        if self.kind == "oauth":
            return f"user:{self.user_id} via {self.credential}"
        return self.credential

    @property
    def revocation_refs(self) -> tuple[str, ...]:
        """Every signal that means "check this caller again": its credential, its person
        (membership changes, account deletion) and its team (deletion)."""
        refs = [self.credential, f"team:{self.team_id}"]
        if self.user_id is not None and self.credential != f"user:{self.user_id}":
            refs.append(f"user:{self.user_id}")
        return tuple(refs)

    @property
    def cursor_scope(self) -> str | None:
        """A read-only caller reads with cursors of its own credential's, so it never moves
        the cursor of the agent it names (and never claims rooms)."""
        return None if self.write else self.credential

    def describe(self) -> str:
        """What this credential is, for refusal messages."""
        if self.kind == "invite":
            base = "an invite to one room"
        elif self.kind == "share":
            base = "a read-only share link"
        elif self.kind == "session":
            base = f"a dashboard session of a team {self.role or 'member'}"
        elif self.kind == "static":
            base = "a static team key"
        elif self.kind == "oauth":
            base = "a person's OAuth connection"
        else:
            base = "a team key"
        traits = []
        if self.agent:
            traits.append(f'bound to agent "{self.agent}"')
        if not self.write and self.kind != "share":
            traits.append("read-only")
        return base + (" (" + ", ".join(traits) + ")" if traits else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "team_id": self.team_id,
            "team_slug": self.team_slug,
            "kind": self.kind,
            "credential": self.credential,
            "room": self.room,
            "write": self.write,
            "manage": sorted(self.manage),
            "agent": self.agent,
            "expires_at_ms": self.expires_at_ms,
            "user_id": self.user_id,
            "role": self.role,
            "tools_profile": self.tools_profile,
            "resource": self.resource,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Caller:
        return cls(
            team_id=int(data["team_id"]),
            team_slug=str(data["team_slug"]),
            kind=data["kind"],
            credential=str(data["credential"]),
            room=data.get("room"),
            write=bool(data.get("write")),
            manage=frozenset(Manage(m) for m in data.get("manage") or ()),
            agent=data.get("agent"),
            expires_at_ms=data.get("expires_at_ms"),
            user_id=data.get("user_id"),
            role=data.get("role"),
            tools_profile=data.get("tools_profile"),
            resource=data.get("resource"),
        )


def key_capabilities(*, read_only: bool, agent: str | None) -> tuple[bool, frozenset[Manage]]:
    """(write, manage) of a team key: a bound or read-only key manages nothing."""
    manage = TEAM_MANAGEMENT if not read_only and not agent else frozenset()
    return not read_only, manage


def role_capabilities(role: str) -> tuple[bool, frozenset[Manage]]:
    """(write, manage) of a person in a team, by role."""
    if role == "owner":
        return True, OWNER_MANAGEMENT
    if role == "admin":
        return True, TEAM_MANAGEMENT
    return True, frozenset()
