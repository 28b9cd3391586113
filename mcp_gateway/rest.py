"""`POST /api/v1/rooms/<roomId>/tools/<tool>` (and `/api/v1/tools/<tool>` for tools that
name no room): the JSON body is the tool's arguments; the answer is the tool's result, or
`{message, code, extra}` with the error's status. Generated from the same registry as MCP,
through the same dispatcher, so both doors agree on every input.

`?tools=core` (or roomd, full) limits the call to that tool profile, as on /mcp. The
credential's default profile does not apply here: a profile exists to keep a model's tool
list short, the REST door has no list, and its callers are scripts calling the tools they
were written for (hooks/roomservice-guard's lease_check, the agent skill's room.sh), which
must not break when a key's MCP connections are given a smaller profile.

An async view: a wait_for_events call holds no thread while it waits.
"""

from __future__ import annotations

import json
import logging

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from calls.runner import tool_run
from config import telemetry
from rooms import errors, profiles, registry
from rooms.errors import DomainError
from rooms.store import connections as connections_store
from tenants.auth import UNAUTHORIZED, bearer_from_header, caller_admit

log = logging.getLogger(__name__)
NOT_JSON = "The body must be a JSON object of the tool's arguments (nested at most ~1,000 deep)."
ROOM_MISMATCH = "roomId in the body ({body}) differs from the room in the URL ({url})."
INTERNAL = "The server failed; retry shortly."


def error_response(exc: DomainError) -> JsonResponse:
    return JsonResponse(exc.body(), status=exc.status, headers=exc.headers())


def unauthorized() -> JsonResponse:
    response = JsonResponse(
        {"message": UNAUTHORIZED, "code": "not_authenticated", "extra": {}}, status=401
    )
    response["WWW-Authenticate"] = 'Bearer realm="roomservice"'
    return response


@csrf_exempt
async def tool_door(request: HttpRequest, tool: str, room_id: str | None = None) -> HttpResponse:
    if request.method != "POST":
        return JsonResponse(
            {"message": "Use POST.", "code": "method_not_allowed", "extra": {}}, status=405
        )
    try:
        admitted = await caller_admit(
            bearer_from_header(request.headers.get("Authorization")), charge=True
        )
    except connections_store.StoreDown:
        return error_response(errors.StoreUnavailableError(errors.STORE_UNAVAILABLE))
    if admitted is None:
        return unauthorized()
    try:
        arguments = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        arguments = None
    if not isinstance(arguments, dict):
        return JsonResponse(
            {"message": NOT_JSON, "code": "invalid_arguments", "extra": {}}, status=400
        )
    try:
        spec = registry.tool_get(tool)
        asked = request.GET.getlist("tools")
        if asked:
            profile = profiles.profile_parse(asked[0] if len(asked) == 1 else ",".join(asked))
            profiles.profile_admit(profile, spec.name)
        if isinstance(spec, registry.RoomTool) and (room_id is not None or spec.names_room):
            if room_id is None:
                raise errors.ToolArgumentsError(
                    f"{tool} acts on a room: POST /api/v1/rooms/<roomId>/tools/{tool}"
                )
            if "roomId" in arguments and arguments["roomId"] != room_id:
                raise errors.ToolArgumentsError(
                    ROOM_MISMATCH.format(body=arguments["roomId"], url=room_id)
                )
            arguments = {**arguments, "roomId": room_id}
        result = await tool_run(admitted.caller, spec, arguments, charge=admitted.charge)
    except DomainError as exc:
        return error_response(exc)
    except Exception:
        log.exception("REST tool %s failed", tool)
        return JsonResponse(
            {"message": telemetry.with_request_id(INTERNAL), "code": "internal", "extra": {}},
            status=503,
        )
    return JsonResponse(result, safe=False, json_dumps_params={"ensure_ascii": False})
