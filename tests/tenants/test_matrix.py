"""The access-control matrix (issue point 11): every MCP tool and every REST endpoint, called
with every kind of credential, and the exact outcome of each cell.

Credentials (columns):

- none                no Authorization header
- malformed_*         a header that carries no bearer secret: another scheme (even with the
                      right secret), "Bearer" and nothing, "Bearer" and blanks
- unknown             a well-formed key nobody issued
- revoked             a team-a key, used once (so it sat in the bearer cache), then revoked
- expired_invite      an invite to room-a whose expiry has passed
- other_team          team-b's live key
- other_room_invite   team-b's live invite to room-b (used against room-a)
- sibling_room_invite team-a's own live invite to room-a2 (used against room-a): an invite
                      reaches its one room even inside its own team
- right               team-a's live key
- static              team-a's static key from settings.API_KEYS (the only kind that may
                      create teams)

Tenancy is sacred: a refused caller learns nothing and changes nothing, and "not yours"
looks exactly like "missing".
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

import httpx
import pytest
import redis
from asgiref.sync import async_to_sync
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from config.asgi import application
from mcp_gateway.app import UNAUTHORIZED as MCP_UNAUTHORIZED
from rooms import errors as room_errors
from rooms import registry, store
from rooms.keys import RoomKeys, prefix
from tenants import errors, selectors, services
from tenants.apis import UNAUTHORIZED as REST_UNAUTHORIZED
from tenants.auth import caller_from_bearer
from tenants.credentials import INVITE_PREFIX, KEY_PREFIX
from tenants.db import db_run
from tenants.models import ApiKey, AuditEvent, Invite, Room, Team
from tests.rooms.test_registry import VALID_ARGS

pytestmark = pytest.mark.django_db(transaction=True)

ROOM_A = "room-a"
ROOM_A2 = "room-a2"
ROOM_B = "room-b"
MISSING_ROOM = "room-nobody-has"
STATIC_SECRET = "static-" + secrets.token_urlsafe(24)
UNKNOWN_SECRET = KEY_PREFIX + "doesnotexist" + secrets.token_urlsafe(20)

UNAUTHENTICATED = [
    "none",
    "malformed_scheme",
    "malformed_empty",
    "malformed_blank",
    "unknown",
    "revoked",
    "expired_invite",
]
FOREIGN = ["other_team", "other_room_invite", "sibling_room_invite"]
ALLOWED = ["right", "static"]
CREDENTIALS = [*UNAUTHENTICATED, *FOREIGN, *ALLOWED]

TOOL_NAMES = [t.name for t in registry.TOOLS]
ROOM_TOOLS = [t.name for t in registry.TOOLS if t.scope == "room"]
CALLER_TOOLS = [t.name for t in registry.TOOLS if t.scope == "caller"]


def _unknown_id_messages() -> dict[str, str]:
    """What the right caller meets in a fresh, empty room-a when VALID_ARGS names an id that
    does not exist: the "Unknown ..." message (with the empty-room hint), never the access
    denial."""

    def task(tool: str) -> str:
        task_id = VALID_ARGS[tool]["taskId"]
        return room_errors.TASK_NOT_FOUND.format(task_id=task_id, hint=room_errors.TASK_HINT_EMPTY)

    def context(tool: str) -> str:
        entry_id = VALID_ARGS[tool]["id"]
        hint = room_errors.CONTEXT_HINT_EMPTY
        return room_errors.CONTEXT_NOT_FOUND.format(entry_id=entry_id, hint=hint)

    def event(tool: str, field: str) -> str:
        event_id = VALID_ARGS[tool][field]
        return room_errors.EVENT_NOT_FOUND.format(
            event_id=event_id, hint=room_errors.EVENT_HINT_EMPTY
        )

    return {
        "update_task": task("update_task"),
        "get_task": task("get_task"),
        "read_context": context("read_context"),
        "update_context": context("update_context"),
        "mark_event_read": event("mark_event_read", "eventId"),
        "get_event_reads": event("get_event_reads", "eventId"),
        "reply_to_event": event("reply_to_event", "replyToId"),
    }


UNKNOWN_ID = _unknown_id_messages()


# --- The world every cell runs in --------------------------------------------------------


@dataclass
class World:
    auth: dict[str, str | None]  # credential -> the Authorization header (None: no header)
    team_a: Team
    team_b: Team
    room_a: Room
    room_a2: Room
    room_b: Room
    right_key: ApiKey
    spare_key: ApiKey  # a live team-a key: the target of POST /keys/<id>/revoke
    revoked_key: ApiKey
    other_key: ApiKey
    guest_invite: Invite  # a live team-a invite to room-a: the target of invite revoke
    expired_invite: Invite
    other_invite: Invite
    sibling_invite: Invite


@pytest.fixture(scope="module")
def raw_redis() -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(os.environ["REDIS_URL"])
    yield r
    r.close()


@pytest.fixture
def world(settings: Any, raw_redis: redis.Redis) -> World:
    settings.API_KEYS = f"team-a:{STATIC_SECRET}"
    if connection.vendor == "sqlite":
        # ~400 cells each build and flush a small world: a throwaway test database need
        # not fsync every commit (this connection only; it halves the file's runtime).
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA synchronous=OFF")
    # Room state lives in Redis, which outlives each test's database: start from nothing.
    for room_id in (ROOM_A, ROOM_A2, ROOM_B, MISSING_ROOM):
        keys = RoomKeys(room_id)
        raw_redis.delete(*keys.durable(), keys.active_mark, keys.lock("db"))
    return async_to_sync(_in_one_loop)(world_build)


async def _in_one_loop(build: Callable[[], World]) -> World:
    """Build the world on one event loop and one Redis pool (the services' own store calls
    join it, as they do under the ASGI server), closed at the end: a fast setup."""
    try:
        return await db_run(build)
    finally:
        await store.close_client()


def world_build() -> World:
    team_a = services.team_for_slug("team-a")
    team_b = services.team_for_slug("team-b")
    right = services.api_key_create(team=team_a, name="right")
    spare = services.api_key_create(team=team_a, name="spare")
    revoked = services.api_key_create(team=team_a, name="revoked")
    # Used once while live, so the bearer cache knows it; revoking must forget it.
    assert store.run_sync(caller_from_bearer, revoked.secret) is not None
    services.api_key_revoke(key=revoked.key)
    other = services.api_key_create(team=team_b, name="b-key")

    room_a = services.room_create(team=team_a, room_id=ROOM_A, name="A", actor="system")
    room_a2 = services.room_create(team=team_a, room_id=ROOM_A2, name="A2", actor="system")
    room_b = services.room_create(team=team_b, room_id=ROOM_B, name="B", actor="system")
    now = timezone.now()
    expired = services.invite_create(
        room=room_a, label="expired", expires_at=now - timedelta(hours=1)
    )
    guest = services.invite_create(room=room_a, label="guest", expires_at=now + timedelta(hours=1))
    other_invite = services.invite_create(room=room_b, label="b-guest")
    sibling = services.invite_create(room=room_a2, label="a2-guest")

    auth: dict[str, str | None] = {
        "none": None,
        "malformed_scheme": f"Token {right.secret}",
        "malformed_empty": "Bearer",
        "malformed_blank": "Bearer    ",
        "unknown": f"Bearer {UNKNOWN_SECRET}",
        "revoked": f"Bearer {revoked.secret}",
        "expired_invite": f"Bearer {expired.secret}",
        "other_team": f"Bearer {other.secret}",
        "other_room_invite": f"Bearer {other_invite.secret}",
        "sibling_room_invite": f"Bearer {sibling.secret}",
        "right": f"Bearer {right.secret}",
        "static": f"Bearer {STATIC_SECRET}",
    }
    assert set(auth) == set(CREDENTIALS)
    return World(
        auth=auth,
        team_a=team_a,
        team_b=team_b,
        room_a=room_a,
        room_a2=room_a2,
        room_b=room_b,
        right_key=right.key,
        spare_key=spare.key,
        revoked_key=revoked.key,
        other_key=other.key,
        guest_invite=guest.invite,
        expired_invite=expired.invite,
        other_invite=other_invite.invite,
        sibling_invite=sibling.invite,
    )


def redis_room_state(r: redis.Redis, room_id: str) -> dict[bytes, bytes | None]:
    """Every key of a room, serialized (DUMP ignores TTLs, so a refreshed TTL is no change)."""
    keys = RoomKeys(room_id)
    pattern = f"{prefix()}:{{{room_id}}}:*"
    state: dict[bytes, bytes | None] = {}
    for key in sorted(r.scan_iter(match=pattern, count=1000)):
        if key != keys.active_mark.encode():
            state[key] = cast("bytes | None", r.dump(key))
    return state


def db_state() -> dict[str, list[tuple[Any, ...]]]:
    """Account data as a refused caller could have changed it (last_used_at aside)."""
    return {
        "teams": sorted(Team.objects.values_list("slug", "name")),
        "keys": sorted(ApiKey.objects.values_list("id", "team__slug", "name", "revoked_at")),
        "rooms": sorted(Room.objects.values_list("room_id", "team__slug", "name", "status")),
        "invites": sorted(
            Invite.objects.values_list("id", "team__slug", "room__room_id", "revoked_at")
        ),
        "audit": sorted(AuditEvent.objects.values_list("id", "action", "object_id")),
    }


def team_state(slug: str) -> dict[str, list[tuple[Any, ...]]]:
    """One team's rows only."""
    return {
        "keys": sorted(
            ApiKey.objects.filter(team__slug=slug).values_list("id", "name", "revoked_at")
        ),
        "rooms": sorted(Room.objects.filter(team__slug=slug).values_list("room_id", "name")),
        "invites": sorted(
            Invite.objects.filter(team__slug=slug).values_list("id", "room__room_id", "revoked_at")
        ),
    }


