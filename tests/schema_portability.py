"""The MCP Inspector's tool-schema portability check, ported to Python for the tests.

The Inspector (modelcontextprotocol/inspector, `core/json/schemaLint.ts`, its
`lintToolSchemas`) reports the constructs in a tool's inputSchema or outputSchema that are
legal JSON Schema yet refused or mishandled by the clients and model providers a server
meets. tests/fixtures/inspector/SOURCE.md names the version read and its rules; this
module keeps the same rules, the same walk over subschema positions and the same paths, so
a test here counts what the Inspector's Tools tab and `--strict` report count.

Rules (severity, name):
- error `boolean-schema`: a bare `true`/`false` where a schema object is expected
  (allowed under additionalProperties, unevaluatedProperties, additionalItems,
  unevaluatedItems).
- warning `type-union`: `type` is an array of distinct JSON Schema type names.
- warning `remote-ref`: a `$ref` that does not start with `#`, unless the document
  declares an `$id` somewhere (then refs are not classified).
- warning `untyped-schema`: a schema with no constraining keyword (only annotations such
  as title/description/default, or only `$defs`), except directly under `not`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]
Kind = Literal["inputSchema", "outputSchema"]

# Keywords whose value is a schema or, by design, a boolean.
BOOLEAN_VALUED = frozenset(
    {"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
)
SUBSCHEMA = (
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
)
SUBSCHEMA_ARRAY = ("allOf", "anyOf", "oneOf", "prefixItems")
SUBSCHEMA_MAP = (
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
)
# An allowlist: a schema constrains its instance only if it carries one of these (or an
# `if` with a `then` or an `else`). Annotations, `$defs` and identifiers constrain nothing.
CONSTRAINING = frozenset(
    {
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "items",
        "prefixItems",
        "contains",
        "additionalItems",
        "unevaluatedItems",
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "dependentSchemas",
        "dependencies",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
    }
)
JSON_TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
MAX_DEPTH = 64
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: Severity
    schema: Kind
    path: str

    def __str__(self) -> str:
        where = f"{self.schema}.{self.path}" if self.path else self.schema
        return f"{self.severity} {self.rule} at {where}"


def _child(parent: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key)}]"


def _subschemas(node: dict[str, Any], path: str) -> list[tuple[Any, str, str]]:
    """Every subschema position under `node` as (value, path, parent keyword), in the
    Inspector's order: maps, then arrays, then single subschemas."""
    found: list[tuple[Any, str, str]] = []
    for key in SUBSCHEMA_MAP:
        value = node.get(key)
        if isinstance(value, dict):
            found += [(sub, _child(_child(path, key), n), key) for n, sub in value.items()]
    for key in SUBSCHEMA_ARRAY:
        value = node.get(key)
        if isinstance(value, list):
            found += [(sub, f"{_child(path, key)}[{i}]", key) for i, sub in enumerate(value)]
    for key in SUBSCHEMA:
        if key not in node:
            continue
        value = node[key]
        if key == "items" and isinstance(value, list):  # the draft-04 tuple form
            found += [(sub, f"{_child(path, key)}[{i}]", key) for i, sub in enumerate(value)]
        else:
            found.append((value, _child(path, key), key))
    return found


def _declares_id(node: Any, depth: int = 0) -> bool:
    if depth > MAX_DEPTH or not isinstance(node, dict):
        return False
    if isinstance(node.get("$id"), str) and node["$id"]:
        return True
    return any(_declares_id(sub, depth + 1) for sub, _, _ in _subschemas(node, ""))


def _is_type_union(types: list[Any]) -> bool:
    """A legal union (the rule stays quiet on a malformed `type` array)."""
    return (
        bool(types)
        and all(isinstance(t, str) and t in JSON_TYPES for t in types)
        and len(set(types)) == len(types)
    )


def _constrains(node: dict[str, Any]) -> bool:
    return any(key in CONSTRAINING for key in node) or (
        "if" in node and ("then" in node or "else" in node)
    )


def _walk(
    node: Any,
    path: str,
    keyword: str | None,
    depth: int,
    kind: Kind,
    ids: bool,
    out: list[Finding],
) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(node, bool):
        if keyword not in BOOLEAN_VALUED:
            out.append(Finding("boolean-schema", "error", kind, path))
        return
    if not isinstance(node, dict):
        return  # not a schema at all: the SDK's parser refuses it, not this check
    types = node.get("type")
    if isinstance(types, list) and _is_type_union(types):
        out.append(Finding("type-union", "warning", kind, path))
    ref = node.get("$ref")
    if isinstance(ref, str) and ref and not ref.startswith("#") and not ids:
        out.append(Finding("remote-ref", "warning", kind, path))
    if not _constrains(node) and keyword != "not":
        out.append(Finding("untyped-schema", "warning", kind, path))
    for sub, sub_path, sub_keyword in _subschemas(node, path):
        _walk(sub, sub_path, sub_keyword, depth + 1, kind, ids, out)


def portability_findings(tool: dict[str, Any]) -> list[Finding]:
    """The Inspector's findings for one tools/list tool: inputSchema first, then
    outputSchema, each in walk order."""
    out: list[Finding] = []
    for kind in ("inputSchema", "outputSchema"):
        if kind in tool:
            schema = tool[kind]
            _walk(schema, "", None, 0, kind, _declares_id(schema), out)
    return out


def portability_warnings(tool: dict[str, Any]) -> list[str]:
    """Every finding (warnings and errors alike) as one line: `<severity> <rule> at <path>`."""
    return [str(finding) for finding in portability_findings(tool)]
