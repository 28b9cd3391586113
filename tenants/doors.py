"""Two async HTTP doors onto the rooms, beside /mcp:

- `POST /api/v1/rooms/<roomId>/tools/<tool>` (and `/api/v1/tools/<tool>` for tools that
  name no room): the JSON body is the tool's arguments; the answer is the tool's result,
  or `{message, code, extra}` with the error's status. Generated from the same registry
  as MCP, through the same `tool_run`, so both doors agree on every input.
- `GET /api/v1/rooms/<roomId>/events/stream`: server-sent events, one per room event,
  the stream id as the SSE id; resumes after `Last-Event-ID`; keep-alive comments.

Both are async views: a wait_for_events call or a stream holds no thread while it waits.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from rooms import clock, errors, registry, selectors, store
from rooms.errors import DomainError
from tenants.access import room_access, tool_run
from tenants.auth import UNAUTHORIZED, Caller, bearer_from_header, caller_from_bearer
from tenants.db import db_run
from tenants.models import Membership, Room

log = logging.getLogger(__name__)
NOT_JSON = "The body must be a JSON object of the tool's arguments."
ROOM_MISMATCH = "roomId in the body ({body}) differs from the room in the URL ({url})."
TOO_MANY_STREAMS = "This team already has {cap} event streams open; close one and retry."


def _error(exc: DomainError) -> JsonResponse:
    return JsonResponse(exc.body(), status=exc.status, headers=exc.headers())


def _unauthorized() -> JsonResponse:
    response = JsonResponse(
        {"message": UNAUTHORIZED, "code": "not_authenticated", "extra": {}}, status=401
    )
    response["WWW-Authenticate"] = 'Bearer realm="roomservice"'
    return response


async def _bearer_caller(request: HttpRequest) -> Caller | None:
    return await caller_from_bearer(bearer_from_header(request.headers.get("Authorization")))


@csrf_exempt
async def tool_door(request: HttpRequest, tool: str, room_id: str | None = None) -> HttpResponse:
    if request.method != "POST":
        return JsonResponse(
            {"message": "Use POST.", "code": "method_not_allowed", "extra": {}}, status=405
        )
    caller = await _bearer_caller(request)
    if caller is None:
        return _unauthorized()
    try:
        arguments = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        arguments = None
    if not isinstance(arguments, dict):
        return JsonResponse(
            {"message": NOT_JSON, "code": "invalid_arguments", "extra": {}}, status=400
        )
    try:
        spec = registry.tool_get(tool)
        if spec.scope == "room":
            if room_id is None:
                raise errors.ToolArgumentsError(
                    f"{tool} acts on a room: POST /api/v1/rooms/<roomId>/tools/{tool}"
                )
            if "roomId" in arguments and arguments["roomId"] != room_id:
                raise errors.ToolArgumentsError(
                    ROOM_MISMATCH.format(body=arguments["roomId"], url=room_id)
                )
            arguments = {**arguments, "roomId": room_id}
        result = await tool_run(caller, tool, arguments)
    except DomainError as exc:
        return _error(exc)
    except Exception:
        log.exception("REST tool %s failed", tool)
        return JsonResponse(
            {"message": "The server failed; retry shortly.", "code": "internal", "extra": {}},
            status=503,
        )
    return JsonResponse(result, safe=False, json_dumps_params={"ensure_ascii": False})


def _session_caller_for_room(user_id: int, room_id: str) -> Caller | None:
    room = Room.objects.select_related("team").filter(room_id=room_id).first()
    if room is None or not Membership.objects.filter(user_id=user_id, team=room.team).exists():
        return None
    return Caller(team_id=room.team.slug, kind="user", credential_id=str(user_id))


async def event_stream(request: HttpRequest, room_id: str) -> HttpResponseBase:
    caller = await _bearer_caller(request) if request.headers.get("Authorization") else None
    if caller is None and not request.headers.get("Authorization"):
        user = await request.auser()
        if user.is_authenticated:
            caller = await db_run(_session_caller_for_room, user.pk, room_id)
            if caller is None:
                return _error(errors.RoomAccessError(errors.ROOM_ACCESS_DENIED))
    if caller is None:
        return _unauthorized()
    try:
        # The same check (and message) as every tool's roomId argument.
        registry.arguments_parse(registry.tool_get("read_plan"), {"roomId": room_id})
        ref = await room_access(caller, room_id, False)
    except DomainError as exc:
        return _error(exc)
    stream_id = secrets.token_hex(8)
    keepalive = float(settings.SSE_KEEPALIVE_SECONDS)
    lease_ms = int(keepalive * 3000)
    cap = int(settings.SSE_STREAMS_PER_TEAM)
    if not await store.stream_admit(
        caller.team_id, stream_id, now_ms=clock.now_ms(), lease_ms=lease_ms, cap=cap
    ):
        response = JsonResponse(
            {"message": TOO_MANY_STREAMS.format(cap=cap), "code": "too_many_streams", "extra": {}},
            status=429,
        )
        response["Retry-After"] = str(int(keepalive))
        return response
    # Fix the starting point now, before the first byte goes out, so an event written
    # while the client is still reading the headers is not skipped.
    after = request.headers.get("Last-Event-ID") or request.GET.get("lastEventId")
    if not after:
        after = await selectors.event_newest_id(ref)

    async def body() -> AsyncIterator[bytes]:
        renewed = time.monotonic()
        try:
            yield f"retry: 2000\n: stream {stream_id} for {room_id}\n\n".encode()
            async for event in selectors.event_follow(
                ref, after=after, keepalive_seconds=keepalive
            ):
                if event is None:
                    yield b": keep-alive\n\n"
                else:
                    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
                    yield f"id: {event['id']}\ndata: {data}\n\n".encode()
                # Renew the team slot on a timer, busy or quiet; a stream that lost its
                # slot (the team went over its cap meanwhile) ends.
                if time.monotonic() - renewed >= keepalive:
                    renewed = time.monotonic()
                    if not await store.stream_admit(
                        caller.team_id, stream_id, now_ms=clock.now_ms(), lease_ms=lease_ms, cap=cap
                    ):
                        return
        finally:
            await store.stream_release(caller.team_id, stream_id)

    stream = StreamingHttpResponse(body(), content_type="text/event-stream; charset=utf-8")
    stream["Cache-Control"] = "no-cache"
    stream["X-Accel-Buffering"] = "no"
    return stream


def _inline_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0 has no `$defs`: inline pydantic's local definitions."""
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
        parameters = []
        if spec.scope == "room":
            path = f"/api/v1/rooms/{{room_id}}/tools/{spec.name}"
            parameters = [
                {"name": "room_id", "in": "path", "required": True, "schema": {"type": "string"}}
            ]
        else:
            path = f"/api/v1/tools/{spec.name}"
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
                        "content": {"application/json": {"schema": {}}},
                    },
                    "400": {"description": "invalid arguments", "content": error},
                    "401": {"description": "missing or unknown bearer", "content": error},
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
    return paths


def add_tool_paths(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: document the async doors too."""
    result.setdefault("paths", {}).update(rest_tool_paths())
    return result