# --- MCP -----------------------------------------------------------------------------------


def tool_arguments(name: str) -> dict[str, Any]:
    if name in CALLER_TOOLS:
        return {}
    return {"roomId": ROOM_A, **VALID_ARGS[name]}


async def mcp_call(auth: str | None, name: str, arguments: dict[str, Any]) -> httpx.Response:
    headers = {"content-type": "application/json", "accept": "application/json"}
    if auth is not None:
        headers["authorization"] = auth
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.post("/mcp", headers=headers, content=json.dumps(body))


def tool_result(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"jsonrpc", "id", "result"}, body
    assert body["id"] == 7
    result: dict[str, Any] = body["result"]
    return result


def result_text(result: dict[str, Any]) -> str:
    assert len(result["content"]) == 1, result
    assert result["content"][0]["type"] == "text"
    text: str = result["content"][0]["text"]
    return text


def rows_of(*rooms: Room) -> list[dict[str, Any]]:
    """The rows of these rooms as the API lists them, in room id order."""
    found = Room.objects.filter(pk__in=[r.pk for r in rooms]).order_by("room_id")
    return [selectors.room_row(r) for r in found]


def visible_rooms(cred: str, w: World) -> list[dict[str, Any]]:
    """What list_rooms / GET /api/v1/rooms must show each authenticated caller."""
    rooms = {
        "other_team": [w.room_b],
        "other_room_invite": [w.room_b],
        "sibling_room_invite": [w.room_a2],
        "right": [w.room_a, w.room_a2],
        "static": [w.room_a, w.room_a2],
    }[cred]
    return rows_of(*rooms)


