"""`POST /api/v1/rooms/<roomId>/tools/<tool>` (and `/api/v1/tools/<tool>` for tools that
name no room): the JSON body is the tool's arguments; the answer is the tool's result, or
`{message, code, extra}` with the error's status. Generated from the same registry as MCP,
through the same dispatcher, so both doors agree on every input.

`?tools=core` (or roomd, full) limits the call to that tool profile, as on /mcp. The
credential's default profile does not apply here: a profile exists to keep a model's tool
list short, the REST door has no list, and its callers are scripts calling the tools they
were written for (hooks/roomservice-guard's lease_check, the agent skill's room.sh), which
must not break when a key's MCP connections are given a smaller profile.

An async view: a wait_for_events call holds no thread while it waits. Its callers here
(the guard's hooks) can wait longer than a tool call may, so this door lets one wait up to
LONG_WAIT_MAX_MS (rooms.refs) and keeps the connection alive meanwhile: an answer that has
not come within SSE_KEEPALIVE_SECONDS starts a 200 whose body is a newline every
SSE_KEEPALIVE_SECONDS (JSON allows whitespace before a value; a proxy sees bytes and keeps
an idle connection) and then the answer, or the error's `{message, code, extra}`: its
status was sent already. One idle agent arms one wait for minutes, not one every 30 s.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from calls.runner import tool_run
from config import telemetry
from rooms import errors, profiles, registry
from rooms.errors import DomainError
from rooms.refs import LONG_WAIT_MAX_MS
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
async def tool_door(
    request: HttpRequest, tool: str, room_id: str | None = None
) -> HttpResponseBase:
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
        if spec.waits:
            return await _kept_alive(
                tool,
                tool_run(
                    admitted.caller,
                    spec,
                    arguments,
                    charge=admitted.charge,
                    wait_most_ms=LONG_WAIT_MAX_MS,
                ),
            )
        result = await tool_run(admitted.caller, spec, arguments, charge=admitted.charge)
    except DomainError as exc:
        return error_response(exc)
    except Exception:
        log.exception("REST tool %s failed", tool)
        return _internal()
    return JsonResponse(result, safe=False, json_dumps_params={"ensure_ascii": False})


def _internal() -> JsonResponse:
    return JsonResponse(
        {"message": telemetry.with_request_id(INTERNAL), "code": "internal", "extra": {}},
        status=503,
    )


async def _kept_alive(tool: str, run: Coroutine[Any, Any, Any]) -> HttpResponseBase:
    """A waiting tool's answer: as any other's when it comes within a keep-alive period,
    else streamed after keep-alive newlines (the module's docstring)."""
    keepalive = float(settings.SSE_KEEPALIVE_SECONDS)
    task = asyncio.ensure_future(run)
    try:
        done, _ = await asyncio.wait({task}, timeout=keepalive)
    except BaseException:  # the client left (the view is cancelled): stop the wait
        task.cancel()
        raise
    if done:
        return JsonResponse(task.result(), safe=False, json_dumps_params={"ensure_ascii": False})

    async def body() -> AsyncIterator[bytes]:
        try:
            while not (await asyncio.wait({task}, timeout=keepalive))[0]:
                yield b"\n"
            try:
                answer = task.result()
            except DomainError as exc:
                answer = exc.body()
            except Exception:
                log.exception("REST tool %s failed", tool)
                answer = json.loads(_internal().content)
            yield json.dumps(answer, cls=DjangoJSONEncoder, ensure_ascii=False).encode()
        finally:
            task.cancel()  # the client left: the wait ends and frees its slot

    return StreamingHttpResponse(body(), content_type="application/json")
