"""Attacks a tenant holding one of a team's credentials would try, each refused, with the
legitimate path next to it still working. Each of these succeeded before the capability
model (issue 8); the cross-process ones are in tests/e2e/test_revocation.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, cast

import pytest
import redis
from django.contrib.auth.models import User
from django.test import AsyncClient, Client
from django.utils import timezone
from rest_framework.test import APIClient

from calls.runner import tool_run
from rooms import errors as room_errors
from rooms.keys import BearerKeys, RoomKeys
from rooms.store import bearers as bearers_store
from rooms.store import connections as connections_store
from tenants import access, errors, people, services
from tenants.auth import Bearer, caller_resolve, static_teams_ensure
from tenants.capabilities import Caller
from tenants.db import db_run
from tenants.models import ApiKey, Membership, Room, Team
from tests import callers
from tests.conftest import commandstats, new_room_id, redis_for_assertions

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.store]
BOUND = 10.0  # seconds: the bound on every wait in this file


def api(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def team_with_keys(slug: str) -> tuple[Team, dict[str, str]]:
    team = services.team_ensure(slug)
    secrets = {
        "full": services.api_key_create(team=team, name="full").secret,
        "bob": services.api_key_create(team=team, name="bob's", agent_name="bob").secret,
        "ro": services.api_key_create(team=team, name="viewer", read_only=True).secret,
    }
    return team, secrets


# --- 1. A bound key mints nothing and speaks only as itself ------------------------------------


def test_a_bound_key_cannot_mint_list_or_revoke_keys_but_a_full_key_can() -> None:
    team, secret = team_with_keys(new_room_id("bound"))
    bob = api(secret["bob"])
    before = ApiKey.objects.filter(team=team).count()

    minted = bob.post("/api/v1/keys", {"name": "escalate"}, format="json")
    listed = bob.get("/api/v1/keys")
    victim = ApiKey.objects.filter(team=team, name="full").get()
    revoked = bob.post(f"/api/v1/keys/{victim.pk}/revoke")
    invited = bob.post("/api/v1/rooms", {"name": "mine"}, format="json")

    for response in (minted, listed, revoked, invited):
        assert response.status_code == 403, response.json()
        assert response.json()["code"] == "not_permitted"
        assert 'bound to agent "bob"' in response.json()["message"]
    assert ApiKey.objects.filter(team=team).count() == before
    victim.refresh_from_db()
    assert victim.revoked_at is None
    # The legitimate path: the team's full key mints, and the minted key works.
    made = api(secret["full"]).post("/api/v1/keys", {"name": "ok"}, format="json")
    assert made.status_code == 201
    assert api(made.json()["secret"]).get("/api/v1/me").status_code == 200


@pytest.mark.anyio
async def test_a_bound_key_cannot_post_events_as_another_agent(redis_client_closed: None) -> None:
    _, secret = await db_run(team_with_keys, new_room_id("impostor"))
    bob = await caller_resolve(Bearer(secret["bob"]))
    assert bob is not None
    room_id = new_room_id("r")
    event = {"roomId": room_id, "type": "decision", "to": "all", "payload": {"ok": True}}
    for forged in (
        ("post_event", {**event, "from": "alice"}),
        (
            "write_context",
            {
                "roomId": room_id,
                "type": "note",
                "summary": "s",
                "payload": {"text": "x"},
                "author": "alice",
            },
        ),
        ("update_task", {"roomId": room_id, "taskId": "t_x", "status": "done", "agentId": "alice"}),
        ("set_shared_var", {"roomId": room_id, "key": "k", "value": "v", "agentId": "alice"}),
    ):
        with pytest.raises(errors.ActorMismatchError) as caught:
            await tool_run(bob, *forged)
        assert '"bob"' in caught.value.message and '"alice"' in caught.value.message
    posted = await tool_run(bob, "post_event", {**event, "from": "bob"})
    assert posted["from"] == "bob"
    log = await tool_run(bob, "read_events", {"roomId": room_id})
    assert [e["from"] for e in log] == ["bob"]


@pytest.mark.anyio
async def test_a_bound_key_naming_another_agent_as_agent_id_is_refused_and_itself_acts(
    redis_client_closed: None,
) -> None:
    """agentId stands for from, author and requestedBy (issue 25): it is bound like them."""
    _, secret = await db_run(team_with_keys, new_room_id("alias"))
    bob = await caller_resolve(Bearer(secret["bob"]))
    assert bob is not None
    room_id = new_room_id("r")
    event = {"roomId": room_id, "type": "decision", "to": "all", "payload": {"ok": True}}
    message = {"roomId": room_id, "to": "*", "body": "hi"}
    note = {"roomId": room_id, "type": "note", "summary": "s", "payload": {"text": "x"}}
    for forged in (
        ("post_event", {**event, "agentId": "alice"}),
        ("send_message", {**message, "agentId": "alice"}),
        ("write_context", {**note, "agentId": "alice"}),
        (
            "request_review",
            {
                "roomId": room_id,
                "targetType": "task",
                "targetId": "t_x",
                "reviewer": "carol",
                "agentId": "alice",
            },
        ),
    ):
        with pytest.raises(errors.ActorMismatchError) as caught:
            await tool_run(bob, *forged)
        assert '"bob"' in caught.value.message and '"alice"' in caught.value.message
    # Its own name in one, another's in the other: refused before the binding is asked.
    with pytest.raises(room_errors.ToolArgumentsError):
        await tool_run(bob, "post_event", {**event, "from": "bob", "agentId": "alice"})

    posted = await tool_run(bob, "post_event", {**event, "agentId": "bob"})
    sent = await tool_run(bob, "send_message", {**message, "agentId": "bob"})
    entry = await tool_run(bob, "write_context", {**note, "agentId": "bob"})
    assert posted["from"] == "bob" and entry["author"] == "bob" and sent["count"] == 0
    log = await tool_run(bob, "read_events", {"roomId": room_id, "order": "asc"})
    assert {e["from"] for e in log} == {"bob"}


# --- 2. A read-only key in the dashboard is a viewer -------------------------------------------


def test_a_read_only_key_signed_in_to_the_dashboard_is_a_viewer(settings: Any) -> None:
    settings.AUTH_MODE = "both"
    team, secret = team_with_keys(new_room_id("viewer"))
    room = services.room_create(team=team, room_id=new_room_id("seen"), actor="t")
    client = Client()
    assert client.post("/login", {"key": secret["ro"]})["Location"] == "/rooms"
    before = ApiKey.objects.filter(team=team).count()

    assert client.get("/keys").status_code == 404
    assert client.post("/keys", {"name": "full-power"}).status_code == 404
    assert client.post(f"/rooms/{room.room_id}/connect").status_code == 200
    assert client.post("/rooms", {"room_id": "", "name": "x"}).status_code == 404
    assert client.get(f"/rooms/{room.room_id}/invites").status_code == 404
    assert client.get("/audit").status_code == 404
    assert ApiKey.objects.filter(team=team).count() == before
    # What a viewer may do: look.
    assert client.get(f"/rooms/{room.room_id}/").status_code == 200
    # The same door with the team's full key manages keys.
    full = Client()
    full.post("/login", {"key": secret["full"]})
    assert full.post("/keys", {"name": "by-the-full-key"}).status_code == 200
    assert ApiKey.objects.filter(team=team).count() == before + 1


# --- 3. A read-only caller moves no one's cursor and claims nothing -----------------------------


@pytest.mark.anyio
async def test_a_read_only_caller_cannot_consume_another_agents_events(
    redis_client_closed: None,
) -> None:
    team, secret = await db_run(team_with_keys, new_room_id("cursor"))
    writer = await caller_resolve(Bearer(secret["full"]))
    viewer = await caller_resolve(Bearer(secret["ro"]))
    assert writer is not None and viewer is not None
    room = await db_run(
        lambda: services.room_create(team=team, room_id=new_room_id("log"), actor="t")
    )
    invite = await db_run(lambda: services.invite_create(room=room, read_only=True).secret)
    guest = await caller_resolve(Bearer(invite))
    assert guest is not None
    room_id = room.room_id
    for n in range(3):
        await tool_run(
            writer, "post_event", {"roomId": room_id, "type": "t", "from": "w", "payload": {"n": n}}
        )
    for thief in (viewer, guest):
        stolen = await tool_run(thief, "get_unread_events", {"roomId": room_id, "agentId": "alice"})
        assert stolen["count"] == 3  # it may read, with a cursor of its own
        await tool_run(thief, "get_my_summary", {"roomId": room_id, "agentId": "alice"})
        waited = await tool_run(
            thief, "wait_for_events", {"roomId": room_id, "agentId": "alice", "timeoutMs": 0}
        )
        assert waited["count"] == 0
    # alice's own cursor never moved: she still gets every event, once.
    mine = await tool_run(writer, "get_unread_events", {"roomId": room_id, "agentId": "alice"})
    assert [e["payload"]["n"] for e in mine["events"]] == [0, 1, 2]
    again = await tool_run(writer, "get_unread_events", {"roomId": room_id, "agentId": "alice"})
    assert again["count"] == 0


@pytest.mark.anyio
async def test_a_read_only_caller_never_claims_a_room(redis_client_closed: None) -> None:
    _, secret = await db_run(team_with_keys, new_room_id("squat"))
    viewer = await caller_resolve(Bearer(secret["ro"]))
    writer = await caller_resolve(Bearer(secret["full"]))
    assert viewer is not None and writer is not None
    unclaimed = new_room_id("free")
    with pytest.raises(room_errors.RoomAccessError):
        await tool_run(viewer, "read_plan", {"roomId": unclaimed})
    assert not await db_run(lambda: Room.objects.filter(room_id=unclaimed).exists())
    # A writable key's first touch claims it, as the protocol says.
    await tool_run(writer, "read_plan", {"roomId": unclaimed})
    assert await db_run(lambda: Room.objects.filter(room_id=unclaimed).exists())


# --- 4. A guest cannot lock its team out ------------------------------------------------------


async def _guest_and_team(label: str) -> tuple[Caller, Caller, str]:
    team, secret = await db_run(team_with_keys, new_room_id(label))
    room = await db_run(
        lambda: services.room_create(team=team, room_id=new_room_id("shared"), actor="t")
    )
    invite = await db_run(lambda: services.invite_create(room=room).secret)
    guest = await caller_resolve(Bearer(invite))
    owner = await caller_resolve(Bearer(secret["full"]))
    assert guest is not None and owner is not None
    return guest, owner, room.room_id


@pytest.mark.anyio
async def test_a_guest_spending_its_whole_rate_limit_leaves_the_team_untouched(
    settings: Any, redis_client_closed: None
) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 5
    settings.RATE_LIMIT_INVITE_PER_MINUTE = 20
    guest, owner, room_id = await _guest_and_team("rl")
    spent = 0
    with pytest.raises(errors.RateLimitedError) as caught:
        for _ in range(100):
            await tool_run(guest, "read_plan", {"roomId": room_id})
            spent += 1
    assert spent == 20 and "for this invite" in caught.value.message
    for _ in range(5):  # the team's whole budget is still there
        await tool_run(owner, "read_plan", {"roomId": room_id})


async def _stream(client: AsyncClient, room_id: str, secret_header: str) -> Any:
    return await client.get(
        f"/api/v1/rooms/{room_id}/events/stream", headers={"Authorization": secret_header}
    )


@pytest.mark.anyio
async def test_a_guest_holding_its_streams_and_waits_leaves_the_teams_slots(
    settings: Any, redis_client_closed: None
) -> None:
    settings.SSE_STREAMS_PER_GUEST = 1
    settings.SSE_STREAMS_PER_TEAM = 1
    settings.WAITERS_PER_GUEST = 1
    settings.WAITERS_PER_TEAM = 1
    team, secret = await db_run(team_with_keys, new_room_id("slots"))
    room = await db_run(
        lambda: services.room_create(team=team, room_id=new_room_id("s"), actor="t")
    )
    invite = await db_run(lambda: services.invite_create(room=room).secret)
    client = AsyncClient()
    first = await _stream(client, room.room_id, f"Bearer {invite}")
    assert first.status_code == 200
    over = await _stream(client, room.room_id, f"Bearer {invite}")
    assert over.status_code == 429 and over.json()["code"] == "too_many"
    assert "this invite" in over.json()["message"]
    mine = await _stream(client, room.room_id, f"Bearer {secret['full']}")
    assert mine.status_code == 200  # the guest's stream does not count against the team
    for response in (first, mine):
        await cast(AsyncIterator[bytes], response.streaming_content).aclose()  # type: ignore[attr-defined]

    guest = await caller_resolve(Bearer(invite))
    owner = await caller_resolve(Bearer(secret["full"]))
    assert guest is not None and owner is not None
    wait = {"roomId": room.room_id, "agentId": "g", "timeoutMs": 3000}
    parked = asyncio.ensure_future(tool_run(guest, "wait_for_events", wait))
    await held(1)  # it holds its waiter slot now
    with pytest.raises(errors.TooManyError):
        await tool_run(guest, "wait_for_events", {**wait, "timeoutMs": 0})
    done = await tool_run(owner, "wait_for_events", {**wait, "agentId": "o", "timeoutMs": 0})
    assert done["timedOut"] is True
    parked.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await parked


async def held(count: int, bound: float = BOUND) -> None:
    """Returns once this process holds `count` live uses (parked streams and waits): a
    bounded wait on that condition, yielding to the loop between looks."""
    from calls.live import live_uses

    async with asyncio.timeout(bound):
        while live_uses().held() < count:
            await asyncio.sleep(0.01)


# --- 5. Revocation, expiry, removal and deletion end live uses ---------------------------------


async def frames_until(response: Any, marker: bytes, timeout: float = BOUND) -> list[bytes]:
    """Read a stream's chunks until one contains `marker` (bounded), then stop."""
    chunks = cast(AsyncIterator[bytes], response.streaming_content)
    seen: list[bytes] = []
    async with asyncio.timeout(timeout):
        async for chunk in chunks:
            seen.append(chunk)
            if marker in chunk:
                break
    await chunks.aclose()  # type: ignore[attr-defined]
    return seen