def by_room_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: row["roomId"])


def test_the_matrix_covers_every_tool() -> None:
    assert len(TOOL_NAMES) == 27
    assert CALLER_TOOLS == ["list_rooms"]
    assert sorted(VALID_ARGS) == sorted(ROOM_TOOLS)
    assert set(UNKNOWN_ID) < set(ROOM_TOOLS)


@pytest.mark.anyio
@pytest.mark.parametrize("cred", CREDENTIALS)
@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_mcp_cell(
    tool: str, cred: str, world: World, raw_redis: redis.Redis, redis_client_closed: None
) -> None:
    room_a_before = redis_room_state(raw_redis, ROOM_A)
    room_a2_before = redis_room_state(raw_redis, ROOM_A2)
    room_b_before = redis_room_state(raw_redis, ROOM_B)
    db_before = await db_run(db_state)

    response = await mcp_call(world.auth[cred], tool, tool_arguments(tool))

    if cred in UNAUTHENTICATED:
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == 'Bearer realm="roomservice"'
        assert response.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": MCP_UNAUTHORIZED},
        }
    elif cred in FOREIGN:
        result = tool_result(response)
        if tool == "list_rooms":
            # The caller's own rooms only (an invite: its one room), never room-a.
            assert result.get("isError", False) is False, result
            listed = json.loads(result_text(result))
            assert by_room_id(listed) == await db_run(visible_rooms, cred, world)
        else:
            assert result == {
                "content": [{"type": "text", "text": room_errors.ROOM_ACCESS_DENIED}],
                "isError": True,
            }
    else:
        result = tool_result(response)
        if tool in UNKNOWN_ID:
            assert result == {
                "content": [{"type": "text", "text": UNKNOWN_ID[tool]}],
                "isError": True,
            }
        else:
            assert result.get("isError", False) is False, result
            text = result_text(result)
            assert text != room_errors.ROOM_ACCESS_DENIED
            if tool == "list_rooms":
                listed = json.loads(text)
                assert by_room_id(listed) == await db_run(visible_rooms, cred, world)
        return

    # A refused caller changed nothing: not room-a, not room-b, not the account data.
    assert redis_room_state(raw_redis, ROOM_A) == room_a_before
    assert redis_room_state(raw_redis, ROOM_A2) == room_a2_before
    assert redis_room_state(raw_redis, ROOM_B) == room_b_before
    assert await db_run(db_state) == db_before
    # And the right caller sees room-a as it was: no events from them. (Team-a's tool calls
    # in this file, right + static + sibling + these reads, stay under the default
    # RATE_LIMIT_PER_MINUTE of 600 even when the whole file runs within a minute.)
    events = tool_result(
        await mcp_call(world.auth["right"], "read_events", {"roomId": ROOM_A, "limit": 100})
    )
    assert events.get("isError", False) is False, events
    assert json.loads(result_text(events)) == []


