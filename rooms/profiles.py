"""Tool profiles: which of the registry's tools a connection sees and may call.

A client carries every listed tool's description in its model's context on every turn, so
the list is worth keeping to what the agent uses. Three profiles, each a fixed list in
TOOLS_ORDER's order:

- core: the everyday workflow (orient, take work, publish, hear from others, lease files,
  hand in), at most CORE_MAX tools;
- roomd: exactly roomd's 44 tools (docs/protocol.md "Whose tools"), for clients and kits
  written against roomd;
- full: every tool.

A connection chooses one in its URL (`/mcp?tools=core`); else its credential's default
(ApiKey.tools_profile, Invite.tools_profile); else full, so a key made before profiles
sees what it always saw. The doors (mcp_gateway) turn the URL into a profile with
`profile_resolve` and ask `profile_admit` before a call; nothing below them knows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from rooms import errors, registry

Profile = Literal["core", "roomd", "full"]
PROFILES: tuple[Profile, ...] = get_args(Profile)
DEFAULT: Profile = "full"
CORE_MAX = 16
ROOMD_COUNT = 44

# What each is for, in a few words (error messages, the dashboard's select, the docs).
PURPOSES: dict[Profile, str] = {
    "core": "the everyday workflow",
    "roomd": "roomd's tools",
    "full": "every tool",
}

# The thirteen (issue 25: the canonical workflow), and three without which that
# workflow has a hole: get_unblocked_tasks (how the server's instructions tell an agent to
# pick work), release_task (a claim given back, not left to lapse), ack_message (what
# send_message's ackRequired asks the recipient to do). lease_check is left out:
# lease_claim is the check, refused naming the holders.
_CORE = frozenset(
    {
        "heartbeat",
        "get_my_summary",
        "read_plan",
        "add_task",
        "claim_task",
        "update_task",
        "write_context",
        "list_context",
        "wait_for_events",
        "send_message",
        "inbox",
        "lease_claim",
        "submit_task",
        "get_unblocked_tasks",
        "release_task",
        "ack_message",
    }
)

# roomd's 44: the report's 25 and roomd's other 19 (docs/protocol.md "Whose tools";
# tests/rooms/test_profiles.py holds this to that list and to the conformance kit's).
_ROOMD = frozenset(
    {
        # the report's 25
        "read_plan",
        "add_task",
        "update_task",
        "get_task",
        "get_unblocked_tasks",
        "get_my_tasks",
        "get_my_summary",
        "write_context",
        "read_context",
        "list_context",
        "update_context",
        "post_event",
        "read_events",
        "get_unread_events",
        "mark_event_read",
        "get_event_reads",
        "reply_to_event",
        "heartbeat",
        "get_presence",
        "acquire_lock",
        "release_lock",
        "list_locks",
        "set_shared_var",
        "get_shared_var",
        "list_shared_vars",
        # roomd's other 19
        "list_rooms",
        "list_templates",
        "wait_for_events",
        "leave_room",
        "get_room_info",
        "delete_task",
        "set_task_priority",
        "add_dependency",
        "delete_context",
        "get_context_history",
        "delete_event",
        "request_review",
        "approve",
        "reject",
        "list_reviews",
        "diff_context",
        "get_room_analytics",
        "search",
        "create_room_from_template",
    }
)


def _in_order(names: Iterable[str]) -> tuple[str, ...]:
    wanted = set(names)
    unknown = wanted - set(registry.TOOLS_ORDER)
    if unknown:
        raise RuntimeError(f"profiles name tools the registry does not have: {sorted(unknown)}")
    return tuple(n for n in registry.TOOLS_ORDER if n in wanted)


TOOLS: dict[Profile, tuple[str, ...]] = {
    "core": _in_order(_CORE),
    "roomd": _in_order(_ROOMD),
    "full": registry.TOOLS_ORDER,
}
if len(TOOLS["core"]) > CORE_MAX or len(TOOLS["roomd"]) != ROOMD_COUNT:
    raise RuntimeError(
        f"core has {len(TOOLS['core'])} tools (at most {CORE_MAX}), roomd "
        f"{len(TOOLS['roomd'])} (exactly {ROOMD_COUNT})"
    )
_SETS: dict[Profile, frozenset[str]] = {p: frozenset(names) for p, names in TOOLS.items()}

PROFILE_UNKNOWN = (
    "Unknown tool profile {given!r} (the URL's ?tools=). The profiles are {known}: connect "
    "with /mcp?tools=core, say, or leave ?tools= out for your key's default."
)
NOT_IN_PROFILE = (
    '{tool} is not offered on this connection: its tool profile is "{profile}" ({count} '
    "tools, the ones tools/list shows). {tool} is in {where}: to use it, connect with "
    "?tools={suggest} in the server's URL (/mcp?tools={suggest})."
)


def describe(profile: Profile) -> str:
    """`core (16 tools: the everyday workflow)`."""
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