@pytest.mark.anyio
async def test_revoking_a_key_ends_its_open_stream_and_its_pending_wait(
    redis_client_closed: None,
) -> None:
    team, secret = await db_run(team_with_keys, new_room_id("revoke"))
    room = await db_run(
        lambda: services.room_create(team=team, room_id=new_room_id("live"), actor="t")
    )
    caller = await caller_resolve(Bearer(secret["full"]))
    assert caller is not None
    stream = await _stream(AsyncClient(), room.room_id, f"Bearer {secret['full']}")
    assert stream.status_code == 200
    wait = asyncio.ensure_future(
        tool_run(
            caller, "wait_for_events", {"roomId": room.room_id, "agentId": "a", "timeoutMs": 30_000}
        )
    )
    reader = asyncio.ensure_future(frames_until(stream, b"event: revoked"))
    await held(2)  # the stream and the wait are both parked on the room
    key = await db_run(lambda: ApiKey.objects.get(team=team, name="full"))
    await db_run(services.api_key_revoke, key=key)

    frames = await reader
    assert b"event: revoked" in frames[-1]
    with pytest.raises(room_errors.CredentialLostError):
        async with asyncio.timeout(BOUND):
            await wait
    assert await caller_resolve(Bearer(secret["full"])) is None


@pytest.mark.anyio
async def test_an_invite_expiring_ends_its_stream(redis_client_closed: None) -> None:
    team = await db_run(services.team_ensure, new_room_id("expiry"))
    room = await db_run(
        lambda: services.room_create(team=team, room_id=new_room_id("e"), actor="t")
    )
    soon = timezone.now() + timedelta(seconds=1.5)
    invite = await db_run(lambda: services.invite_create(room=room, expires_at=soon).secret)
    stream = await _stream(AsyncClient(), room.room_id, f"Bearer {invite}")
    assert stream.status_code == 200
    frames = await frames_until(stream, b"event: revoked")
    assert b"event: revoked" in frames[-1]


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["member removed", "account deleted", "account deactivated"])
async def test_a_person_leaving_the_team_loses_their_open_stream(
    how: str, redis_client_closed: None
) -> None:
    owner = await db_run(
        lambda: people.user_signup(
            email=f"o-{new_room_id('x')}@a.example", password="correct-horse-battery"
        )
    )
    team = await db_run(lambda: Membership.objects.get(user=owner).team)
    member = await db_run(lambda: User.objects.create(username=new_room_id("m")))
    membership = await db_run(
        lambda: services.membership_add(team=team, user=member, role="member", actor="t")
    )
    room = await db_run(
        lambda: services.room_create(team=team, room_id=new_room_id("p"), actor="t")
    )
    client = AsyncClient()
    await client.aforce_login(member)
    stream = await client.get(f"/api/v1/rooms/{room.room_id}/events/stream")
    assert stream.status_code == 200
    reader = asyncio.ensure_future(frames_until(stream, b"event: revoked"))
    await held(1)
    if how == "member removed":
        await db_run(services.membership_remove, membership=membership, actor="t")
    elif how == "account deactivated":  # as the Django admin does it: the row saved
        member.is_active = False
        await db_run(member.save)
    else:
        await db_run(people.user_delete, user=member)
    frames = await reader
    assert b"event: revoked" in frames[-1]