# --- REST ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: Callable[[World], str]
    body: dict[str, Any] | None = None
    # The same request aimed at an object that does not exist (for "not yours == missing").
    missing_path: Callable[[World], str] | None = None


ENDPOINTS: dict[str, Endpoint] = {
    "me": Endpoint("get", lambda w: "/api/v1/me"),
    "keys_list": Endpoint("get", lambda w: "/api/v1/keys"),
    "keys_create": Endpoint("post", lambda w: "/api/v1/keys", {"name": "minted"}),
    "key_revoke": Endpoint(
        "post",
        lambda w: f"/api/v1/keys/{w.spare_key.pk}/revoke",
        missing_path=lambda w: f"/api/v1/keys/{w.spare_key.pk + 100_000}/revoke",
    ),
    "rooms_list": Endpoint("get", lambda w: "/api/v1/rooms"),
    "rooms_create": Endpoint("post", lambda w: "/api/v1/rooms", {"name": "made"}),
    "invites_list": Endpoint(
        "get",
        lambda w: f"/api/v1/rooms/{ROOM_A}/invites",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/invites",
    ),
    "invite_create": Endpoint(
        "post",
        lambda w: f"/api/v1/rooms/{ROOM_A}/invites",
        {"label": "new-guest", "expiresInSeconds": 3600},
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/invites",
    ),
    "invite_revoke": Endpoint(
        "post",
        lambda w: f"/api/v1/rooms/{ROOM_A}/invites/{w.guest_invite.pk}/revoke",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/invites/{w.guest_invite.pk}/revoke",
    ),
    "teams_create": Endpoint("post", lambda w: "/api/v1/teams", {"slug": "team-c", "name": "C"}),
    "room_summary": Endpoint(
        "get", lambda w: f"/room/{ROOM_A}", missing_path=lambda w: f"/room/{MISSING_ROOM}"
    ),
}

# Status of each cell for the credentials that authenticate (every other one is 401).
STATUS_COLUMNS = ("other_team", "other_room_invite", "sibling_room_invite", "right", "static")
# fmt: off
STATUS_TABLE: dict[str, tuple[int, int, int, int, int]] = {
    #                other_team  other_room_inv  sibling_inv  right  static
    "me":            (200,       200,            200,         200,   200),
    "keys_list":     (200,       403,            403,         200,   200),
    "keys_create":   (201,       403,            403,         201,   201),
    "key_revoke":    (404,       403,            403,         200,   200),
    "rooms_list":    (200,       200,            200,         200,   200),
    "rooms_create":  (201,       403,            403,         201,   201),
    "invites_list":  (404,       403,            403,         200,   200),
    "invite_create": (404,       403,            403,         201,   201),
    "invite_revoke": (404,       403,            403,         200,   200),
    "teams_create":  (403,       403,            403,         403,   201),
    "room_summary":  (404,       404,            404,         200,   200),
}
# fmt: on
EXPECTED_STATUS = {
    name: dict(zip(STATUS_COLUMNS, row, strict=True)) for name, row in STATUS_TABLE.items()
}
assert set(STATUS_COLUMNS) == {*FOREIGN, *ALLOWED}
assert set(EXPECTED_STATUS) == set(ENDPOINTS)

