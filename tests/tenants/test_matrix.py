"""The credential x capability matrix: every door — MCP, the REST tool door, the event
stream, the account API, the dashboard, share pages — with every kind of credential, and
the exact outcome of each cell.

Credentials (columns). At the bearer doors:

- none, malformed, unknown     no usable bearer
- revoked_key, expired_invite, revoked_invite, share_as_bearer   dead, or not a bearer
- static          team-a's static key (API_KEYS): everything, and creating teams
- key             a team-a key: rooms, writes, managing keys/invites/webhooks/rooms
- bound_key       bound to agent "alice": acts only as alice, manages nothing
- ro_key          read-only: reads, own cursors, manages nothing
- bound_ro_key    both
- invite          a writable invite to room-a; ro_invite: read-only
- other_team      team-b's key

At the dashboard: owner, admin, member (people in team-a), key_session and
ro_key_session (team keys signed in with AUTH_MODE=both), static_session, outsider (team-b's
owner). Share pages: share, revoked_share.

Tenancy is sacred: a refused caller learns nothing and changes nothing, and "not yours"
looks exactly like "missing".
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import redis
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import AsyncClient, Client
from django.utils import timezone
from rest_framework.test import APIClient

from config.asgi import application
from rooms import errors as room_errors
from rooms import profiles, registry
from rooms.keys import RoomKeys, prefix
from rooms.store import engine as engine_store
from tenants import errors, people, selectors, services
from tenants.auth import (
    UNAUTHORIZED,
    Bearer,
    bearer_from_header,
    credential_lookup,
    static_teams_ensure,
)
from tenants.capabilities import Caller
from tenants.credentials import KEY_PREFIX
from tenants.db import db_run
from tenants.models import ApiKey, AuditEvent, Invite, Membership, Room, ShareLink, Team, Webhook
from tests.conftest import redis_for_assertions
from tests.rooms.test_registry import VALID_ARGS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.store]

ROOM_A = "room-a"
ROOM_A2 = "room-a2"
ROOM_B = "room-b"
MISSING_ROOM = "room-nobody-has"
STATIC_SECRET = "static-" + secrets.token_urlsafe(24)
UNKNOWN_SECRET = KEY_PREFIX + "doesnotexist" + secrets.token_urlsafe(20)
BOUND_AGENT = "alice"

UNAUTHENTICATED = [
    "none",
    "malformed",
    "unknown",
    "revoked_key",
    "expired_invite",
    "revoked_invite",
    "share_as_bearer",
]
TEAM_A = ["static", "key", "bound_key", "ro_key", "bound_ro_key", "invite", "ro_invite"]
BEARERS = [*UNAUTHENTICATED, *TEAM_A, "other_team"]
READ_ONLY = {"ro_key", "bound_ro_key", "ro_invite"}
BOUND = {"bound_key", "bound_ro_key"}
GUESTS = {"invite", "ro_invite"}
MANAGERS = {"static", "key"}  # the bearers that may manage keys, invites, webhooks, rooms

TOOL_NAMES = [t.name for t in registry.TOOLS]
ROOM_TOOLS = [t.name for t in registry.TOOLS if t.scope == "room"]


def _unknown_id_messages() -> dict[str, str]:
    """What an allowed caller meets in the empty room-a when VALID_ARGS names an id that does
    not exist: the "Unknown ..." message (with the empty-room hint), never the denial."""

    def task(tool: str) -> str:
        return room_errors.TASK_NOT_FOUND.format(
            task_id=VALID_ARGS[tool]["taskId"], hint=room_errors.TASK_HINT_EMPTY
        )

    def context(tool: str) -> str:
        return room_errors.CONTEXT_NOT_FOUND.format(
            entry_id=VALID_ARGS[tool]["id"], hint=room_errors.CONTEXT_HINT_EMPTY
        )

    def event(tool: str, field: str) -> str:
        return room_errors.EVENT_NOT_FOUND.format(
            event_id=VALID_ARGS[tool][field], hint=room_errors.EVENT_HINT_EMPTY
        )

    def lease(tool: str) -> str:
        return room_errors.LEASE_NOT_FOUND.format(
            ref=json.dumps(VALID_ARGS[tool]["leaseId"]), hint=room_errors.LEASE_HINT_EMPTY
        )

    def handoff(tool: str) -> str:
        return room_errors.HANDOFF_NOT_FOUND.format(
            handoff_id=VALID_ARGS[tool]["handoffId"], hint=room_errors.HANDOFF_HINT
        )

    def review(tool: str) -> str:
        return room_errors.REVIEW_NOT_FOUND.format(
            review_id=VALID_ARGS[tool]["reviewId"], hint=room_errors.REVIEW_HINT_EMPTY
        )

    return {
        "update_task": task("update_task"),
        "claim_task": task("claim_task"),
        "release_task": task("release_task"),
        "get_task": task("get_task"),
        "delete_task": task("delete_task"),
        "set_task_priority": task("set_task_priority"),
        "add_dependency": task("add_dependency"),
        "delete_context": context("delete_context"),
        "get_context_history": context("get_context_history"),
        "diff_context": context("diff_context"),
        "delete_event": event("delete_event", "eventId"),
        "request_review": room_errors.TASK_NOT_FOUND.format(
            task_id=VALID_ARGS["request_review"]["targetId"], hint=room_errors.TASK_HINT_EMPTY
        ),
        "approve": review("approve"),
        "lease_renew": lease("lease_renew"),
        "lease_release": lease("lease_release"),
        "room_release": room_errors.LEASE_NOT_FOUND.format(
            ref=json.dumps(VALID_ARGS["room_release"]["path"]), hint=room_errors.LEASE_HINT_EMPTY
        ),
        "reject": review("reject"),
        "read_context": context("read_context"),
        "update_context": context("update_context"),
        "mark_event_read": event("mark_event_read", "eventId"),
        "get_event_reads": event("get_event_reads", "eventId"),
        "reply_to_event": event("reply_to_event", "replyToId"),
        "submit_task": task("submit_task"),
        "verify_task": task("verify_task"),
        "handoff_task": task("handoff_task"),
        "accept_handoff": handoff("accept_handoff"),
        "decline_handoff": handoff("decline_handoff"),
        "ack_message": room_errors.MESSAGE_NOT_FOUND.format(
            message_id=json.dumps(VALID_ARGS["ack_message"]["messageId"]),
            hint=room_errors.MESSAGE_HINT_NONE,
        ),
    }


UNKNOWN_ID = _unknown_id_messages()


def actor_mismatch(tool: str) -> str | None:
    """The actor argument VALID_ARGS gives `tool` that is not the bound agent, if any."""
    spec = registry.tool_get(tool)
    for name in spec.actors():
        alias = spec.input_model.model_fields[name].alias or name
        given = VALID_ARGS.get(tool, {}).get(alias)
        if given is not None and given != BOUND_AGENT:
            return f"{alias}={given}"
    return None


def tool_outcome(tool: str, cred: str, profile: profiles.Profile = "full") -> str:
    """The one outcome of a tool cell: 401, not_in_profile, rooms (list_rooms), denied,
    actor_mismatch, read_only, not_yours, unknown_id or ok."""
    if cred in UNAUTHENTICATED:
        return "401"
    if tool not in profiles.TOOLS[profile]:
        return "not_in_profile"  # before any room is looked at: the same for every team
    if tool == "list_rooms":
        return "rooms"
    if tool == "list_templates":
        return "ok"  # the same for every caller: no tenant's data
    if cred == "other_team":
        return "denied"
    if cred in BOUND and actor_mismatch(tool):
        return "actor_mismatch"
    if cred in READ_ONLY and not registry.tool_get(tool).read_only:
        return "read_only"
    if registry.tool_get(tool).manages is not None and cred not in MANAGERS:
        return "manage"
    if cred in GUESTS and tool in GUEST_MESSAGE_READS:
        return "not_yours"  # an invite bound to no agent reads no one's messages (issue 31)
    return "unknown_id" if tool in UNKNOWN_ID else "ok"


# The reads of an agent's messages by name (rooms.selectors.messages.message_guard): the
# matrix's invites are bound to no agent, so the agent they name is never theirs.
GUEST_MESSAGE_READS = ("inbox", "sent_messages")


# --- The world every cell runs in --------------------------------------------------------


@dataclass
class World:
    auth: dict[str, str | None]  # bearer credential -> Authorization header
    callers: dict[str, Caller]  # what each live bearer resolves to
    team_a: Team
    team_b: Team
    room_a: Room
    room_a2: Room
    room_b: Room
    spare_key: ApiKey  # a live team-a key: the target of POST /keys/<id>/revoke
    guest_invite: Invite  # a live team-a invite to room-a: the target of invite revoke
    hook: Webhook
    sessions: dict[str, dict[str, Any]]  # dashboard credential -> how to sign in
    share_token: str
    revoked_share_token: str


@pytest.fixture(scope="module")
def raw_redis() -> Iterator[redis.Redis]:
    r = redis_for_assertions(decode_responses=False)
    yield r
    r.close()


@pytest.fixture
def world(settings: Any, raw_redis: redis.Redis) -> World:
    settings.API_KEYS = f"team-a:{STATIC_SECRET}"
    settings.AUTH_MODE = "both"
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    for room_id in (ROOM_A, ROOM_A2, ROOM_B, MISSING_ROOM):
        keys = RoomKeys(room_id)
        raw_redis.delete(*keys.durable(), keys.active_mark, keys.lock("db"))
    return async_to_sync(_in_one_loop)(world_build)


async def _in_one_loop(build: Callable[[], World]) -> World:
    try:
        return await db_run(build)
    finally:
        await engine_store.close_client()


def _person(email: str, team: Team, role: str) -> User:
    # No password: the cells sign in with force_login (hashing one costs ~0.1 s a cell).
    user = User.objects.create(username=email, email=email)
    Membership.objects.create(user=user, team=team, role=role)
    return user


def world_build() -> World:
    static_teams_ensure()
    team_a = Team.objects.get(slug="team-a")
    team_b = services.team_ensure("team-b")
    key = services.api_key_create(team=team_a, name="key")
    spare = services.api_key_create(team=team_a, name="spare")
    bound = services.api_key_create(team=team_a, name="bound", agent_name=BOUND_AGENT)
    ro = services.api_key_create(team=team_a, name="ro", read_only=True)
    bound_ro = services.api_key_create(
        team=team_a, name="bound-ro", agent_name=BOUND_AGENT, read_only=True
    )
    revoked = services.api_key_create(team=team_a, name="revoked")
    # Used once while live, so the bearer cache knows it; revoking must forget it.
    assert engine_store.run_sync(_resolve, revoked.secret) is not None
    services.api_key_revoke(key=revoked.key)
    other = services.api_key_create(team=team_b, name="b-key")

    room_a = services.room_create(team=team_a, room_id=ROOM_A, name="A", actor="system")
    room_a2 = services.room_create(team=team_a, room_id=ROOM_A2, name="A2", actor="system")
    room_b = services.room_create(team=team_b, room_id=ROOM_B, name="B", actor="system")
    now = timezone.now()
    invite = services.invite_create(room=room_a, label="writer")
    ro_invite = services.invite_create(room=room_a, label="reader", read_only=True)
    expired = services.invite_create(room=room_a, expires_at=now - timedelta(hours=1))
    revoked_invite = services.invite_create(room=room_a, label="gone")
    assert engine_store.run_sync(_resolve, revoked_invite.secret) is not None
    services.invite_revoke(invite=revoked_invite.invite)
    guest = services.invite_create(room=room_a, label="guest", expires_at=now + timedelta(hours=1))
    share = people.share_link_create(
        room=room_a, label="s", expires_at=None, created_by=None, actor="system"
    )
    gone = people.share_link_create(
        room=room_a, label="gone", expires_at=None, created_by=None, actor="system"
    )
    people.share_link_revoke(link=gone.link, actor="system")
    from tenants import webhooks

    hook = webhooks.webhook_create(room=room_a, url="http://127.0.0.1:9/hook", actor="system")

    owner = _person("owner@a.example", team_a, "owner")
    admin = _person("admin@a.example", team_a, "admin")
    member = _person("member@a.example", team_a, "member")
    outsider = _person("owner@b.example", team_b, "owner")

    auth: dict[str, str | None] = {
        "none": None,
        "malformed": f"Token {key.secret}",
        "unknown": f"Bearer {UNKNOWN_SECRET}",
        "revoked_key": f"Bearer {revoked.secret}",
        "expired_invite": f"Bearer {expired.secret}",
        "revoked_invite": f"Bearer {revoked_invite.secret}",
        "share_as_bearer": f"Bearer {share.token}",
        "static": f"Bearer {STATIC_SECRET}",
        "key": f"Bearer {key.secret}",
        "bound_key": f"Bearer {bound.secret}",
        "ro_key": f"Bearer {ro.secret}",
        "bound_ro_key": f"Bearer {bound_ro.secret}",
        "invite": f"Bearer {invite.secret}",
        "ro_invite": f"Bearer {ro_invite.secret}",
        "other_team": f"Bearer {other.secret}",
    }
    assert set(auth) == set(BEARERS)
    callers = {}
    for cred in [*TEAM_A, "other_team"]:
        found = credential_lookup(Bearer(str(auth[cred]).split(" ", 1)[1]))
        assert found is not None, cred
        callers[cred] = found
    from tenants.credentials import secret_digest

    sessions: dict[str, dict[str, Any]] = {
        "owner": {"user": owner},
        "admin": {"user": admin},
        "member": {"user": member},
        "outsider": {"user": outsider},
        "key_session": {"digest": secret_digest(key.secret)},
        "ro_key_session": {"digest": secret_digest(ro.secret)},
        "static_session": {"digest": secret_digest(STATIC_SECRET)},
    }
    return World(
        auth=auth,
        callers=callers,
        team_a=team_a,
        team_b=team_b,
        room_a=room_a,
        room_a2=room_a2,
        room_b=room_b,
        spare_key=spare.key,
        guest_invite=guest.invite,
        hook=hook.webhook,
        sessions=sessions,
        share_token=share.token,
        revoked_share_token=gone.token,
    )


async def _resolve(secret: str) -> Caller | None:
    from tenants.auth import caller_resolve

    return await caller_resolve(Bearer(secret))


def redis_room_state(r: redis.Redis, room_id: str) -> dict[bytes, bytes | None]:
    """Every key of a room, serialized (DUMP ignores TTLs, so a refreshed TTL is no change)."""
    keys = RoomKeys(room_id)
    pattern = f"{prefix()}:{{{room_id}}}:*"
    mark = keys.active_mark.encode()
    found = sorted(k for k in r.scan_iter(match=pattern, count=1000) if k != mark)
    pipe = r.pipeline(transaction=False)
    for key in found:
        pipe.dump(key)
    return dict(zip(found, cast("list[bytes | None]", pipe.execute()), strict=True))


def db_state() -> dict[str, list[tuple[Any, ...]]]:
    """Account data as a refused caller could have changed it (last_used_at aside)."""
    return {
        "teams": sorted(Team.objects.values_list("slug", "name")),
        "keys": sorted(ApiKey.objects.values_list("id", "team_id", "name", "revoked_at")),
        "rooms": sorted(Room.objects.values_list("room_id", "team_id", "name", "status")),
        "invites": sorted(Invite.objects.values_list("id", "team_id", "room_id", "revoked_at")),
        "shares": sorted(ShareLink.objects.values_list("id", "revoked_at")),
        "webhooks": sorted(Webhook.objects.values_list("id", "active")),
        "audit": sorted(AuditEvent.objects.values_list("id", "action", "object_id")),
    }


def rows_of(*rooms: Room) -> list[dict[str, Any]]:
    found = Room.objects.filter(pk__in=[r.pk for r in rooms]).order_by("room_id")
    return [dict(selectors.room_row(r)) for r in found]


def visible_rooms(cred: str, w: World) -> list[dict[str, Any]]:
    """What list_rooms / GET /api/v1/rooms shows each authenticated caller."""
    if cred == "other_team":
        return rows_of(w.room_b)
    if cred in GUESTS:
        return rows_of(w.room_a)
    return rows_of(w.room_a, w.room_a2)


def by_room_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: row["roomId"])


def tool_arguments(name: str) -> dict[str, Any]:
    if name in ("list_rooms", "list_templates"):
        return {}
    return {"roomId": ROOM_A, **VALID_ARGS[name]}


def expected_error(
    tool: str, outcome: str, caller: Caller | None, door: str = "mcp"
) -> tuple[int, str, str]:
    """(REST status, code, message) of a refused tool cell."""
    if outcome == "not_in_profile":
        with pytest.raises(room_errors.ToolNotInProfileError) as refused:
            profiles.profile_admit(profile_of_door(door), tool)
        return 404, "tool_not_in_profile", refused.value.message
    if outcome == "denied":
        return 404, "room_not_found", room_errors.ROOM_ACCESS_DENIED
    if outcome == "read_only":
        return 403, "read_only", errors.READ_ONLY_REFUSED
    if outcome == "manage":
        assert caller is not None
        what = str(registry.tool_get(tool).manages)
        message = errors.MANAGE_REFUSED.format(
            what=what, who=caller.describe(), how=errors.MANAGE_HOW[what]
        )
        return 403, "not_permitted", message
    if outcome == "actor_mismatch":
        field, _, given = str(actor_mismatch(tool)).partition("=")
        message = errors.ACTOR_MISMATCH.format(agent=BOUND_AGENT, field=field, given=given)
        return 403, "actor_mismatch", message
    if outcome == "not_yours":
        return 403, "message_not_yours", room_errors.MESSAGE_GUEST_READ.format(agent="alice")
    assert outcome == "unknown_id"
    return 404, registry_code(tool), UNKNOWN_ID[tool]


def registry_code(tool: str) -> str:
    if tool in (
        "update_task",
        "claim_task",
        "release_task",
        "get_task",
        "delete_task",
        "set_task_priority",
        "add_dependency",
        "request_review",
        "submit_task",
        "verify_task",
        "handoff_task",
    ):
        return "task_not_found"
    if tool in ("accept_handoff", "decline_handoff"):
        return "handoff_not_found"
    if tool in ("approve", "reject"):
        return "review_not_found"
    if tool in ("lease_renew", "lease_release", "room_release"):
        return "lease_not_found"
    if tool == "ack_message":
        return "message_not_found"
    if tool in (
        "read_context",
        "update_context",
        "delete_context",
        "get_context_history",
        "diff_context",
    ):
        return "context_not_found"
    return "event_not_found"


# --- MCP and the REST tool door ----------------------------------------------------------------


def profile_of_door(door: str) -> profiles.Profile:
    """A door is "mcp", "rest" or "mcp?tools=<profile>"."""
    asked = door.partition("?tools=")[2]
    return profiles.profile_resolve(asked or None, None)


async def mcp_call(
    auth: str | None, name: str, arguments: dict[str, Any], path: str = "/mcp"
) -> httpx.Response:
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
        return await client.post(path, headers=headers, content=json.dumps(body))


async def rest_tool_call(auth: str | None, name: str, arguments: dict[str, Any]) -> httpx.Response:
    headers = {"content-type": "application/json"}
    if auth is not None:
        headers["authorization"] = auth
    args = {k: v for k, v in arguments.items() if k != "roomId"}
    path = (
        f"/api/v1/tools/{name}"
        if name in ("list_rooms", "list_templates")
        else f"/api/v1/rooms/{ROOM_A}/tools/{name}"
    )
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.post(path, headers=headers, content=json.dumps(args))


def test_the_matrix_covers_every_tool_and_every_outcome() -> None:
    assert sorted(VALID_ARGS) == sorted(ROOM_TOOLS)
    outcomes = {tool_outcome(t, c) for t in TOOL_NAMES for c in BEARERS}
    assert outcomes == {
        "401",
        "rooms",
        "denied",
        "actor_mismatch",
        "read_only",
        "manage",
        "not_yours",
        "unknown_id",
        "ok",
    }


@pytest.mark.anyio
@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_tool_row(
    tool: str, world: World, raw_redis: redis.Redis, redis_client_closed: None
) -> None:
    """One tool at every door, every bearer credential in turn (one world per row: only
    calls of this one tool run in it, so no cell sees another tool's writes; each refused
    cell is checked to change nothing)."""
    known: Snapshot | None = None
    for door in TOOL_DOORS:
        for cred in door_creds(tool, door):
            known = await tool_cell(tool, cred, door, world, raw_redis, known)


@pytest.mark.anyio
async def test_the_oauth_door_row(
    world: World, raw_redis: redis.Redis, redis_client_closed: None
) -> None:
    """/oauth/mcp takes OAuth access tokens alone (tests/tenants/test_oauth.py has the
    token's own cells): every bearer of the matrix, live or not, gets the door's challenge
    and changes nothing."""
    before = await snapshot_take(raw_redis)
    for cred in BEARERS:
        answer = await mcp_call(world.auth[cred], "read_plan", {"roomId": ROOM_A}, "/oauth/mcp")
        assert answer.status_code == 401, cred
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith('Bearer resource_metadata="http://testserver/'), cred
        sent = bool(bearer_from_header(world.auth[cred]).secret)
        assert ('error="invalid_token"' in challenge) == sent, cred
    assert await snapshot_take(raw_redis) == before


# The doors of a tool row: MCP, REST, and MCP in each smaller profile (/mcp?tools=<profile>;
# full's is /mcp itself, since a key made before profiles sees every tool). In a profile, a
# tool it has is tried with every bearer (its outcomes are full's), one it leaves out with a
# bearer of each kind: any live one is told which profile has it, before any room is looked
# at, and a dead one is a 401.
TOOL_DOORS = ("mcp", "rest", "mcp?tools=core", "mcp?tools=roomd")
PROFILE_CREDS = ["none", "revoked_key", "key", "ro_key", "bound_key", "invite", "other_team"]


def door_creds(tool: str, door: str) -> list[str]:
    if tool in profiles.TOOLS[profile_of_door(door)]:
        return BEARERS
    return PROFILE_CREDS


def test_every_profile_has_rows_of_each_kind() -> None:
    for profile in profiles.PROFILES:
        outcomes = {tool_outcome(t, c, profile) for t in TOOL_NAMES for c in BEARERS}
        assert {"401", "ok", "denied", "read_only"} <= outcomes, profile
        assert ("not_in_profile" in outcomes) == (profile != "full"), profile


@dataclass(frozen=True)
class Snapshot:
    """The rooms and the account data as a cell found them."""

    rooms: dict[str, dict[bytes, bytes | None]]
    db: dict[str, list[tuple[Any, ...]]]


async def snapshot_take(raw_redis: redis.Redis) -> Snapshot:
    rooms = {r: redis_room_state(raw_redis, r) for r in (ROOM_A, ROOM_A2, ROOM_B)}
    return Snapshot(rooms=rooms, db=await db_run(db_state))


async def tool_cell(
    tool: str, cred: str, door: str, world: World, raw_redis: redis.Redis, known: Snapshot | None
) -> Snapshot | None:
    """Call one cell and check it. The snapshot a refused cell was checked against is still
    the world's state, so it is handed on to the next cell (None: take a new one)."""
    cell = f"{tool} x {cred} at {door}"
    before = known or await snapshot_take(raw_redis)
    outcome = tool_outcome(tool, cred, profile_of_door(door))
    auth = world.auth[cred]
    if door.startswith("mcp"):
        response = await mcp_call(auth, tool, tool_arguments(tool), "/" + door)
    else:
        response = await rest_tool_call(auth, tool, tool_arguments(tool))

    try:
        checked = await _tool_cell_check(tool, cred, door, world, raw_redis, outcome, response)
        if checked:
            after = await snapshot_take(raw_redis)
            # A refused caller changed nothing: no room, no account data.
            assert after == before
            return after
    except AssertionError as exc:
        raise AssertionError(f"cell {cell}: {exc}") from exc
    return None


async def _tool_cell_check(
    tool: str,
    cred: str,
    door: str,
    world: World,
    raw_redis: redis.Redis,
    outcome: str,
    response: httpx.Response,
) -> bool:
    """True: the cell was refused, and the caller must have changed nothing."""
    if outcome == "401":
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == 'Bearer realm="roomservice"'
        if door.startswith("mcp"):
            assert response.json() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": UNAUTHORIZED},
            }
        else:
            assert response.json() == {
                "message": UNAUTHORIZED,
                "code": "not_authenticated",
                "extra": {},
            }
    elif outcome in ("ok", "rooms"):
        if door.startswith("mcp"):
            assert response.status_code == 200
            result = response.json()["result"]
            assert result.get("isError", False) is False, result
            value = json.loads(result["content"][0]["text"])
            structured = result["structuredContent"]
            assert structured == ({"result": value} if isinstance(value, list) else value)
        else:
            assert response.status_code == 200, response.text
            value = response.json()
        if outcome == "rooms":
            assert by_room_id(value) == await db_run(visible_rooms, cred, world)
        return False  # allowed: what a tool does is the protocol tests' business
    else:
        status, code, message = expected_error(tool, outcome, world.callers.get(cred), door)
        if door.startswith("mcp"):
            assert response.status_code == 200
            result = response.json()["result"]
            assert result["isError"] is True
            assert result["content"][0] == {"type": "text", "text": message}, result
            if len(result["content"]) > 1:
                assert json.loads(result["content"][1]["text"])["code"] == code
        else:
            assert response.status_code == status, response.text
            assert response.json()["message"] == message
            assert response.json()["code"] == code
        if outcome == "unknown_id":
            return False
    return True