@pytest.mark.anyio
async def test_a_revocation_whose_signal_was_lost_is_found_by_the_sweep(
    settings: Any, redis_client_closed: None
) -> None:
    """A key revoked behind the product's back (a bare UPDATE: no purge, no signal) still
    ends the live uses that hold it, at the next sweep; a live key beside it is kept."""
    from calls.live import LiveUses

    settings.CREDENTIAL_RECHECK_SECONDS = 1
    team, secrets = await db_run(team_with_keys, new_room_id("sweep"))
    revoked, kept = [await caller_resolve(Bearer(secrets[n])) for n in ("full", "bob")]
    assert revoked is not None and kept is not None
    registry = LiveUses()
    lost, live = await registry.hold(revoked), await registry.hold(kept)
    await db_run(
        lambda: ApiKey.objects.filter(team=team, name="full").update(revoked_at=timezone.now())
    )
    async with asyncio.timeout(BOUND):
        await lost.lost.wait()
    assert not live.lost.is_set()
    registry.release(lost)
    registry.release(live)


@pytest.mark.anyio
async def test_no_request_in_flight_can_recache_a_revoked_key(redis_client_closed: None) -> None:
    """The race: a request reads the key from the database just before it is revoked, and
    writes its answer to the cache just after. The generation it read has moved, so the
    write is dropped and the next request is refused."""
    _, secret = await db_run(team_with_keys, new_room_id("race"))
    from tenants.credentials import secret_digest

    digest = secret_digest(secret["full"])
    cached, generation = await bearers_store.bearer_cached(digest)  # the request's first step
    assert cached is None
    live = await db_run(lambda: ApiKey.objects.get(digest=digest))  # ...its database read
    await db_run(services.api_key_revoke, key=live)  # meanwhile: revoked
    late = json.dumps(
        {
            "team_id": live.team_id,
            "team_slug": "x",
            "kind": "key",
            "credential": f"key:{live.pk}",
            "write": True,
            "manage": [],
        }
    )
    assert (
        await bearers_store.bearer_cache_fill(digest, late, ttl_seconds=60, generation=generation)
        is False
    )
    assert await connections_store.client().get(BearerKeys(digest).cache) is None
    assert await caller_resolve(Bearer(secret["full"])) is None