ROOM_NOT_FOUND = "Room not found or access denied."
KEY_FIELDS = {
    "id",
    "name",
    "prefix",
    "agentName",
    "readOnly",
    "created_at",
    "last_used_at",
    "revoked_at",
}
INVITE_FIELDS = {
    "id",
    "roomId",
    "label",
    "prefix",
    "agentName",
    "readOnly",
    "expires_at",
    "created_at",
    "last_used_at",
    "revoked_at",
}
ROOM_FIELDS = {"roomId", "name", "status", "created_at", "last_active_at"}


def rest_call(endpoint: Endpoint, auth: str | None, url: str) -> Any:
    client = APIClient()
    kwargs: dict[str, Any] = {}
    if auth is not None:
        kwargs["HTTP_AUTHORIZATION"] = auth
    if endpoint.method == "get":
        return client.get(url, **kwargs)
    return client.post(url, endpoint.body or {}, format="json", **kwargs)


def error_body(message: str, code: str) -> dict[str, Any]:
    return {"message": message, "code": code, "extra": {}}


def team_of_key(key_id: int) -> str:
    return ApiKey.objects.get(pk=key_id).team.slug


def check_allowed_body(
    name: str, cred: str, w: World, body: Any, room_a_row: dict[str, Any]
) -> None:
    """The body of a 2xx cell (team-a for right/static, team-b for the foreign ones).
    `room_a_row` is room-a's row as it was before the request."""
    team = "team-b" if cred in ("other_team", "other_room_invite") else "team-a"
    if name == "me":
        identities: dict[str, dict[str, str | None]] = {
            "right": {"team": "team-a", "kind": "key", "roomId": None},
            "static": {"team": "team-a", "kind": "static", "roomId": None},
            "other_team": {"team": "team-b", "kind": "key", "roomId": None},
            "other_room_invite": {"team": "team-b", "kind": "invite", "roomId": ROOM_B},
            "sibling_room_invite": {"team": "team-a", "kind": "invite", "roomId": ROOM_A2},
        }
        assert body == {**identities[cred], "agent": None, "readOnly": False}
    elif name == "keys_list":
        assert all(set(row) == KEY_FIELDS for row in body), body
        listed = sorted(row["id"] for row in body)
        assert listed == sorted(ApiKey.objects.filter(team__slug=team).values_list("id", flat=True))
        if team == "team-b":
            assert listed == [w.other_key.pk]
        else:
            assert listed == sorted([w.right_key.pk, w.spare_key.pk, w.revoked_key.pk])
            revoked = {row["id"]: row["revoked_at"] is not None for row in body}
            assert revoked == {w.right_key.pk: False, w.spare_key.pk: False, w.revoked_key.pk: True}
    elif name == "keys_create":
        assert set(body) == KEY_FIELDS | {"secret"}
        assert body["name"] == "minted"
        assert body["secret"].startswith(KEY_PREFIX)
        assert body["secret"].startswith(body["prefix"])
        assert (body["agentName"], body["readOnly"], body["last_used_at"], body["revoked_at"]) == (
            "",
            False,
            None,
            None,
        )
        assert team_of_key(body["id"]) == team
    elif name == "key_revoke":
        assert set(body) == KEY_FIELDS
        assert body["id"] == w.spare_key.pk
        assert body["name"] == "spare"
        assert body["revoked_at"] is not None
        assert ApiKey.objects.get(pk=w.spare_key.pk).revoked_at is not None
    elif name == "rooms_list":
        assert by_room_id(body) == visible_rooms(cred, w)
    elif name == "rooms_create":
        assert set(body) == ROOM_FIELDS
        assert body["name"] == "made"
        assert body["status"] == "active"
        assert body["roomId"].startswith("r-")
        assert Room.objects.get(room_id=body["roomId"]).team.slug == team
    elif name == "invites_list":
        assert all(set(row) == INVITE_FIELDS for row in body), body
        assert sorted(row["id"] for row in body) == sorted([w.guest_invite.pk, w.expired_invite.pk])
        assert {row["roomId"] for row in body} == {ROOM_A}
    elif name == "invite_create":
        assert set(body) == INVITE_FIELDS | {"secret"}
        assert body["roomId"] == ROOM_A
        assert body["label"] == "new-guest"
        assert body["expires_at"] is not None
        assert body["secret"].startswith(INVITE_PREFIX)
        assert body["secret"].startswith(body["prefix"])
        invite = Invite.objects.get(pk=body["id"])
        assert (invite.team.slug, invite.room.room_id) == ("team-a", ROOM_A)
    elif name == "invite_revoke":
        assert set(body) == INVITE_FIELDS
        assert body["id"] == w.guest_invite.pk
        assert body["roomId"] == ROOM_A
        assert body["revoked_at"] is not None
        assert Invite.objects.get(pk=w.guest_invite.pk).revoked_at is not None
    elif name == "teams_create":
        assert set(body) == {"team", "name", "key"}
        assert (body["team"], body["name"]) == ("team-c", "C")
        assert set(body["key"]) == KEY_FIELDS | {"secret"}
        assert body["key"]["secret"].startswith(KEY_PREFIX)
        assert team_of_key(body["key"]["id"]) == "team-c"
    elif name == "room_summary":
        # The summary shows the room as the request found it (its own access is recorded
        # as activity after the row was read).
        assert body == {
            **room_a_row,
            "tasks": {"total": 0, "pending": 0, "in_progress": 0, "done": 0, "blocked": 0},
            "agents": [],
            "contextEntries": 0,
            "events": 0,
        }
    else:  # pragma: no cover
        raise AssertionError(name)


