"""File leases (docs/protocol.md "File leases and drift"): exclusive and shared, globs, normalised
paths, expiry, only the holder renews or releases, exactly one winner at once."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta
from typing import Any

import pytest

from calls.runner import tool_run
from rooms import clock, errors
from rooms.paths import path_matches, path_normalize
from rooms.refs import RoomRef
from tenants.access import room_access
from tenants.capabilities import Caller

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def claim(caller: Caller, room: RoomRef, agent: str, path: str, **args: Any) -> Any:
    return await call(caller, room, "lease_claim", agentId=agent, path=path, **args)


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("src/app.py", "src/app.py"),
        ("./src/../lib/x.py", "lib/x.py"),
        ("/src//a.py", "src/a.py"),
        ("src\\win\\a.py", "src/win/a.py"),
        ("src/", "src/**"),
        ("src/**/**/a.py", "src/**/a.py"),
        ("a**b/c", "a*b/c"),
    ],
)
def test_paths_are_normalised(raw: str, normal: str) -> None:
    assert path_normalize(raw) == normal


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("../etc/passwd", "leaves"),
        ("a/../../b", "leaves"),
        ("  ", "empty"),
        ("{a,b}.py", "braces"),
        (".", "names no file"),
        ("a\nb", "control"),
    ],
)
def test_odd_paths_are_refused_saying_why(raw: str, why: str) -> None:
    with pytest.raises(errors.ToolArgumentsError, match=why):
        path_normalize(raw)


# (held, claimed, overlap): what a file system would say, and where the answer is
# conservative (a yes for globs no path matches both of), the note says so.
OVERLAP_TABLE = [
    ("src/app.py", "src/app.py", True),
    ("src/app.py", "src/other.py", False),
    ("src/**", "src/app.py", True),
    ("src/**", "src/deep/er/x.py", True),
    ("src/**", "srcx/app.py", False),
    ("src/**", "lib/**", False),
    ("**", "anything/at/all.txt", True),
    ("**/*.md", "docs/readme.md", True),
    ("**/*.md", "README.md", True),  # ** includes no segment at all
    ("*.md", "docs/readme.md", False),  # * never crosses a /
    ("src/*.py", "src/*.ts", False),  # the tails differ
    ("src/a*", "src/b*", False),  # the heads differ
    ("src/a*.py", "src/*b.py", True),  # src/ab.py
    ("src/a*x", "src/*y", False),
    ("src/[ab].py", "src/a.py", True),
    ("src/[ab].py", "src/c.py", False),
    ("src/[!ab].py", "src/a.py", False),
    ("src/?.py", "src/ab.py", False),
    ("src/**/test_*.py", "src/tests/unit/test_x.py", True),
    ("src/**/test_*.py", "src/**/*_test.py", True),  # conservative: src/test__test.py exists
    ("a/**/b", "a/b", True),
    ("a/**/b/**/c", "a/x/b/c", True),
    ("a/*/c", "a/b/d/c", False),
]


@pytest.mark.parametrize(("held", "claimed", "overlap"), OVERLAP_TABLE)
async def test_the_glob_overlap_table(
    team_a: Caller, room: RoomRef, held: str, claimed: str, overlap: bool
) -> None:
    assert (await claim(team_a, room, "alice", held))["granted"]

    got = await claim(team_a, room, "bob", claimed)

    assert got["granted"] is not overlap
    if overlap:
        assert got["conflicts"] == [
            {
                "path": path_normalize(held),
                "holder": "alice",
                "mode": "exclusive",
                "expiresAt": got["conflicts"][0]["expiresAt"],
            }
        ]


async def test_overlap_never_misses_a_path_both_globs_match(team_a: Caller, room: RoomRef) -> None:
    """Random globs against random paths: wherever rooms.paths.path_matches finds a path
    both match, the lease scripts say they overlap (they may say so more often)."""
    rng = random.Random(20261201)
    names = ["a", "b", "ab", "x.py", "y.md", "test_a.py", "a_test.py"]
    segments = [*names, "*", "*.py", "a*", "*b", "?", "[ab]", "[!a]*", "**"]
    paths = ["/".join(rng.choice(names) for _ in range(rng.randint(1, 4))) for _ in range(400)]
    globs = sorted(
        {
            path_normalize("/".join(rng.choice(segments) for _ in range(rng.randint(1, 4))))
            for _ in range(60)
        }
    )
    shared_a_path = told_free = 0
    for held in globs[:20]:
        lease = await claim(team_a, room, "holder", held, mode="shared")
        for other in globs:
            both = any(path_matches(held, p) and path_matches(other, p) for p in paths)
            check = await call(team_a, room, "lease_check", path=other)
            if both:
                shared_a_path += 1
                assert not check["free"], (held, other)
            told_free += check["free"]
        await call(team_a, room, "lease_release", agentId="holder", leaseId=lease["lease"]["id"])
    # Both kinds of pair were met: an overlap that says yes to everything would fail here.
    assert shared_a_path > 50 and told_free > 50


async def test_exclusive_keeps_everyone_off_and_shared_keeps_off_only_exclusive(
    team_a: Caller, room: RoomRef
) -> None:
    assert (await claim(team_a, room, "alice", "docs/**", mode="shared"))["granted"]
    assert (await claim(team_a, room, "bob", "docs/a.md", mode="shared"))["granted"]
    refused = await claim(team_a, room, "carol", "docs/a.md")
    assert not refused["granted"] and refused["lease"] is None
    assert {c["holder"] for c in refused["conflicts"]} == {"alice", "bob"}
    # Issue 22: the refusal says who holds it and what to do, never how to get past it.
    assert '"alice"' in refused["hint"] and '"bob"' in refused["hint"]
    assert "send_message" in refused["hint"] and "get_unblocked_tasks" in refused["hint"]
    assert "ROOMSERVICE_ALLOW" not in refused["hint"] and "override" not in refused["hint"]

    assert (await claim(team_a, room, "carol", "src/app.py"))["granted"]
    assert not (await claim(team_a, room, "dave", "src/**", mode="shared"))["granted"]


async def test_a_lease_carries_its_task_and_an_unknown_task_names_the_closest(
    team_a: Caller, room: RoomRef
) -> None:
    task = await call(team_a, room, "add_task", title="Refactor the parser")
    got = await claim(team_a, room, "alice", "src/parser.py", taskId=task["id"], reason="refactor")
    assert got["lease"]["taskId"] == task["id"] and got["lease"]["reason"] == "refactor"

    with pytest.raises(errors.TaskNotFoundError, match=task["id"]):
        last = "z" if task["id"][-1] != "z" else "y"  # (never the task's own id)
        await claim(team_a, room, "alice", "src/lexer.py", taskId=task["id"][:-1] + last)


async def test_leases_lapse_unless_renewed_and_expired_ones_are_never_shown(
    team_a: Caller, room: RoomRef, frozen_clock: list[datetime]
) -> None:
    # Two holders: an act of alice's would renew every lease she holds (issue 24).
    short = await claim(team_a, room, "alice", "a.py", ttlSeconds=10)
    kept = await claim(team_a, room, "carol", "b.py", ttlSeconds=10)
    frozen_clock[0] += timedelta(seconds=8)
    renewed = await call(team_a, room, "lease_renew", agentId="carol", path="b.py", ttlSeconds=60)
    assert renewed["expiresAt"] == clock.iso_from_ms(clock.now_ms() + 60_000)
    frozen_clock[0] += timedelta(seconds=3)

    listed = await call(team_a, room, "lease_list")
    assert [lease["id"] for lease in listed["leases"]] == [kept["lease"]["id"]]
    assert (await call(team_a, room, "lease_check", path="a.py"))["free"]
    assert (await claim(team_a, room, "bob", "a.py"))["granted"]  # the lapsed one is gone
    with pytest.raises(errors.LeaseNotFoundError, match="expired, was released"):
        await call(team_a, room, "lease_renew", agentId="alice", leaseId=short["lease"]["id"])


async def test_claiming_your_own_lease_again_renews_it(team_a: Caller, room: RoomRef) -> None:
    first = await claim(team_a, room, "alice", "a.py", ttlSeconds=30)
    again = await claim(team_a, room, "alice", "a.py", ttlSeconds=600)

    assert again["renewed"] is True and again["lease"]["id"] == first["lease"]["id"]
    assert (await call(team_a, room, "lease_list"))["count"] == 1


async def test_only_the_holder_renews_or_releases(team_a: Caller, room: RoomRef) -> None:
    lease = (await claim(team_a, room, "alice", "a.py"))["lease"]

    for tool in ("lease_renew", "lease_release"):
        with pytest.raises(errors.LeaseRefusedError, match='held by "alice", not "bob"'):
            await call(team_a, room, tool, agentId="bob", leaseId=lease["id"])
    with pytest.raises(errors.LeaseNotFoundError, match=r"a\.py"):
        await call(team_a, room, "lease_release", agentId="bob", path="a.py")  # bob holds none

    released = await call(team_a, room, "lease_release", agentId="alice", path="./a.py")
    assert released == {"released": True, "path": "a.py"}
    assert (await call(team_a, room, "lease_list"))["leases"] == []
    events = await call(team_a, room, "read_events", limit=5)
    assert [e["type"] for e in events][:2] == ["lease_released", "lease_granted"]


async def test_lease_check_lists_other_holders_first_and_ignores_your_own(
    team_a: Caller, room: RoomRef
) -> None:
    await claim(team_a, room, "alice", "src/**", mode="shared")
    await claim(team_a, room, "bob", "src/a.py", mode="shared")

    mine = await call(team_a, room, "lease_check", path="src/a.py", agentId="bob")
    anyone = await call(team_a, room, "lease_check", path="src/a.py")

    assert [lease["holder"] for lease in mine["leases"]] == ["alice", "bob"] and not mine["free"]
    assert not anyone["free"]
    only_bob = await call(team_a, room, "lease_check", path="src/b.py", agentId="alice")
    assert only_bob["free"] and [lease["holder"] for lease in only_bob["leases"]] == ["alice"]


async def test_of_many_agents_claiming_overlapping_paths_at_once_exactly_one_wins(
    team_a: Caller, room: RoomRef
) -> None:
    paths = ["src/**", "src/app.py", "src/*.py", "**/app.py", "src/app.py"] * 6

    results = await asyncio.gather(
        *(claim(team_a, room, f"agent-{i:02d}", p) for i, p in enumerate(paths))
    )

    won = [r for r in results if r["granted"]]
    assert len(won) == 1
    holder = won[0]["lease"]["holder"]
    assert all(
        [c["holder"] for c in r["conflicts"]] == [holder] for r in results if not r["granted"]
    )


async def test_the_lease_quota_refuses_naming_it(
    team_a: Caller, room: RoomRef, settings: Any
) -> None:
    settings.ROOM_LEASES_MAX = 2
    await claim(team_a, room, "alice", "a.py")
    await claim(team_a, room, "alice", "b.py")
    with pytest.raises(errors.QuotaExceededError, match=r"live file leases"):
        await claim(team_a, room, "alice", "c.py")


async def test_another_rooms_leases_are_not_this_rooms(team_a: Caller, room: RoomRef) -> None:
    other = await room_access(team_a, room.room_id + "-b", write=True)
    await claim(team_a, other, "alice", "src/**")

    assert (await claim(team_a, room, "bob", "src/app.py"))["granted"]
    assert (await call(team_a, room, "lease_list"))["count"] == 1


# --- Drift ---------------------------------------------------------------------------------

A = "a" * 64
B = "b" * 64


async def test_drift_is_safe_minor_or_critical_as_the_rules_say(
    team_a: Caller, room: RoomRef
) -> None:
    none_noted = await call(team_a, room, "drift_check", agentId="alice", path="a.py", sha256=A)
    assert none_noted["severity"] == "SAFE" and none_noted["since"] is None
    assert "note_read" in none_noted["message"]

    noted = await call(team_a, room, "note_read", agentId="alice", path="./a.py", sha256=A.upper())
    assert noted["path"] == "a.py" and noted["sha256"] == A

    same = await call(team_a, room, "drift_check", agentId="alice", path="a.py", sha256=A)
    assert (same["severity"], same["changed"], same["since"]) == ("SAFE", False, noted["at"])

    minor = await call(team_a, room, "drift_check", agentId="alice", path="a.py", sha256=B)
    assert (minor["severity"], minor["changed"], minor["holder"]) == ("MINOR", True, None)

    await claim(team_a, room, "bob", "*.py")
    critical = await call(team_a, room, "drift_check", agentId="alice", path="a.py", sha256=B)
    assert (critical["severity"], critical["holder"]) == ("CRITICAL", "bob")
    assert "bob holds an exclusive lease on *.py" in critical["message"]
    # Alice's own lease is no one else's: her drift of her own file is MINOR.
    await call(team_a, room, "lease_release", agentId="bob", path="*.py")
    await claim(team_a, room, "alice", "a.py")
    own = await call(team_a, room, "drift_check", agentId="alice", path="a.py", sha256=B)
    assert own["severity"] == "MINOR"


async def test_reads_are_noted_per_agent_and_a_glob_is_not_a_file(
    team_a: Caller, room: RoomRef
) -> None:
    await call(team_a, room, "note_read", agentId="alice", path="a.py", sha256=A)
    bob = await call(team_a, room, "drift_check", agentId="bob", path="a.py", sha256=B)
    assert bob["severity"] == "SAFE" and bob["since"] is None  # alice's read is not bob's
    with pytest.raises(errors.ToolArgumentsError, match="is a glob"):
        await call(team_a, room, "note_read", agentId="alice", path="src/*.py", sha256=A)
    with pytest.raises(errors.ToolArgumentsError, match="sha256"):
        await call(team_a, room, "note_read", agentId="alice", path="a.py", sha256="abc")


async def test_noted_reads_have_a_quota(team_a: Caller, room: RoomRef, settings: Any) -> None:
    settings.ROOM_FILE_READS_MAX = 2
    await call(team_a, room, "note_read", agentId="alice", path="a.py", sha256=A)
    await call(team_a, room, "note_read", agentId="alice", path="b.py", sha256=A)
    await call(team_a, room, "note_read", agentId="alice", path="a.py", sha256=B)  # an update
    with pytest.raises(errors.QuotaExceededError, match="file reads noted"):
        await call(team_a, room, "note_read", agentId="alice", path="c.py", sha256=A)


# --- AgentRoom's five tools ------------------------------------------------------------------


async def test_an_agent_prompted_the_agentroom_way_works_unchanged(
    team_a: Caller, room: RoomRef
) -> None:
    await call(team_a, room, "heartbeat", agentId="alice")
    got = await call(team_a, room, "room_claim", agentId="alice", path="src/app.py")
    assert got["granted"] and got["lease"]["mode"] == "exclusive"
    refused = await call(team_a, room, "room_claim", agentId="bob", path="src/**")
    assert not refused["granted"] and refused["conflicts"][0]["holder"] == "alice"

    said = await call(team_a, room, "room_broadcast", agentId="alice", text="taking app.py")
    state = await call(team_a, room, "room_state")
    assert [lease["path"] for lease in state["leases"]] == ["src/app.py"]
    # bob's refused claim was an act of his: he is present too (issue 24).
    assert [a["agentId"] for a in state["agents"]] == ["alice", "bob"]
    assert [e["id"] for e in state["recentBroadcasts"]] == [said["id"]]
    assert said["type"] == "broadcast" and said["payload"] == {"text": "taking app.py"}

    unread = await call(team_a, room, "room_read", agentId="bob")
    assert "broadcast" in [e["type"] for e in unread["events"]]
    assert (await call(team_a, room, "room_read", agentId="bob"))["events"] == []  # once

    released = await call(team_a, room, "room_release", agentId="alice", path="src/app.py")
    assert released == {"released": True, "path": "src/app.py"}
    assert (await call(team_a, room, "room_claim", agentId="bob", path="src/**"))["granted"]


async def test_lease_events_cannot_be_forged_with_post_event(team_a: Caller, room: RoomRef) -> None:
    with pytest.raises(errors.ToolArgumentsError, match="reserved"):
        await call(team_a, room, "post_event", type="lease_granted", payload={}, **{"from": "x"})


# --- Task-scoped leases (claim_task's paths) --------------------------------------------------


async def test_claim_task_takes_the_tasks_leases_in_the_same_step(
    team_a: Caller, room: RoomRef
) -> None:
    task = await call(team_a, room, "add_task", title="API")

    claimed = await call(
        team_a, room, "claim_task", taskId=task["id"], agentId="alice", paths=["src/api/", "x.py"]
    )

    assert claimed["owner"] == "alice"
    assert sorted(lease["path"] for lease in claimed["leases"]) == ["src/api/**", "x.py"]
    assert {lease["taskId"] for lease in claimed["leases"]} == {task["id"]}
    plan = await call(team_a, room, "read_plan")
    assert [lease["path"] for lease in plan["tasks"][0]["leases"]] == ["src/api/**", "x.py"]
    assert not (await claim(team_a, room, "bob", "src/api/users.py"))["granted"]


async def test_a_claim_whose_paths_another_agent_leases_is_refused_and_changes_nothing(
    team_a: Caller, room: RoomRef
) -> None:
    task = await call(team_a, room, "add_task", title="UI")
    await claim(team_a, room, "bob", "web/**")

    with pytest.raises(errors.TaskClaimError, match='leased by "bob"') as refused:
        await call(
            team_a,
            room,
            "claim_task",
            taskId=task["id"],
            agentId="alice",
            paths=["web/app.tsx", "docs/ui.md"],
        )

    assert refused.value.extra["holders"] == ["bob"]
    after = await call(team_a, room, "get_task", taskId=task["id"])
    assert (after["status"], after["owner"]) == ("pending", None)
    assert [lease["holder"] for lease in (await call(team_a, room, "lease_list"))["leases"]] == [
        "bob"
    ]


@pytest.mark.parametrize("ending", ["done", "release", "takeover", "delete"])
async def test_the_tasks_leases_end_with_its_claim(
    team_a: Caller, room: RoomRef, ending: str
) -> None:
    task = await call(team_a, room, "add_task", title="T")
    await claim(team_a, room, "alice", "notes.md")  # her own lease, not the task's
    await call(team_a, room, "claim_task", taskId=task["id"], agentId="alice", paths=["a.py"])

    if ending == "done":
        await call(team_a, room, "update_task", taskId=task["id"], status="done", agentId="alice")
    elif ending == "release":
        await call(team_a, room, "release_task", taskId=task["id"], agentId="alice")
    elif ending == "takeover":
        await call(
            team_a,
            room,
            "update_task",
            taskId=task["id"],
            status="in_progress",
            owner="bob",
            agentId="alice",
        )  # the owner hands it over
    else:
        await call(team_a, room, "delete_task", taskId=task["id"])

    left = (await call(team_a, room, "lease_list"))["leases"]
    assert [lease["path"] for lease in left] == ["notes.md"]
    assert (await claim(team_a, room, "carol", "a.py"))["granted"]


async def test_a_lapsed_claim_lets_go_of_its_leases(
    team_a: Caller, room: RoomRef, frozen_clock: list[datetime]
) -> None:
    from rooms.services import plan as plan_services

    task = await call(team_a, room, "add_task", title="T")
    await call(
        team_a,
        room,
        "claim_task",
        taskId=task["id"],
        agentId="alice",
        leaseSeconds=60,
        paths=["a.py"],
    )
    frozen_clock[0] += timedelta(seconds=61)

    assert await plan_services.claims_sweep() >= 1

    assert (await call(team_a, room, "lease_list"))["leases"] == []
    assert (await call(team_a, room, "get_task", taskId=task["id"]))["status"] == "pending"


async def test_of_agents_claiming_one_task_with_its_paths_only_the_winner_holds_them(
    team_a: Caller, room: RoomRef
) -> None:
    task = await call(team_a, room, "add_task", title="race")

    async def attempt(agent: str) -> Any:
        try:
            return await call(
                team_a, room, "claim_task", taskId=task["id"], agentId=agent, paths=["src/**"]
            )
        except errors.TaskClaimError as exc:
            return exc

    results = await asyncio.gather(*(attempt(f"agent-{i:02d}") for i in range(20)))

    won = [r for r in results if isinstance(r, dict)]
    assert len(won) == 1
    holders = {lease["holder"] for lease in (await call(team_a, room, "lease_list"))["leases"]}
    assert holders == {won[0]["owner"]}


async def test_an_agent_blocked_on_another_agents_task_sees_its_leases(
    team_a: Caller, room: RoomRef
) -> None:
    api = await call(team_a, room, "add_task", title="API")
    ui = await call(team_a, room, "add_task", title="UI", depends_on=[api["id"]])
    await call(team_a, room, "claim_task", taskId=api["id"], agentId="alice", paths=["src/api/"])
    await call(
        team_a, room, "update_task", taskId=ui["id"], status="blocked", owner="bob", agentId="bob"
    )

    mine = await call(team_a, room, "get_my_tasks", agentId="bob")

    [blocked] = mine
    [waiting] = blocked["blockedBy"]
    assert (waiting["taskId"], waiting["owner"], waiting["status"]) == (
        api["id"],
        "alice",
        "in_progress",
    )
    assert [lease["path"] for lease in waiting["leases"]] == ["src/api/**"]
