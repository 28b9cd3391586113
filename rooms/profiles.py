"""Tool profiles: which of the registry's tools a connection sees and may call.

A client carries every listed tool's description in its model's context on every turn, so
the list is worth keeping to what the agent uses. Three profiles, each read from the tool
rows, in TOOLS_ORDER's order:

- core: the everyday workflow the README walks through (orient, take work, publish and
  revise contracts, hear from others, lease files, hand in, verify, hand off), at most
  CORE_MAX tools, listed compactly (mcp_gateway.tools: short shared argument texts, no
  output schemas) so its descriptions and input schemas stay under 12 KB;
- roomd: exactly roomd's 44 tools (docs/protocol.md "Whose tools"), for clients and kits
  written against roomd;
- full: every tool.

A connection chooses one in its URL (`/mcp?tools=core`); else its credential's default
(ApiKey.tools_profile, Invite.tools_profile); else full, so a key made before profiles
sees what it always saw. The doors (mcp_gateway) turn the URL into a profile with
`profile_resolve` and ask `profile_admit` before a call; nothing below them knows.
"""

from __future__ import annotations

from typing import Literal, get_args

from rooms import errors, registry

Profile = Literal["core", "roomd", "full"]
PROFILES: tuple[Profile, ...] = get_args(Profile)
DEFAULT: Profile = "full"
CORE_MAX = 20

# What each is for, in a few words (error messages, the dashboard's select, the docs).
PURPOSES: dict[Profile, str] = {
    "core": "the everyday workflow",
    "roomd": "roomd's tools",
    "full": "every tool",
}

# Each row says whether core and roomd list it (`core=True`, `roomd=True` beside its adapter
# in rooms/tools/<domain>.py); full lists every tool. roomd's are docs/protocol.md's "Whose
# tools" (tests/rooms/test_profiles.py holds the rows to it and to the conformance kit's).
# Core is issue 25's thirteen (the canonical workflow) and what the README's everyday loop
# needs besides (issue 31): get_unblocked_tasks (how the server's instructions tell an agent
# to pick work), release_task (a claim given back, not left to lapse), verify_task (the
# other half of submit_task: without it a core agent's submission waits on a person),
# handoff_task with accept_handoff and decline_handoff (passing work on is part of the loop,
# and get_my_summary shows the handoffs offered), ack_message (send_message's ackRequired
# asks the recipient for it). Left out on purpose: lease_check (lease_claim is the check,
# refused naming the holders), lease_release (a lease taken with a taskId ends with the
# task, and every lease lapses after its ttlSeconds), update_context (write_context's
# `supersedes` publishes an entry's next version), read_context (list_context returns the
# entries whole). Nothing a core agent is told names a tool outside it
# (tests/rooms/test_core_texts.py).
TOOLS: dict[Profile, tuple[str, ...]] = {
    "core": tuple(t.name for t in registry.TOOLS if t.core),
    "roomd": tuple(t.name for t in registry.TOOLS if t.roomd),
    "full": registry.TOOLS_ORDER,
}
if len(TOOLS["core"]) > CORE_MAX:
    raise RuntimeError(f"core has {len(TOOLS['core'])} tools, at most {CORE_MAX}")
_SETS: dict[Profile, frozenset[str]] = {p: frozenset(names) for p, names in TOOLS.items()}

PROFILE_UNKNOWN = (
    "Unknown tool profile {given!r} (the URL's ?tools=). The profiles are {known}: connect "
    "with /mcp?tools=core, say, or leave ?tools= out for your key's default."
)
# Said to an agent, which cannot reconnect mid-session: it is told to go on with the tools
# it has; the URL's ?tools= is for the person who sets the client up.
NOT_IN_PROFILE = (
    '{tool} is not offered on this connection: its tool profile is "{profile}" ({count} '
    "tools, the ones tools/list shows); carry on with those. {tool} is in {where} (for "
    "whoever sets up this client: ?tools={suggest} in the server's URL)."
)


def describe(profile: Profile) -> str:
    """`core (20 tools: the everyday workflow)`."""
    return f"{profile} ({len(TOOLS[profile])} tools: {PURPOSES[profile]})"


def profile_of(tool: str) -> tuple[Profile, ...]:
    """The profiles that have `tool`, smallest first (none for a name of no tool)."""
    return tuple(p for p in PROFILES if tool in _SETS[p])


def profile_parse(given: str) -> Profile:
    """The profile named `given`, or ToolProfileUnknownError naming the profiles."""
    for profile in PROFILES:
        if given == profile:
            return profile
    known = ", ".join(describe(p) for p in PROFILES)
    raise errors.ToolProfileUnknownError(
        PROFILE_UNKNOWN.format(given=given, known=known),
        extra={"given": given, "profiles": list(PROFILES)},
    )


def profile_stored(value: str | None) -> Profile | None:
    """A credential's stored default (null or "": none)."""
    return profile_parse(value) if value else None


def profile_resolve(asked: str | None, default: Profile | None) -> Profile:
    """The profile of a connection: the one its URL asks for, else its credential's
    default, else DEFAULT (full: what a key made before profiles always saw)."""
    if asked is not None:
        return profile_parse(asked)
    return default or DEFAULT


def profile_admit(profile: Profile, tool: str) -> None:
    """Nothing when `profile` has `tool` (a registry name), else ToolNotInProfileError
    saying which profiles have it and how to connect with one."""
    if tool in _SETS[profile]:
        return
    having = profile_of(tool)
    raise errors.ToolNotInProfileError(
        NOT_IN_PROFILE.format(
            tool=tool,
            profile=profile,
            count=len(TOOLS[profile]),
            where=" and ".join(having),
            suggest=having[0],
        ),
        extra={"tool": tool, "profile": profile, "profiles": list(having)},
    )