@pytest.mark.parametrize("cred", CREDENTIALS)
@pytest.mark.parametrize("name", list(ENDPOINTS))
def test_rest_cell(name: str, cred: str, world: World, raw_redis: redis.Redis) -> None:
    endpoint = ENDPOINTS[name]
    db_before = db_state()
    team_a_before = team_state("team-a")
    room_a_before = redis_room_state(raw_redis, ROOM_A)
    (room_a_row,) = rows_of(world.room_a)

    response = rest_call(endpoint, world.auth[cred], endpoint.path(world))
    body = response.json()

    if cred in UNAUTHENTICATED:
        assert response.status_code == 401, body
        assert response["WWW-Authenticate"] == 'Bearer realm="roomservice"'
        # One message for every 401, as /mcp gives it: what to send. DRF names the case
        # in `code` (no credentials at all vs. credentials that did not authenticate).
        code = "not_authenticated" if cred == "none" else "authentication_failed"
        assert body == error_body(REST_UNAUTHORIZED, code)
    else:
        status = EXPECTED_STATUS[name][cred]
        assert response.status_code == status, body
        if status in (200, 201):
            check_allowed_body(name, cred, world, body, room_a_row)
        elif status == 403:
            message = errors.STATIC_KEYS_ONLY if name == "teams_create" else errors.TEAM_KEYS_ONLY
            assert body == error_body(message, "not_permitted")
        elif status == 404:
            message = errors.KEY_NOT_FOUND if name == "key_revoke" else ROOM_NOT_FOUND
            assert body == error_body(message, "not_found")
            # Not yours is exactly missing: the same caller asking for an object that does
            # not exist gets the same status and body.
            assert endpoint.missing_path is not None
            missing = rest_call(endpoint, world.auth[cred], endpoint.missing_path(world))
            assert (missing.status_code, missing.json()) == (response.status_code, body)
        else:  # pragma: no cover
            raise AssertionError(status)

    if cred in ALLOWED and response.status_code < 300:
        return
    if response.status_code >= 400:
        # Refused: nothing changed anywhere.
        assert db_state() == db_before
    # Whatever a foreign or refused caller did, team-a's rows and room-a are as they were.
    assert team_state("team-a") == team_a_before
    assert redis_room_state(raw_redis, ROOM_A) == room_a_before
