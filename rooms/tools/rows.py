"""A tool's row: its name, input model, output type, flags and the operation that runs it.

Each domain's tools (rooms/tools/<domain>.py) are written as their adapter function under
`@room_tool(...)` or `@caller_tool(...)`, which take only the row's flags: the function's
name is the tool's, its second parameter's type the input model, its return type the
output, and its docstring the description every client reads (tools/list, the OpenAPI
paths, docs/tools.md). The decorator turns the function into its row; rooms/registry.py
collects the rows into the one table the doors are generated from.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Generic, Literal, Protocol, TypeVar, get_type_hints

from pydantic import BaseModel, TypeAdapter

from rooms import results as r
from rooms import schemas as s
from rooms.names import PERSON_PREFIX
from rooms.refs import RoomRef

In = TypeVar("In", bound=s.ToolInput)
RoomIn = TypeVar("RoomIn", bound=s.RoomInput)
Out = TypeVar("Out")


class CallerScope(Protocol):
    """What a tool that names no room may ask of its caller (tenants.access implements it)."""

    async def rooms(self) -> list[r.RoomRow]:
        """The rooms this caller may reach."""
        ...


@dataclass(frozen=True, slots=True)
class _Row(Generic[In, Out]):
    name: str
    input_model: type[In]
    output: TypeAdapter[Out] = field(repr=False)
    description: str
    # True: the tool needs no write capability (it reads; cursor tools move only the
    # caller's own cursor).
    read_only: bool
    # False for calls that change state even when they only read (cursors move), or whose
    # repetition adds something.
    idempotent: bool = True
    # True for calls that wait (wait_for_events): they hold a waiter slot and end when the
    # credential is revoked.
    waits: bool = False
    # What the caller must be allowed to manage besides writing ("rooms": set_room_mode),
    # checked with every other permission, in tenants.access, for every door.
    manages: str | None = None
    # True: it runs on a paused or completed room too (set_room_status), and the door
    # records what it changed (tenants.access.room_status_recorded).
    lifecycle: bool = False
    # False for the one call naming an agent that is not presence (leave_room: the agent
    # says it goes). Every other call naming its acting agent marks it present (acting).
    presence: bool = True
    # For a tool whose roomId may be left out (create_room_from_template): the id of the
    # room the door makes for it, from its arguments and the caller's team (tenants.access.
    # room_made creates it whether or not first touch claims rooms).
    makes_room: Callable[[Any, int], str] | None = field(default=None, repr=False)
    # The docs/protocol.md section that says what the tool guarantees (its anchor: "plan",
    # "typed-context"); docs/tools.md links each tool to it.
    section: str = field(kw_only=True)
    # The tool profiles that list it besides full, which lists every tool (rooms/profiles.py):
    # core, the everyday workflow; roomd, one of roomd's tools (docs/protocol.md "Whose tools").
    core: bool = field(default=False, kw_only=True)
    roomd: bool = field(default=False, kw_only=True)

    def input_schema(self, compact: bool = False) -> dict[str, Any]:
        """The arguments' JSON schema; `compact` for the core profile (compact_schema)."""
        if compact:
            return _compact_input(self.input_model)
        return _input_schema(self.input_model)

    def output_schema(self) -> dict[str, Any]:
        schema = _output_schema(self.name, self.output)
        if self.read_only or _wraps(self.name, self.output):
            return schema
        # Every write's answer may say what was redacted from it (rooms.redaction).
        properties = {**schema.get("properties", {}), "redacted": REDACTED_SCHEMA}
        return {**schema, "properties": properties}

    def wraps_output(self) -> bool:
        """MCP's structuredContent is an object: a list result goes in as {"result": [...]}
        (the SDK's convention), while the text content stays roomd's bare list."""
        return _wraps(self.name, self.output)

    def actors(self) -> tuple[str, ...]:
        """The argument fields that name who acts (bound credentials act only as their agent)."""
        return s.actor_fields(self.input_model)

    def acting(self, args: BaseModel) -> str | None:
        """The agent this call names as acting, which the call marks present (issue 24:
        every act is presence); None for a call that names none, names a person, or is
        not presence (leave_room)."""
        if not self.presence:
            return None
        for name in self.actors():
            given = getattr(args, name)
            # A person's name is refused to anyone but a person (tenants.access.actors_bind),
            # so the plain prefix tells a person's act from an agent's here.
            if isinstance(given, str) and given and not given.startswith(PERSON_PREFIX):
                return given
        return None