# --- 6. Team identity: no slug takeover, no leftovers ----------------------------------------


def test_a_static_teams_slug_cannot_be_taken_before_it_has_acted(settings: Any) -> None:
    settings.API_KEYS = "provider:static-provider-secret-0123456789,acme:static-acme-secret-012345"
    static_teams_ensure()  # what every process does at startup
    taken = api("static-provider-secret-0123456789").post(
        "/api/v1/teams", {"slug": "acme"}, format="json"
    )
    assert taken.status_code == 409 and taken.json()["code"] == "team_unavailable"
    # acme's key reaches acme, which nobody else got to create.
    me = api("static-acme-secret-012345").get("/api/v1/me").json()
    assert me["team"] == "acme" and Team.objects.get(slug="acme").is_static
    fresh = api("static-provider-secret-0123456789").post(
        "/api/v1/teams", {"slug": "acme-two"}, format="json"
    )
    assert fresh.status_code == 201


def test_a_static_key_never_reaches_a_team_created_with_its_slug(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    services.team_create(slug="early-bird", actor="t")  # created before the key was set up
    settings.API_KEYS = "early-bird:static-early-bird-secret-0123"
    with caplog.at_level(logging.ERROR, logger="tenants.auth"):
        refused = api("static-early-bird-secret-0123").get("/api/v1/me")
    assert refused.status_code == 401
    assert any("early-bird" in r.getMessage() for r in caplog.records)


def test_a_team_deleted_in_the_admin_leaves_no_state_and_no_working_key(
    raw_redis_client: redis.Redis,
) -> None:
    slug = new_room_id("doomed")
    team, secret = team_with_keys(slug)
    room = services.room_create(team=team, room_id=new_room_id("vault"), actor="t")
    full = api(secret["full"])
    path = f"/api/v1/rooms/{room.room_id}/tools/set_shared_var"
    assert (
        full.post(
            path, {"key": "db_password", "value": "hunter2", "agentId": "a"}, format="json"
        ).status_code
        == 200
    )
    assert full.get("/api/v1/me").status_code == 200  # the key is in the bearer cache now
    keys = RoomKeys(room.room_id)
    assert raw_redis_client.exists(keys.vars)

    User.objects.create_superuser("support", "s@example.com", "pw-123456789")
    staff = Client()
    staff.force_login(User.objects.get(username="support"))
    confirm = staff.post(f"/admin/tenants/team/{team.pk}/delete/", {"post": "yes"})
    assert confirm.status_code == 302

    assert not Team.objects.filter(slug=slug).exists()
    assert raw_redis_client.exists(*keys.durable()) == 0
    from tenants.credentials import secret_digest

    assert raw_redis_client.get(BearerKeys(secret_digest(secret["full"])).cache) is None
    assert full.get("/api/v1/me").status_code == 401
    # A new team taking the freed slug finds nothing of the old one.
    reborn = services.team_create(slug=slug, actor="t")
    key = services.api_key_create(team=reborn, name="k").secret
    got = api(key).post(
        f"/api/v1/rooms/{room.room_id}/tools/get_shared_var", {"key": "db_password"}, format="json"
    )
    assert got.status_code == 200 and got.json() == {
        "key": "db_password",
        "value": None,
        "found": False,
    }


def test_a_key_or_room_deleted_in_the_admin_is_gone_at_once(
    raw_redis_client: redis.Redis,
) -> None:
    team, secret = team_with_keys(new_room_id("admin-del"))
    room = services.room_create(team=team, room_id=new_room_id("gone"), actor="t")
    full = api(secret["full"])
    assert (
        full.post(
            f"/api/v1/rooms/{room.room_id}/tools/heartbeat", {"agentId": "a"}, format="json"
        ).status_code
        == 200
    )
    User.objects.create_superuser("support2", "s2@example.com", "pw-123456789")
    staff = Client()
    staff.force_login(User.objects.get(username="support2"))
    key = ApiKey.objects.get(team=team, name="full")
    assert staff.post(f"/admin/tenants/room/{room.pk}/delete/", {"post": "yes"}).status_code == 302
    assert raw_redis_client.exists(*RoomKeys(room.room_id).durable()) == 0
    assert staff.post(f"/admin/tenants/apikey/{key.pk}/delete/", {"post": "yes"}).status_code == 302
    assert full.get("/api/v1/me").status_code == 401  # the cached answer went with the row
    viewer = api(secret["ro"])
    assert viewer.get("/api/v1/me").status_code == 200  # the team's other keys still work


@pytest.fixture
def raw_redis_client() -> Any:
    r = redis_for_assertions()
    yield r
    r.close()


# --- 7. With claiming off, nothing tells another team's room from no room -------------------------


def test_creating_a_taken_room_id_is_answered_like_any_denial(settings: Any) -> None:
    settings.ROOM_CLAIM_ON_FIRST_TOUCH = False
    _ours, ours_keys = team_with_keys(new_room_id("prober"))
    theirs, _ = team_with_keys(new_room_id("owner"))
    taken = services.room_create(team=theirs, room_id=new_room_id("secret"), actor="t")
    prober = api(ours_keys["full"])

    create = prober.post("/api/v1/rooms", {"roomId": taken.room_id}, format="json")
    read_theirs = prober.post(f"/api/v1/rooms/{taken.room_id}/tools/read_plan", {}, format="json")
    read_unknown = prober.post(
        f"/api/v1/rooms/{new_room_id('nobody')}/tools/read_plan", {}, format="json"
    )
    read_malformed = prober.post("/api/v1/rooms/Not.A__Room/tools/read_plan", {}, format="json")

    denial = {"message": room_errors.ROOM_ACCESS_DENIED, "code": "room_not_found", "extra": {}}
    for response in (create, read_theirs, read_unknown, read_malformed):
        assert (response.status_code, response.json()) == (404, denial)
    assert Room.objects.get(room_id=taken.room_id).team == theirs
    mine = prober.post("/api/v1/rooms", {"roomId": new_room_id("ok")}, format="json")
    assert mine.status_code == 201  # the legitimate path


def _sql_shape(sql: str) -> str:
    """A statement with its literals replaced, so two lookups of different ids compare."""
    return re.sub(r"'[^']*'|\b\d+\b", "?", sql)


@pytest.mark.anyio
async def test_another_teams_room_an_unknown_id_and_a_malformed_id_take_the_same_path(
    settings: Any, caplog: pytest.LogCaptureFixture, redis_client_closed: None
) -> None:
    """No timing difference can come from work that is the same: the same Redis commands
    and the same database queries, in the same order, for all three (the bench measures
    the times: `make bench`, "room denials")."""
    settings.ROOM_CLAIM_ON_FIRST_TOUCH = False
    settings.DEBUG = True  # every connection logs its SQL (the access check's run in threads)
    theirs = await callers.team(new_room_id("theirs"))
    taken = new_room_id("taken")
    await db_run(
        lambda: services.room_create(
            team=Team.objects.get(pk=theirs.team_id), room_id=taken, actor="t"
        )
    )
    prober = await callers.team(new_room_id("prober"))
    r = connections_store.client()

    async def trace(room_id: str) -> tuple[dict[str, int], list[str], str]:
        before = await commandstats(r)
        caplog.clear()
        with (
            caplog.at_level(logging.DEBUG, logger="django.db.backends"),
            pytest.raises(room_errors.RoomAccessError) as caught,
        ):
            await access.room_access(prober, room_id, write=False)
        after = await commandstats(r)
        calls = {
            name: n - before.get(name, 0)
            for name, n in after.items()
            if n != before.get(name, 0) and name not in ("cmdstat_info",)
        }
        sql = [_sql_shape(str(rec.args[1])) for rec in caplog.records if rec.args]
        return calls, sql, caught.value.message

    await trace(new_room_id("warm-up"))  # the process's first use of the script is an EVAL
    known = await trace(taken)
    unknown = await trace(new_room_id("ghost"))
    malformed = await trace("Not.A__Room")
    assert known == unknown == malformed
    calls, sql, message = known
    assert message == room_errors.ROOM_ACCESS_DENIED
    assert sum(calls.values()) >= 1 and len(sql) >= 1
