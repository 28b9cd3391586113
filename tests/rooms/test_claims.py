"""claim_task, release_task, task versions and claim leases (docs/protocol.md "Claims and
safe retries"): one winner of any race, refusals that name the owner, and leases that lapse
without anyone calling."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from rooms import clock, errors
from rooms.keys import claims_due
from rooms.refs import RoomRef
from rooms.selectors import plan as plan_selectors
from rooms.services import plan as plan_services
from rooms.services import presence as presence_services
from rooms.store import plan as plan_store
from tests.conftest import redis_for_assertions
from tests.rooms.test_plan import add, all_events, invoke, update

pytestmark = pytest.mark.anyio


async def claim(room: RoomRef, task_id: str, agent: str, **kw: Any) -> dict[str, Any]:
    return await plan_services.task_claim(
        room, task_id=task_id, agent_id=agent, lease_seconds=kw.get("lease")
    )


async def refused(awaitable: Any) -> errors.DomainError:
    with pytest.raises(errors.DomainError) as caught:
        await awaitable
    return caught.value


# --- claim_task -------------------------------------------------------------------------


async def test_of_thirty_agents_claiming_one_task_at_once_exactly_one_wins(
    room: RoomRef,
) -> None:
    task = await add(room, "the one task")
    agents = [f"agent-{i:02d}" for i in range(30)]

    results = await asyncio.gather(
        *(claim(room, task["id"], a) for a in agents), return_exceptions=True
    )

    winners = [r for r in results if isinstance(r, dict)]
    losers = [r for r in results if not isinstance(r, dict)]
    assert len(winners) == 1 and len(losers) == 29
    owner = winners[0]["owner"]
    assert owner in agents and winners[0]["status"] == "in_progress"
    for loss in losers:
        assert isinstance(loss, errors.TaskClaimError)
        assert f'owned by "{owner}"' in loss.message
        assert loss.extra == {
            "taskId": task["id"],
            "owner": owner,
            "status": "in_progress",
            "version": 2,
        }
    stored = await plan_selectors.task_get(room, task_id=task["id"])
    assert stored["owner"] == owner and stored["version"] == 2
    claimed = [e for e in await all_events(room) if e["type"] == "task_claimed"]
    assert len(claimed) == 1 and claimed[0]["from"] == owner


async def test_claim_refuses_done_tasks_and_pending_tasks_with_unmet_dependencies(
    room: RoomRef,
) -> None:
    first = await add(room, "schema")
    second = await add(room, "api", depends_on=[first["id"], "t_notthereyet"])
    await update(room, first["id"], "in_progress", owner="db", agent_id="db")

    unmet = await refused(claim(room, second["id"], "api-agent"))
    assert isinstance(unmet, errors.TaskClaimError)
    assert f"{first['id']} (in_progress)" in unmet.message
    assert "t_notthereyet (missing)" in unmet.message
    assert unmet.extra["unmet"] == [
        {"id": first["id"], "status": "in_progress"},
        {"id": "t_notthereyet", "status": "missing"},
    ]
    assert (await plan_selectors.task_get(room, task_id=second["id"]))["owner"] is None

    await update(room, first["id"], "done", agent_id="db")
    done = await refused(claim(room, first["id"], "api-agent"))
    assert isinstance(done, errors.TaskClaimError) and "is done" in done.message

    # A blocked task can be claimed whatever its dependencies (someone is unblocking it).
    blocked = await add(room, "blocked one", depends_on=["t_notthereyet"])
    await update(room, blocked["id"], "blocked", agent_id="planner")
    assert (await claim(room, blocked["id"], "fixer"))["owner"] == "fixer"


async def test_claiming_your_own_task_again_renews_it_without_a_new_version(
    room: RoomRef,
) -> None:
    task = await add(room, "mine")
    first = await claim(room, task["id"], "backend")
    again = await claim(room, task["id"], "backend")

    assert first["version"] == again["version"] == 2
    assert [e["type"] for e in await all_events(room)] == ["task_added", "task_claimed"]


async def test_an_unknown_task_names_the_closest(room: RoomRef) -> None:
    task = await add(room, "login api")
    wrong = task["id"][:-1] + ("x" if task["id"][-1] != "x" else "y")

    error = await refused(claim(room, wrong, "backend"))

    assert isinstance(error, errors.TaskNotFoundError)
    assert task["id"] in error.message and "login api" in error.message


async def test_a_lease_shorter_than_the_minimum_is_refused_saying_the_minimum(
    room: RoomRef,
) -> None:
    task = await add(room, "t")

    error = await refused(claim(room, task["id"], "backend", lease=5))

    assert isinstance(error, errors.ToolArgumentsError)
    assert "at least 60" in error.message
    assert (await plan_selectors.task_get(room, task_id=task["id"]))["owner"] is None


async def test_claim_and_release_through_the_registry_refuse_unknown_arguments(
    room: RoomRef,
) -> None:
    task = await add(room, "t")
    with pytest.raises(errors.ToolArgumentsError) as caught:
        await invoke(room, "claim_task", taskId=task["id"], agentId="a", owner="a")
    assert "owner" in caught.value.message
    with pytest.raises(errors.ToolArgumentsError):
        await invoke(room, "claim_task", taskId=task["id"])  # agentId is required
    claimed = await invoke(room, "claim_task", taskId=task["id"], agentId="a")
    assert claimed["owner"] == "a"


# --- release_task -----------------------------------------------------------------------


async def test_only_the_owner_releases_and_the_task_is_pending_unowned_again(
    room: RoomRef,
) -> None:
    task = await add(room, "t")
    await claim(room, task["id"], "backend")

    other = await refused(
        plan_services.task_release(room, task_id=task["id"], agent_id="frontend", note=None)
    )
    assert isinstance(other, errors.TaskClaimError)
    assert 'owned by "backend", not "frontend"' in other.message

    released = await plan_services.task_release(
        room, task_id=task["id"], agent_id="backend", note="blocked on the schema; half done"
    )
    assert released["status"] == "pending" and released["owner"] is None
    assert released["version"] == 3
    assert released["notes"][-1]["text"] == "blocked on the schema; half done"
    event = (await all_events(room))[-1]
    assert event["type"] == "task_released" and event["from"] == "backend"
    assert event["payload"]["previousOwner"] == "backend"
    # Free again: the next agent claims it.
    assert (await claim(room, task["id"], "frontend"))["owner"] == "frontend"


# --- versions and takeovers -------------------------------------------------------------


async def test_every_change_moves_the_version_and_a_stale_writer_is_refused(
    room: RoomRef,
) -> None:
    task = await add(room, "t")
    assert task["version"] == 1
    read = await plan_selectors.task_get(room, task_id=task["id"])
    assert read["version"] == 1

    moved = await plan_services.task_update(
        room,
        task_id=task["id"],
        status="in_progress",
        owner_given=True,
        owner="backend",
        note=None,
        description=None,
        agent_id="backend",
        expected_version=1,
    )
    assert moved["version"] == 2

    stale = await refused(
        plan_services.task_update(
            room,
            task_id=task["id"],
            status="done",
            owner_given=False,
            owner=None,
            note=None,
            description=None,
            agent_id="backend",
            expected_version=1,
        )
    )
    assert isinstance(stale, errors.TaskVersionConflictError)
    assert "at version 2" in stale.message and 'owner "backend"' in stale.message
    assert stale.extra["version"] == 2 and stale.extra["owner"] == "backend"
    assert (await plan_selectors.task_get(room, task_id=task["id"]))["status"] == "in_progress"


async def test_of_writers_holding_one_version_exactly_one_lands(room: RoomRef) -> None:
    task = await add(room, "t")

    async def write(i: int) -> Any:
        return await plan_services.task_update(
            room,
            task_id=task["id"],
            status="blocked",
            owner_given=False,
            owner=None,
            note=f"writer {i}",
            description=None,
            agent_id=f"w{i}",
            expected_version=1,
        )

    results = await asyncio.gather(*(write(i) for i in range(20)), return_exceptions=True)

    landed = [r for r in results if isinstance(r, dict)]
    assert len(landed) == 1
    assert all(isinstance(r, errors.TaskVersionConflictError) for r in results if r not in landed)
    stored = await plan_selectors.task_get(room, task_id=task["id"])
    assert stored["version"] == 2 and len(stored["notes"]) == 1


async def test_update_task_does_not_hand_a_task_in_progress_to_another_agent(
    room: RoomRef,
) -> None:
    """The takeover a new user met: the frontend's update_task(owner: "frontend") took the
    task the backend held in progress."""
    task = await add(room, "t")
    await claim(room, task["id"], "backend")

    takeover = await refused(update(room, task["id"], "in_progress", owner="frontend"))
    assert isinstance(takeover, errors.TaskClaimError)
    assert 'in progress under "backend"' in takeover.message and "claim_task" in takeover.message
    assert (await plan_selectors.task_get(room, task_id=task["id"]))["owner"] == "backend"

    # Its owner can hand it over.
    handed = await update(room, task["id"], "in_progress", owner="frontend", agent_id="backend")
    assert handed["owner"] == "frontend"


# --- leases -----------------------------------------------------------------------------


async def test_a_quiet_owners_claim_lapses_by_the_sweep_with_an_event(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    task = await add(room, "t")
    claimed = await claim(room, task["id"], "backend", lease=60)
    assert claimed["lease_seconds"] == 60
    assert claimed["lease_expires_at"] == clock.iso_from_ms(clock.now_ms() + 60_000)

    frozen_clock[0] += timedelta(seconds=59)
    await plan_services.claims_sweep()
    assert (await plan_selectors.task_get(room, task_id=task["id"]))["owner"] == "backend"

    frozen_clock[0] += timedelta(seconds=2)
    assert await plan_services.claims_sweep() >= 1

    lapsed = await plan_selectors.task_get(room, task_id=task["id"])
    assert lapsed["status"] == "pending" and lapsed["owner"] is None
    assert lapsed["version"] == 3 and "lease_expires_at" not in lapsed
    event = (await all_events(room))[-1]
    assert event["type"] == "task_claim_expired"
    assert event["payload"]["previousOwner"] == "backend"
    assert event["payload"]["leaseSeconds"] == 60
    # Another agent can take it now.
    assert (await claim(room, task["id"], "frontend"))["owner"] == "frontend"


async def test_heartbeats_and_the_owners_updates_renew_a_lease(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    task = await add(room, "t")
    await claim(room, task["id"], "backend", lease=60)

    for _ in range(3):  # 150 s in all, never 60 s without a heartbeat
        frozen_clock[0] += timedelta(seconds=50)
        await presence_services.presence_heartbeat(room, agent_id="backend")
        await plan_services.claims_sweep()
    renewed = await plan_selectors.task_get(room, task_id=task["id"])
    assert renewed["owner"] == "backend"
    assert renewed["lease_expires_at"] == clock.iso_from_ms(clock.now_ms() + 60_000)

    frozen_clock[0] += timedelta(seconds=50)
    await update(room, task["id"], "in_progress", note="still at it", agent_id="backend")
    frozen_clock[0] += timedelta(seconds=50)
    await plan_services.claims_sweep()
    assert (await plan_selectors.task_get(room, task_id=task["id"]))["owner"] == "backend"

    # Another agent's heartbeat renews nothing of it.
    frozen_clock[0] += timedelta(seconds=30)
    await presence_services.presence_heartbeat(room, agent_id="frontend")
    frozen_clock[0] += timedelta(seconds=31)
    await plan_services.claims_sweep()
    assert (await plan_selectors.task_get(room, task_id=task["id"]))["owner"] is None


async def test_done_or_released_tasks_lose_their_lease_and_the_sweep_leaves_them(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    done = await add(room, "done one")
    released = await add(room, "released one")
    await claim(room, done["id"], "backend", lease=60)
    await claim(room, released["id"], "backend", lease=60)

    finished = await update(room, done["id"], "done", agent_id="backend")
    assert "lease_expires_at" not in finished
    await plan_services.task_release(room, task_id=released["id"], agent_id="backend", note=None)
    frozen_clock[0] += timedelta(seconds=120)
    await plan_services.claims_sweep()

    assert (await plan_selectors.task_get(room, task_id=done["id"]))["status"] == "done"
    assert (await plan_selectors.task_get(room, task_id=released["id"]))["version"] == 3
    assert not [e for e in await all_events(room) if e["type"] == "task_claim_expired"]


async def test_a_claim_taken_while_the_sweep_runs_keeps_its_place_in_the_index(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    """Between the sweep's step in the room and its index update a new leased claim lands:
    the sweep's second look at the room puts it back, and it lapses in time."""
    first = await add(room, "first")
    second = await add(room, "second")
    await claim(room, first["id"], "a", lease=60)
    frozen_clock[0] += timedelta(seconds=61)
    now = clock.now_ms()
    assert room.room_id in await plan_store.claims_due(now, 100_000)
    n, next_ms = await plan_store.claims_expire(room.keys, now_ms=now, now_iso=clock.now_iso())
    assert (n, next_ms) == (1, -1)
    await claim(room, second["id"], "b", lease=60)  # its own ZADD LT: a no-op, lower is in
    await plan_store.claims_due_settle(room.keys, now_ms=now, now_iso=clock.now_iso())

    frozen_clock[0] += timedelta(seconds=61)
    await plan_services.claims_sweep()
    assert (await plan_selectors.task_get(room, task_id=second["id"]))["owner"] is None


async def test_the_sweepers_index_holds_one_member_per_room_however_often_it_claims(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    """The index is one key every tenant shares: renewals and claims never grow it past
    one member per room, and its score is the room's earliest expiry."""
    tasks = [(await add(room, f"t{i}"))["id"] for i in range(5)]
    r = redis_for_assertions()
    try:
        for round_ in range(20):
            frozen_clock[0] += timedelta(seconds=1)
            for i, task in enumerate(tasks):
                await claim(room, task, "a", lease=60 + 100 * i + round_)
        members = [m for m in r.zrange(claims_due(), 0, -1) if m.startswith(room.room_id)]
        assert members == [room.room_id]
        first_expiry = r.zscore(claims_due(), room.room_id)
    finally:
        r.close()
    assert first_expiry is not None and first_expiry <= clock.now_ms() + 60_000