@dataclass(frozen=True, slots=True)
class RoomTool(_Row[RoomIn, Out]):
    """A tool on one room: run(RoomRef, args) after the access check made the RoomRef."""

    run: Callable[[RoomRef, RoomIn], Awaitable[Out]] = field(kw_only=True, repr=False)

    @property
    def scope(self) -> Literal["room"]:
        return "room"

    @property
    def names_room(self) -> bool:
        """False for a tool whose room may be left out (create_room_from_template makes
        one): its REST door is also POST /api/v1/tools/<tool>."""
        return "roomId" in self.input_schema().get("required", [])


@dataclass(frozen=True, slots=True)
class CallerTool(_Row[In, Out]):
    """A tool that names no room: run(the caller's scope, args)."""

    run: Callable[[CallerScope, In], Awaitable[Out]] = field(kw_only=True, repr=False)

    @property
    def scope(self) -> Literal["caller"]:
        return "caller"


Tool = RoomTool[Any, Any] | CallerTool[Any, Any]


@cache
def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True)
    schema: dict[str, Any] = _plain(raw, raw.get("$defs", {}), ANY_JSON_ARGUMENT)
    schema.setdefault("properties", {})
    return schema


# What a published schema says for a value pydantic leaves unconstrained (`JsonValue`,
# `Any`: `{}`). The MCP Inspector's portability check flags `{}` (an "untyped schema": some
# clients refuse it, some coerce it to a string), so it is spelled out as one `anyOf` branch
# per JSON type, each with a single `type`, the form that check holds portable.
JSON_TYPES = ("object", "array", "string", "number", "boolean", "null")
# A result's: exactly `{}`, since clients validate every structured result against it.
ANY_JSON_RESULT: dict[str, Any] = {"anyOf": [{"type": t} for t in JSON_TYPES]}
# An argument's: OpenAI and Gemini refuse an array parameter without `items`, so its array
# is an array of any JSON value but another array (the server still takes nested arrays:
# it validates arguments with the pydantic models, not with this schema).
ANY_JSON_ARGUMENT: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "items": {"anyOf": [{"type": t} for t in JSON_TYPES if t != "array"]}}
        if t == "array"
        else {"type": t}
        for t in JSON_TYPES
    ]
}

# Keywords that say something about a value without constraining it.
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
)
# Keywords whose value is a subschema, a list of them, or a name -> subschema map. Every
# other keyword's value (enum, const, default, required ...) is data and is copied as is.
_SUBSCHEMA = frozenset(
    {"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"}
)
_SUBSCHEMAS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SUBSCHEMA_MAPS = frozenset({"properties", "patternProperties"})


def _plain(
    node: Any, defs: dict[str, Any], any_json: dict[str, Any], seen: frozenset[str] = frozenset()
) -> Any:
    """A schema as portable and as cheap to validate as it can be without losing a
    constraint: references inlined (many clients and providers resolve no `$ref`), titles
    dropped, an unconstrained value spelled `any_json`, an unconstrained
    `additionalProperties` left out (the default). Nullable values stay `anyOf` of
    single-`type` branches, not `type` lists, which a client mapping tool schemas onto
    one-`type` dialects (Gemini's) refuses. The MCP Inspector's portability check
    (tests/schema_portability.py) holds every tool's schemas to 0 findings."""
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise ValueError(f"{name} refers to itself: a recursive schema cannot be inlined")
        beside = {key: value for key, value in node.items() if key != "$ref"}
        return _plain({**defs[name], **beside}, defs, any_json, seen | {name})
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs"):
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _plain(sub, defs, any_json, seen) for name, sub in value.items()}
        elif key in _SUBSCHEMAS and isinstance(value, list):
            out[key] = [_plain(sub, defs, any_json, seen) for sub in value]
        elif key in _SUBSCHEMA:
            sub = _plain(value, defs, any_json, seen)
            if key == "additionalProperties" and sub == any_json:
                continue
            out[key] = sub
        else:
            out[key] = value
    if out.keys() <= _ANNOTATIONS:
        out.update(copy.deepcopy(any_json))  # schemas are shared: no two share a part
    return out


# The shared arguments' long texts, as a compact list says them: roomId and idempotencyKey
# say nothing (the server's instructions name the rooms and say once what the key does);
# the full texts are rooms/schemas.py's.
COMPACT_TEXTS: dict[str, str | None] = {
    s.ROOM_ID_TEXT: None,
    s.IDEMPOTENCY_TEXT: None,
    s.AGENT_ID_TEXT: "Your agent name.",
}
# Bounds a client never needs to form a call: the server checks each and its refusal names
# the field and the bound.
_COMPACT_DROPS = frozenset(
    {"minLength", "maxLength", "pattern", "minItems", "maxItems", "additionalProperties"}
)
_NULL = {"type": "null"}


