"""`GET /api/v1/rooms/<roomId>/events/stream`: server-sent events, one per room event, the
stream id as the SSE id; resumes after `Last-Event-ID`; keep-alive comments.

Authenticated by a bearer, or by a dashboard session (the room page follows its room live).
A stream spends one of its caller's streams in this process (a guest's own and one of its
team's guests' together, never its team's own; tenants.budgets, which also keeps a
process's last streams for other teams); while quiet it reads and writes nothing in Redis
(only keep-alive comments go out), and it ends — with an
`event: revoked` frame — as soon as its credential is revoked, expires, or loses the room
(calls.live), and in any case after SSE_MAX_LIFETIME_SECONDS, so every long-lived client
is checked again when it reconnects.
`?addressedTo=<agentId>` carries only the events for that agent (a message to its
recipients, any other event to "all" or to it: rooms.records.event_addressed_to).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator

from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase, StreamingHttpResponse

from calls import live
from calls.runner import until_lost
from mcp_gateway.rest import error_response, unauthorized
from rooms.errors import (
    STORE_UNAVAILABLE,
    CredentialLostError,
    DomainError,
    StoreUnavailableError,
    ToolArgumentsError,
)
from rooms.records import event_addressed_to, text_of
from rooms.refs import RoomRef
from rooms.selectors import events as events_selectors
from rooms.store import connections as connections_store
from tenants import access, budgets
from tenants.auth import PersonSession, Presented, bearer_from_header, caller_watching
from tenants.capabilities import Caller

UNAVAILABLE_FRAME = (
    "event: unavailable\ndata: "
    + json.dumps({"message": STORE_UNAVAILABLE, "code": "store_unavailable"})
    + "\n\n"
).encode()


async def _presented(request: HttpRequest, room_id: str) -> Presented | None:
    if request.headers.get("Authorization"):
        return bearer_from_header(request.headers.get("Authorization"))
    user = await request.auser()
    if user.is_authenticated:
        return PersonSession(user_id=user.pk, room_id=room_id)
    return None


ADDRESSED_TO_BAD = "addressedTo must be an agentId of 1-128 characters."


async def event_stream(request: HttpRequest, room_id: str) -> HttpResponseBase:
    addressed_to = request.GET.get("addressedTo")
    if addressed_to is not None and not 1 <= len(addressed_to) <= 128:
        return error_response(ToolArgumentsError(ADDRESSED_TO_BAD))
    try:
        presented = await _presented(request, room_id)
        caller, epoch = await caller_watching(presented) if presented is not None else (None, None)
        if caller is None:
            if isinstance(presented, PersonSession):
                return error_response(access.denied())  # signed in, but not to this team
            return unauthorized()
        ref = await access.room_access(caller, room_id, write=False, epoch=epoch)
        keepalive = float(settings.SSE_KEEPALIVE_SECONDS)
        slots = budgets.slot_hold(caller, "streams")
        await slots.__aenter__()
    except DomainError as exc:
        return error_response(exc)
    except connections_store.StoreDown:
        return error_response(StoreUnavailableError(STORE_UNAVAILABLE))
    try:
        # Fix the starting point now, before the first byte goes out, so an event written
        # while the client is still reading the headers is not skipped.
        after = request.headers.get("Last-Event-ID") or request.GET.get("lastEventId")
        if not after:
            after = await events_selectors.event_newest_id(ref)
    except connections_store.StoreDown:
        await slots.__aexit__(None, None, None)
        return error_response(StoreUnavailableError(STORE_UNAVAILABLE))

    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in _frames(caller, ref, after, keepalive, addressed_to):
                yield chunk
        finally:
            await slots.__aexit__(None, None, None)

    stream = StreamingHttpResponse(body(), content_type="text/event-stream; charset=utf-8")
    stream["Cache-Control"] = "no-cache"
    stream["X-Accel-Buffering"] = "no"
    return stream


async def _frames(
    caller: Caller,
    ref: RoomRef,
    after: str,
    keepalive: float,
    addressed_to: str | None,
) -> AsyncIterator[bytes]:
    started = time.monotonic()
    lifetime = float(settings.SSE_MAX_LIFETIME_SECONDS)
    yield f"retry: 2000\n: stream {secrets.token_hex(8)} for {ref.room_id}\n\n".encode()
    async with live.credential_held(caller, room_id=ref.room_id) as use:
        follow = events_selectors.event_follow(ref, after=after, keepalive_seconds=keepalive)
        try:
            while True:
                try:
                    event = await until_lost(anext(follow), use.lost)
                except CredentialLostError as exc:
                    data = json.dumps({"message": exc.message, "code": exc.code})
                    yield f"event: revoked\ndata: {data}\n\n".encode()
                    return
                except connections_store.StoreDown:
                    # Redis went away: end the stream; the client reconnects with
                    # Last-Event-ID once it is back, and misses nothing.
                    yield UNAVAILABLE_FRAME
                    return
                if event is None:
                    yield b": keep-alive\n\n"
                elif addressed_to is not None and not event_addressed_to(event, addressed_to):
                    pass  # for someone else: its id is not this stream's to resume from
                else:
                    data = text_of(event)  # made once for every stream it reaches
                    yield f"id: {event['id']}\ndata: {data}\n\n".encode()
                now = time.monotonic()
                if now - started >= lifetime:
                    return  # the client reconnects with Last-Event-ID, and is checked again
        finally:
            await follow.aclose()
