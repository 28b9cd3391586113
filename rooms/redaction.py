"""What a write carries is checked for secrets before it is stored (rooms.secrets finds
them), by the room's rule, `set_room_mode(secrets: ...)`:

- redact (the default): each secret is replaced by a marker before the write runs, and the
  answer says where (`redacted`);
- refuse: the write is refused, saying where, and nothing is stored;
- off: the detectors of other services' credentials are not run. This service's own keys
  (its key formats and the static keys of API_KEYS) are still redacted: a Roomservice
  credential in a room is a credential to this service that every guest and share link
  of the room could read.

Every write tool's text is checked the same way, from its parsed arguments, for every door
(MCP, REST, the dashboard, which writes through the same tools). Identifiers, names and
selectors are not text: they are left alone, so a redaction never retargets a write.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ValidationError

from rooms import errors, secrets
from rooms.refs import RoomRef
from rooms.schemas import ToolInput
from rooms.store import room as room_store

Policy = Literal["off", "redact", "refuse"]
DEFAULT_POLICY: Policy = "redact"

# Arguments that name or select things rather than say them.
NOT_TEXT = frozenset(
    {
        "roomId",
        "idempotencyKey",
        "taskId",
        "id",
        "contextId",
        "contextIds",
        "eventId",
        "replyToId",
        "replyTo",
        "reviewId",
        "handoffId",
        "leaseId",
        "messageId",
        "templateId",
        "targetId",
        "targetType",
        "agentId",
        "from",
        "to",
        "author",
        "requestedBy",
        "reviewer",
        "moderator",
        "turnOrder",
        "consuming_agents",
        "depends_on",
        "dependsOn",
        "status",
        "verdict",
        "turns",
        "secrets",
        "mode",
        "path",
        "sha256",
        "since",
        "order",
        "expectedVersion",
        "tags",
        "type",
        "key",
        "resource",
        "owner",
        "paths",
    }
)


def arguments_checked(
    tool: str, args: ToolInput, *, own_only: bool = False
) -> tuple[ToolInput, list[secrets.SecretFound]]:
    """`args` with the secrets in its text redacted, and where they were (no findings:
    `args` itself). `own_only`: our own key formats alone (a room whose checks are off)."""
    given = args.model_dump(by_alias=True, exclude_unset=True, mode="json")
    find = secrets.own_keys_redacted if own_only else secrets.secrets_redacted
    found: list[secrets.SecretFound] = []
    cleaned: dict[str, Any] = {}
    names = {name: value for name, value in given.items() if name in NOT_TEXT and value is not None}
    # Never rewritten (that would retarget the write), but this service's own keys are never
    # kept, not even in a name: refused. One scan of them all; each again only to say where.
    if names and secrets.own_keys_redacted(list(names.values()))[1]:
        for name, value in names.items():
            _, held = secrets.own_keys_redacted(value, name)
            if held:
                raise refusal(held)
    for name, value in given.items():
        if name in NOT_TEXT or value is None or isinstance(value, bool | int | float):
            cleaned[name] = value
            continue
        if tool == "set_shared_var" and name == "value" and isinstance(given.get("key"), str):
            # The variable's name says what its value is: DB_PASSWORD=hunter2.
            new, hits = find({given["key"]: value}, "value")
            cleaned[name] = new[given["key"]] if isinstance(new, dict) else value
            found += [
                secrets.SecretFound("value", h.kind, h.start, h.end)
                for h in hits
                if h.where != "value"  # a secret in the name itself is the key's, kept
            ]
            continue
        cleaned[name], hits = find(value, name)
        found += hits
    if not found:
        return args, []
    # A secret in a dict key is found but not rewritten (rooms.secrets): what is left after
    # the redaction is such a key, which cannot be stored, so the write is refused.
    kept = [
        hit
        for name, value in cleaned.items()
        if name not in NOT_TEXT and value is not None
        for hit in find(value, name)[1]
    ]
    if kept:
        raise refusal(kept)
    try:
        return type(args).model_validate(cleaned), found
    except ValidationError:
        # The markers made a text too long for its field: say so rather than cut it.
        raise errors.SecretRefusedError(
            errors.SECRET_TOO_LONG.format(summary=secrets.secret_kinds_summary(found)),
            extra={"redacted": places(found)},
        ) from None


async def arguments_for_room(
    room: RoomRef, tool: str, args: ToolInput
) -> tuple[ToolInput, list[secrets.SecretFound]]:
    """The arguments a write runs with in `room`, by its rule (the room's mode is read only
    when something was found: a clean write costs no round trip)."""
    checked, found = arguments_checked(tool, args)
    if not found:
        return args, []
    policy = (await room_store.room_mode_get(room.keys)).get("secrets") or DEFAULT_POLICY
    if policy == "refuse":
        raise refusal(found)
    if policy == "off":
        return arguments_checked(tool, args, own_only=True)
    return checked, found


def places(found: list[secrets.SecretFound]) -> list[dict[str, Any]]:
    return [{"where": f.where, "kind": f.kind} for f in found]


def refusal(found: list[secrets.SecretFound]) -> errors.SecretRefusedError:
    return errors.SecretRefusedError(
        errors.SECRET_REFUSED.format(summary=secrets.secret_kinds_summary(found)),
        extra={"redacted": places(found)},
    )


def told(found: list[secrets.SecretFound]) -> dict[str, Any]:
    """What the answer of a redacted write carries (its `redacted`)."""
    return {
        "count": len(found),
        "places": places(found),
        "message": secrets.secret_kinds_summary(found)
        + ". The markers were stored instead; share secrets through your secret store, not "
        "the room.",
    }