def compact_schema(node: Any) -> Any:
    """A schema that asks no more of a client than `node`, in a third of the bytes (issue
    31: core's descriptions and input schemas within 12 KB): an optional argument's
    `anyOf [X, null]` with `default: null` is X (leaving it out is how a client says null),
    string bounds are left to the server, and the shared arguments' long texts are
    COMPACT_TEXTS. The server validates every call with the full model, so what it accepts
    and refuses does not change."""
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if k not in _COMPACT_DROPS}
    branches = out.get("anyOf")
    if (
        isinstance(branches, list)
        and len(branches) == 2
        and _NULL in branches
        and out.get("default", 0) is None
    ):
        del out["anyOf"], out["default"]
        out = {**compact_schema(next(b for b in branches if b != _NULL)), **out}
    if out.get("description") in COMPACT_TEXTS:
        said = COMPACT_TEXTS[out.pop("description")]
        if said:
            out["description"] = said
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: compact_schema(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = compact_schema(out["items"])
    return out


@cache
def _compact_input(model: type[BaseModel]) -> dict[str, Any]:
    """compact_schema's, and one name for the acting agent: a tool whose actor is `from`
    (or `author`, `requestedBy`) lists that one, required, without its `agentId` alias
    (which the server still takes)."""
    out: dict[str, Any] = compact_schema(_input_schema(model))
    wires = s.actor_alternates(model)
    if wires:
        properties = dict(out["properties"])
        del properties[s.ACTOR_ALTERNATE]
        for wire in wires:
            properties[wire] = {**properties[wire], "description": "Your agent name."}
        out["properties"] = properties
        out["required"] = [*out.get("required", []), *wires]
    return out


@cache
def _output_schema(name: str, output: TypeAdapter[Any]) -> dict[str, Any]:
    raw = output.json_schema(by_alias=True)
    schema: dict[str, Any] = _plain(raw, raw.get("$defs", {}), ANY_JSON_RESULT)
    if schema.get("type") == "object":
        return schema
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


REDACTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Secrets found in what you wrote, replaced by markers before it was stored.",
    "properties": {
        "count": {"type": "integer"},
        "places": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"where": {"type": "string"}, "kind": {"type": "string"}},
                "required": ["where", "kind"],
            },
        },
        "message": {"type": "string"},
    },
    "required": ["count", "places", "message"],
}


@cache
def _wraps(name: str, output: TypeAdapter[Any]) -> bool:
    return output.json_schema(by_alias=True).get("type") != "object"


def _parts(
    run: Callable[..., Any], name: str | None = None
) -> tuple[str, Any, TypeAdapter[Any], str]:
    """The row's name, input model, output and description, as its adapter says them: its
    name, the annotation of its second parameter, its return annotation (resolved in its
    module, which postpones annotations) and its docstring as one line (what tools/list and
    docs/tools.md print)."""
    name = name or run.__name__
    assert run.__doc__, f"tool {name}: its adapter's docstring is its description"
    hints = get_type_hints(run)
    args = list(inspect.signature(run).parameters)
    return name, hints[args[1]], TypeAdapter(hints["return"]), " ".join(run.__doc__.split())


def room_tool(
    *,
    read_only: bool,
    idempotent: bool = True,
    waits: bool = False,
    manages: str | None = None,
    lifecycle: bool = False,
    makes_room: Callable[[Any, int], str] | None = None,
    presence: bool = True,
    section: str,
    core: bool = False,
    roomd: bool = False,
    name: str | None = None,
) -> Callable[[Callable[[RoomRef, RoomIn], Awaitable[Out]]], RoomTool[RoomIn, Out]]:
    """The row of a tool on one room, from its adapter (see the module's docstring); `name`
    only where the tool's differs from the adapter's."""

    def row(run: Callable[[RoomRef, RoomIn], Awaitable[Out]]) -> RoomTool[RoomIn, Out]:
        return RoomTool(
            *_parts(run, name),
            read_only=read_only,
            idempotent=idempotent,
            waits=waits,
            manages=manages,
            lifecycle=lifecycle,
            makes_room=makes_room,
            presence=presence,
            section=section,
            core=core,
            roomd=roomd,
            run=run,
        )

    return row


def caller_tool(
    *, read_only: bool, section: str, core: bool = False, roomd: bool = False
) -> Callable[[Callable[[CallerScope, In], Awaitable[Out]]], CallerTool[In, Out]]:
    """The row of a tool that names no room, from its adapter."""

    def row(run: Callable[[CallerScope, In], Awaitable[Out]]) -> CallerTool[In, Out]:
        return CallerTool(
            *_parts(run), read_only=read_only, section=section, core=core, roomd=roomd, run=run
        )

    return row
