"""The agent-facing doors in the OpenAPI schema: one path per tool of the registry (its
input model as the request body, its output type as the 200 response), the event stream and
the hooks endpoint.
A drf-spectacular postprocessing hook adds them to the account API's schema."""

from __future__ import annotations

import copy
from typing import Any

from rooms import profiles, registry


def _inline_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0 has no `$defs`: inline pydantic's local definitions (on a copy: the
    registry's schemas are built once and shared)."""
    schema = copy.deepcopy(schema)
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs.get(ref.rsplit("/", 1)[-1], {}))
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    return resolve(schema)  # type: ignore[no-any-return]


PROFILE_PARAMETER = {
    "name": "tools",
    "in": "query",
    "required": False,
    "description": "Limit the call to a tool profile, as on /mcp?tools= (a tool outside it: "
    "404 tool_not_in_profile). The credential's default profile does not apply here.",
    "schema": {"type": "string", "enum": list(profiles.PROFILES)},
}


def rest_tool_paths() -> dict[str, Any]:
    """OpenAPI paths for the tool door, one per tool, from the registry's input models."""
    paths: dict[str, Any] = {}
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for spec in registry.TOOLS:
        schema = _inline_defs(spec.input_schema())
        schema.get("properties", {}).pop("roomId", None)
        if "required" in schema:
            schema["required"] = [r for r in schema["required"] if r != "roomId"]
            if not schema["required"]:
                del schema["required"]
        parameters: list[dict[str, Any]] = []
        if isinstance(spec, registry.RoomTool):
            path = f"/api/v1/rooms/{{room_id}}/tools/{spec.name}"
            parameters = [
                {"name": "room_id", "in": "path", "required": True, "schema": {"type": "string"}}
            ]
        else:
            path = f"/api/v1/tools/{spec.name}"
        parameters.append(PROFILE_PARAMETER)
        paths[path] = {
            "post": {
                "operationId": f"tool_{spec.name}",
                "summary": spec.name,
                "description": spec.description,
                "tags": ["tools"],
                "parameters": parameters,
                "requestBody": {
                    "content": {"application/json": {"schema": schema}},
                    "required": False,
                },
                "responses": {
                    "200": {
                        "description": "the tool's result (the same JSON as MCP's text content)",
                        "content": {
                            "application/json": {
                                "schema": _inline_defs(spec.output.json_schema(by_alias=True))
                            }
                        },
                    },
                    "400": {"description": "invalid arguments", "content": error},
                    "401": {"description": "missing or unknown bearer", "content": error},
                    "403": {"description": "not permitted for this credential", "content": error},
                    "404": {
                        "description": "unknown room/id (or not yours: the same answer)",
                        "content": error,
                    },
                    "429": {"description": "rate limited (Retry-After)", "content": error},
                },
            }
        }
    paths["/api/v1/rooms/{room_id}/events/stream"] = {
        "get": {
            "operationId": "room_events_stream",
            "summary": "Server-sent events of a room",
            "description": "Each new event as `id: <event id>` + `data: <event JSON>`; send "
            "Last-Event-ID to resume without gaps; `: keep-alive` comments while quiet.",
            "tags": ["events"],
            "parameters": [
                {"name": "room_id", "in": "path", "required": True, "schema": {"type": "string"}},
                {
                    "name": "Last-Event-ID",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string"},
                },
            ],
            "responses": {
                "200": {
                    "description": "an event stream",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}},
                },
                "401": {"description": "missing or unknown bearer", "content": error},
                "404": {"description": "not found or not yours", "content": error},
                "429": {"description": "too many open streams for the team", "content": error},
            },
        }
    }
    paths["/api/v1/rooms/{room_id}/hooks/{client}"] = {
        "post": {
            "operationId": "room_hook",
            "summary": "A coding agent's hook event (client: claude-code)",
            "description": "The client's hook JSON as the body (Claude Code's HTTP hooks), "
            "the bearer as at the tool door, the agent the credential's own or the one "
            "X-Roomservice-Agent names. The answer is the client's hook output; anything "
            "that goes wrong is 200 with {} (no decision). docs/hooks.md, "
            '"Claude Code over HTTP".',
            "tags": ["hooks"],
            "parameters": [
                {"name": "room_id", "in": "path", "required": True, "schema": {"type": "string"}},
                {
                    "name": "client",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string", "enum": ["claude-code"]},
                },
                {
                    "name": "X-Roomservice-Agent",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string"},
                },
            ],
            "requestBody": {
                "content": {"application/json": {"schema": {"type": "object"}}},
                "required": True,
            },
            "responses": {
                "200": {
                    "description": "the client's hook output; {} is no decision",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
            },
        }
    }
    return paths


def add_tool_paths(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: document the async doors too."""
    result.setdefault("paths", {}).update(rest_tool_paths())
    return result