# --- The event stream ----------------------------------------------------------------------------

STREAM_OK = {"static", "key", "bound_key", "ro_key", "bound_ro_key", "invite", "ro_invite"}


async def stream_open(
    client: AsyncClient, room_id: str, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """(status, first chunk) of GET .../events/stream; a 200 is closed after its first chunk."""
    response = await client.get(f"/api/v1/rooms/{room_id}/events/stream", headers=headers)
    if response.status_code != 200:
        return response.status_code, response.content
    chunks = cast(AsyncIterator[bytes], response.streaming_content)
    first = await chunks.__anext__()
    await chunks.aclose()  # type: ignore[attr-defined]
    return 200, first


@pytest.mark.anyio
@pytest.mark.parametrize("cred", BEARERS)
async def test_stream_cell_for_bearers(cred: str, world: World, redis_client_closed: None) -> None:
    auth = world.auth[cred]
    headers = {"Authorization": auth} if auth else {}
    status, body = await stream_open(AsyncClient(), ROOM_A, headers)
    if cred in UNAUTHENTICATED:
        assert (status, json.loads(body)["message"]) == (401, UNAUTHORIZED)
    elif cred in STREAM_OK:
        assert status == 200 and body.startswith(b"retry: 2000")
    else:
        assert (status, json.loads(body)) == (
            404,
            {"message": room_errors.ROOM_ACCESS_DENIED, "code": "room_not_found", "extra": {}},
        )


def signed_in(world: World, cred: str) -> Client:
    client = Client()
    how = world.sessions[cred]
    if "user" in how:
        client.force_login(how["user"])
    else:
        session = client.session
        session["apikey_digest"] = how["digest"]
        session.save()
    return client


async def async_signed_in(world: World, cred: str) -> AsyncClient:
    client = AsyncClient()
    how = world.sessions[cred]
    if "user" in how:
        await client.aforce_login(how["user"])
    else:
        session = await client.asession()
        session["apikey_digest"] = how["digest"]
        await session.asave()
    return client


SESSIONS = [
    "owner",
    "admin",
    "member",
    "key_session",
    "ro_key_session",
    "static_session",
    "outsider",
]


@pytest.mark.anyio
@pytest.mark.parametrize("cred", ["owner", "admin", "member", "outsider"])
async def test_stream_cell_for_people(cred: str, world: World, redis_client_closed: None) -> None:
    status, body = await stream_open(await async_signed_in(world, cred), ROOM_A)
    if cred == "outsider":
        assert (status, json.loads(body)["message"]) == (404, room_errors.ROOM_ACCESS_DENIED)
    else:
        assert status == 200 and body.startswith(b"retry: 2000")


# --- The hooks endpoint (POST /api/v1/rooms/<id>/hooks/claude-code) ----------------------------

HOOK_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "claude-code"
HOOK_CWD = "/home/alice/checkout"
# Whose edit of lib/x.py leases it to alice: every team-a bearer that may write.
HOOK_LEASES = {"static", "key", "bound_key", "invite"}


def hook_body(name: str, session: str, path: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((HOOK_FIXTURES / f"{name}.json").read_text())
    body.update(session_id=session, cwd=HOOK_CWD)
    if path is not None:
        body["tool_input"]["file_path"] = f"{HOOK_CWD}/{path}"
    return body


async def hook_call(
    auth: str | None, body: dict[str, Any], room_id: str = ROOM_A, agent: str | None = "alice"
) -> Any:
    headers = {"content-type": "application/json"}
    if auth is not None:
        headers["authorization"] = auth
    if agent is not None:
        headers["x-roomservice-agent"] = agent
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        response = await client.post(
            f"/api/v1/rooms/{room_id}/hooks/claude-code", headers=headers, content=json.dumps(body)
        )
    assert response.status_code == 200, response.text  # every refusal is "no decision"
    return response.json()


@pytest.mark.anyio
@pytest.mark.parametrize("cred", BEARERS)
async def test_hook_cell_for_bearers(
    cred: str, world: World, raw_redis: redis.Redis, redis_client_closed: None
) -> None:
    """Before an edit, bob's exclusive lease refuses it for every team-a bearer, read-only
    ones too (a read); after an edit, the file is leased to alice only by those that may
    write (a bound key as its own agent). A refused caller gets no decision (at most a
    systemMessage saying what to fix, the first time in a session) and changes nothing."""
    held = await mcp_call(
        world.auth["static"],
        "lease_claim",
        {"roomId": ROOM_A, "agentId": "bob", "path": "src/**"},
    )
    assert held.json()["result"]["isError"] is False
    before = {r: redis_room_state(raw_redis, r) for r in (ROOM_A, ROOM_A2, ROOM_B)}
    auth = world.auth[cred]
    # A session of its own: what the person is told once a session does not hang on the order
    # the tests ran in, or on a Redis an earlier run left marked.
    session = f"matrix-{cred}-{uuid.uuid4().hex}"
    edit = hook_body("PreToolUse-Edit", session, "src/app.py")
    edited = hook_body("PostToolUse-Edit", session, "lib/x.py")
    # A bound credential acts as its agent with or without the header.
    agent = None if cred in BOUND else "alice"

    denied = await hook_call(auth, edit, agent=agent)
    made = await hook_call(auth, edited, agent=agent)

    leases = (await rest_tool_call(world.auth["static"], "lease_list", {"agentId": "alice"})).json()
    if cred in UNAUTHENTICATED or cred == "other_team":
        # No decision: the person is told, once a session, what to fix.
        assert set(denied) == {"systemMessage"} and made == {}
        told = "not one of this key's rooms" if cred == "other_team" else "ROOMSERVICE_KEY"
        assert told in denied["systemMessage"]
        assert {r: redis_room_state(raw_redis, r) for r in before} == before
        return
    reason = denied["hookSpecificOutput"]["permissionDecisionReason"]
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny" and "bob" in reason
    if cred in READ_ONLY:  # refused to write: no decision, and the person is told once
        assert set(made) == {"systemMessage"} and "read-only" in made["systemMessage"]
    else:
        assert made == {}
    expected = ["lib/x.py"] if cred in HOOK_LEASES else []  # read-only: refused, no lease
    assert [lease["path"] for lease in leases["leases"]] == expected
    if cred in BOUND:  # naming another agent on a bound credential: no decision
        assert set(await hook_call(auth, edit, agent="mallory")) <= {"systemMessage"}
    if cred in GUESTS:  # an invite reaches its own room only
        assert set(await hook_call(auth, edit, room_id=ROOM_A2)) <= {"systemMessage"}
        assert await hook_call(auth, edited, room_id=ROOM_A2) == {}  # told once already
        assert raw_redis.hlen(RoomKeys(ROOM_A2).leases) == 0


# --- The account API ----------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: Callable[[World], str]
    capability: str | None  # what managing it needs (None: any authenticated caller)
    body: dict[str, Any] | None = None
    # The same request aimed at an object that does not exist (for "not yours == missing").
    missing_path: Callable[[World], str] | None = None


ENDPOINTS: dict[str, Endpoint] = {
    "me": Endpoint("get", lambda w: "/api/v1/me", None),
    "keys_list": Endpoint("get", lambda w: "/api/v1/keys", "keys"),
    "keys_create": Endpoint("post", lambda w: "/api/v1/keys", "keys", {"name": "minted"}),
    "key_revoke": Endpoint(
        "post",
        lambda w: f"/api/v1/keys/{w.spare_key.pk}/revoke",
        "keys",
        missing_path=lambda w: f"/api/v1/keys/{w.spare_key.pk + 100_000}/revoke",
    ),
    "rooms_list": Endpoint("get", lambda w: "/api/v1/rooms", None),
    "rooms_create": Endpoint("post", lambda w: "/api/v1/rooms", "rooms", {"name": "made"}),
    "invites_list": Endpoint(
        "get",
        lambda w: f"/api/v1/rooms/{ROOM_A}/invites",
        "invites",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/invites",
    ),
    "invite_create": Endpoint(
        "post",
        lambda w: f"/api/v1/rooms/{ROOM_A}/invites",
        "invites",
        {"label": "new-guest", "expiresInSeconds": 3600},
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/invites",
    ),
    "invite_revoke": Endpoint(
        "post",
        lambda w: f"/api/v1/rooms/{ROOM_A}/invites/{w.guest_invite.pk}/revoke",
        "invites",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/invites/{w.guest_invite.pk}/revoke",
    ),
    "webhooks_list": Endpoint(
        "get",
        lambda w: f"/api/v1/rooms/{ROOM_A}/webhooks",
        "webhooks",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/webhooks",
    ),
    "webhook_create": Endpoint(
        "post",
        lambda w: f"/api/v1/rooms/{ROOM_A}/webhooks",
        "webhooks",
        {"url": "http://127.0.0.1:9/new"},
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/webhooks",
    ),
    "webhook_disable": Endpoint(
        "post",
        lambda w: f"/api/v1/rooms/{ROOM_A}/webhooks/{w.hook.pk}/disable",
        "webhooks",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/webhooks/{w.hook.pk}/disable",
    ),
    "webhook_deliveries": Endpoint(
        "get",
        lambda w: f"/api/v1/rooms/{ROOM_A}/webhooks/{w.hook.pk}/deliveries",
        "webhooks",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/webhooks/{w.hook.pk}/deliveries",
    ),
    "teams_create": Endpoint("post", lambda w: "/api/v1/teams", "teams", {"slug": "team-c"}),
    "room_export": Endpoint(
        "get",
        lambda w: f"/api/v1/rooms/{ROOM_A}/export",
        "rooms",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/export",
    ),
    "room_archive": Endpoint(
        "post",
        lambda w: f"/api/v1/rooms/{ROOM_A}/archive",
        "rooms",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/archive",
    ),
    "room_delete": Endpoint(
        "delete",
        lambda w: f"/api/v1/rooms/{ROOM_A}",
        "rooms",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}",
    ),
    "room_restore": Endpoint(
        "post",
        lambda w: f"/api/v1/rooms/{ROOM_A}/restore",
        "rooms",
        missing_path=lambda w: f"/api/v1/rooms/{MISSING_ROOM}/restore",
    ),
    "room_summary": Endpoint(
        "get", lambda w: f"/room/{ROOM_A}", None, missing_path=lambda w: f"/room/{MISSING_ROOM}"
    ),
}
CREATED = {"keys_create", "rooms_create", "invite_create", "webhook_create", "teams_create"}


def api_outcome(name: str, cred: str) -> int:
    """The status of each account-API cell."""
    if cred in UNAUTHENTICATED:
        return 401
    endpoint = ENDPOINTS[name]
    ok = 201 if name in CREATED else 200
    if endpoint.capability is None:
        if name == "room_summary" and cred == "other_team":
            return 404
        return ok
    if endpoint.capability == "teams":
        return ok if cred == "static" else 403
    if cred == "other_team":
        # team-b's key may manage its own team: team-a's objects are simply not there.
        return ok if name in ("keys_list", "keys_create", "rooms_create") else 404
    return ok if cred in MANAGERS else 403


def rest_call(endpoint: Endpoint, auth: str | None, url: str) -> Any:
    client = APIClient()
    kwargs: dict[str, Any] = {}
    if auth is not None:
        kwargs["HTTP_AUTHORIZATION"] = auth
    if endpoint.method == "get":
        return client.get(url, **kwargs)
    if endpoint.method == "delete":
        return client.delete(url, **kwargs)
    return client.post(url, endpoint.body or {}, format="json", **kwargs)


def team_a_rows() -> dict[str, Any]:
    team = Team.objects.get(slug="team-a")
    return {
        "keys": sorted(ApiKey.objects.filter(team=team).values_list("id", "name", "revoked_at")),
        "rooms": sorted(Room.objects.filter(team=team).values_list("room_id", "name")),
        "invites": sorted(
            Invite.objects.filter(team=team).values_list("id", "room_id", "revoked_at")
        ),
        "webhooks": sorted(Webhook.objects.filter(room__team=team).values_list("id", "active")),
    }


@pytest.mark.parametrize("name", list(ENDPOINTS))
def test_api_row(name: str, world: World, raw_redis: redis.Redis) -> None:
    """One endpoint, every bearer credential in turn; the refused ones first, so the cells
    that change something (a revocation, a created room) come after them."""
    for cred in sorted(BEARERS, key=lambda c: api_outcome(name, c) < 400):
        try:
            api_cell(name, cred, world, raw_redis)
        except AssertionError as exc:
            raise AssertionError(f"cell {name} x {cred}: {exc}") from exc


def api_cell(name: str, cred: str, world: World, raw_redis: redis.Redis) -> None:
    endpoint = ENDPOINTS[name]
    db_before = db_state()
    team_a_before = team_a_rows()
    room_a_before = redis_room_state(raw_redis, ROOM_A)

    response = rest_call(endpoint, world.auth[cred], endpoint.path(world))
    body = response.json()
    status = api_outcome(name, cred)
    assert response.status_code == status, (name, cred, body)

    if status == 401:
        assert response["WWW-Authenticate"] == 'Bearer realm="roomservice"'
        code = "not_authenticated" if cred == "none" else "authentication_failed"
        assert body == {"message": UNAUTHORIZED, "code": code, "extra": {}}
    elif status == 403:
        caller = world.callers[cred]
        assert endpoint.capability is not None
        message = errors.MANAGE_REFUSED.format(
            what=endpoint.capability,
            who=caller.describe(),
            how=errors.MANAGE_HOW[endpoint.capability],
        )
        assert body == {"message": message, "code": "not_permitted", "extra": {}}
        if cred in BOUND:
            assert f'bound to agent "{BOUND_AGENT}"' in message
    elif status == 404:
        if name == "key_revoke":
            assert body == {"message": errors.KEY_NOT_FOUND, "code": "not_found", "extra": {}}
        else:
            assert body == {
                "message": room_errors.ROOM_ACCESS_DENIED,
                "code": "room_not_found",
                "extra": {},
            }
        assert endpoint.missing_path is not None
        missing = rest_call(endpoint, world.auth[cred], endpoint.missing_path(world))
        assert (missing.status_code, missing.json()) == (response.status_code, body)
    else:
        check_allowed_body(name, cred, world, body)
        if cred != "other_team":
            return

    if status >= 400:
        assert db_state() == db_before
    assert team_a_rows() == team_a_before
    assert redis_room_state(raw_redis, ROOM_A) == room_a_before


def check_allowed_body(name: str, cred: str, w: World, body: Any) -> None:
    team = w.team_b if cred == "other_team" else w.team_a
    caller = w.callers.get(cred)
    if name == "me":
        assert caller is not None
        assert body == {
            "team": team.slug,
            "teamId": team.pk,
            "kind": caller.kind,
            "roomId": ROOM_A if cred in GUESTS else None,
            "agent": BOUND_AGENT if cred in BOUND else None,
            "readOnly": cred in READ_ONLY,
            "manage": sorted(caller.manage),
            "toolsProfile": None,
        }
    elif name == "keys_list":
        assert sorted(r["id"] for r in body) == sorted(
            ApiKey.objects.filter(team=team).values_list("id", flat=True)
        )
    elif name == "keys_create":
        assert body["secret"].startswith(KEY_PREFIX)
        assert ApiKey.objects.get(pk=body["id"]).team_id == team.pk
    elif name == "key_revoke":
        assert body["id"] == w.spare_key.pk and body["revoked_at"] is not None
    elif name == "rooms_list":
        assert by_room_id(body) == visible_rooms(cred, w)
    elif name == "rooms_create":
        assert Room.objects.get(room_id=body["roomId"]).team_id == team.pk
    elif name == "invites_list":
        assert {row["roomId"] for row in body} == {ROOM_A}
    elif name == "invite_create":
        assert Invite.objects.get(pk=body["id"]).room.room_id == ROOM_A
    elif name == "invite_revoke":
        assert body["id"] == w.guest_invite.pk and body["revoked_at"] is not None
    elif name == "webhooks_list":
        assert [h["id"] for h in body] == [w.hook.pk]
    elif name == "webhook_create":
        assert body["secret"].startswith("whsec_")
    elif name == "webhook_disable":
        assert body["active"] is False
    elif name == "webhook_deliveries":
        assert body == []
    elif name == "teams_create":
        assert body["team"] == "team-c"
    elif name == "room_summary":
        assert body["roomId"] == ROOM_A and body["tasks"]["total"] == 0
    elif name == "room_export":
        assert body["roomId"] == ROOM_A and body["signature"].startswith("hmac-sha256:")
    elif name == "room_archive":
        assert body["status"] == "archived"
        assert Room.objects.get(room_id=ROOM_A).status == "archived"
    elif name == "room_delete":
        assert body == {"roomId": ROOM_A, "deleted": True}
        assert not Room.objects.filter(room_id=ROOM_A).exists()
        # The next allowed bearer's cell deletes a room-a again.
        Room.objects.create(room_id=ROOM_A, team=w.team_a)
    elif name == "room_restore":
        assert body == {"roomId": ROOM_A, "status": "active", "previousStatus": "active"}
    else:  # pragma: no cover
        raise AssertionError(name)


# --- The dashboard ------------------------------------------------------------------------

# page -> (method, path, POST data, the capability it needs: None = any team member)
PAGES: dict[str, tuple[str, str, dict[str, str] | None, str | None]] = {
    "rooms": ("get", "/rooms", None, None),
    "room": ("get", f"/rooms/{ROOM_A}/", None, None),
    "room_live": ("get", f"/rooms/{ROOM_A}/live", None, None),
    "connect": ("get", f"/rooms/{ROOM_A}/connect", None, None),
    "report": ("get", f"/rooms/{ROOM_A}/report", None, None),
    "room_create": ("post", "/rooms", {"room_id": "", "name": "made"}, "rooms"),
    "keys": ("get", "/keys", None, "keys"),
    "key_create": ("post", "/keys", {"name": "minted"}, "keys"),
    "invites": ("get", f"/rooms/{ROOM_A}/invites", None, "invites"),
    "invite_create": ("post", f"/rooms/{ROOM_A}/invites", {"label": "g"}, "invites"),
    "shares": ("get", f"/rooms/{ROOM_A}/share", None, "invites"),
    "webhooks": ("get", f"/rooms/{ROOM_A}/webhooks", None, "webhooks"),
    "audit": ("get", "/audit", None, "team"),
    "member_invite": ("post", "/team", {"email": "new@a.example", "role": "member"}, "team"),
    "events": ("get", f"/rooms/{ROOM_A}/events?agent=x&q=anything", None, None),
    # A person acting in the room: the tool's own write check decides (a read-only key
    # session is told so on the page it returns to, and nothing changes).
    "act": ("post", f"/rooms/{ROOM_A}/act/broadcast", {"text": "hello"}, None),
    "team_acting": ("post", "/team/acting", {"allowed": "1"}, "team"),
}
REDIRECTING = ("room_create", "invite_create", "act", "team_acting")
SESSION_CAPS: dict[str, set[str]] = {
    "owner": {"rooms", "keys", "invites", "webhooks", "team"},
    "admin": {"rooms", "keys", "invites", "webhooks"},
    "member": set(),
    "key_session": {"rooms", "keys", "invites", "webhooks"},
    "ro_key_session": set(),
    "static_session": {"rooms", "keys", "invites", "webhooks", "team"},
    "outsider": set(),
}


def page_outcome(page: str, cred: str) -> int:
    _method, path, _, needs = PAGES[page]
    if cred == "outsider":
        # Team-b's owner: team-a's rooms are not there; the team-wide pages are team-b's.
        if ROOM_A in path:
            return 404
        return 302 if page in ("room_create", "team_acting") else 200
    if needs is None or needs in SESSION_CAPS[cred]:
        if page == "member_invite" and cred == "static_session":
            return 404  # inviting people needs a person, not a key
        # Creations redirect to the page that shows what they made (once).
        return 302 if page in REDIRECTING else 200
    return 404


@pytest.mark.parametrize("page", list(PAGES))
def test_dashboard_row(page: str, world: World, raw_redis: redis.Redis) -> None:
    """One page, every dashboard credential in turn (refused ones first)."""
    for cred in sorted(SESSIONS, key=lambda c: page_outcome(page, c) != 404):
        try:
            dashboard_cell(page, cred, world, raw_redis)
        except AssertionError as exc:
            raise AssertionError(f"cell {page} x {cred}: {exc}") from exc


def dashboard_cell(page: str, cred: str, world: World, raw_redis: redis.Redis) -> None:
    method, path, data, _needs = PAGES[page]
    client = signed_in(world, cred)
    db_before = db_state()
    team_a_before = team_a_rows()
    room_a_before = redis_room_state(raw_redis, ROOM_A)
    response = client.post(path, data) if method == "post" else client.get(path)
    expected = page_outcome(page, cred)
    if cred == "outsider" and expected != 404:
        # Team-b's own pages and actions: nothing of team-a is shown or touched.
        assert response.status_code == expected
        assert ROOM_A not in response.content.decode()
        assert team_a_rows() == team_a_before
        assert redis_room_state(raw_redis, ROOM_A) == room_a_before
        return
    assert response.status_code == expected, (page, cred, response.status_code)
    if expected == 404:
        assert db_state() == db_before
        assert redis_room_state(raw_redis, ROOM_A) == room_a_before
    if page == "act" and expected != 404:
        changed = redis_room_state(raw_redis, ROOM_A) != room_a_before
        assert changed == (cred != "ro_key_session"), (cred, "wrote" if changed else "refused")
    if expected != 404 and page == "key_create":
        minted = ApiKey.objects.filter(name="minted").order_by("-pk").first()
        assert minted is not None and minted.team_id == world.team_a.pk


@pytest.mark.parametrize("cred", SESSIONS)
def test_the_connect_page_mints_a_key_only_for_those_who_may(cred: str, world: World) -> None:
    client = signed_in(world, cred)
    before = ApiKey.objects.count()
    response = client.post(f"/rooms/{ROOM_A}/connect")
    if cred == "outsider":
        assert response.status_code == 404
    elif "keys" in SESSION_CAPS[cred]:
        # The page a mint redirects to shows the key once (a reload mints nothing).
        assert response.status_code == 302 and response["Location"].endswith("/connect")
    else:
        assert response.status_code == 200  # the page, with nothing minted
    minted = ApiKey.objects.count() - before
    assert minted == (1 if "keys" in SESSION_CAPS[cred] else 0)


@pytest.mark.parametrize("cred", ["share", "revoked_share"])
def test_share_page_cell(cred: str, world: World, raw_redis: redis.Redis) -> None:
    token = world.share_token if cred == "share" else world.revoked_share_token
    before = redis_room_state(raw_redis, ROOM_A)
    for path in (f"/s/{token}/", f"/s/{token}/live"):
        response = Client().get(path)
        assert response.status_code == (200 if cred == "share" else 404), path
        if response.status_code == 200:
            html = response.content.decode()
            assert "<form" not in html and "rs_live_" not in html and "rs_inv_" not in html
    if cred == "revoked_share":
        assert redis_room_state(raw_redis, ROOM_A) == before
