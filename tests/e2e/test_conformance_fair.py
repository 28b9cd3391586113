"""The conformance kit is fair to the server it judges and friendly to whoever runs it
(issue 22, point 8): it finds `/mcp` under a base URL, takes away the rooms it made, paces
itself under a rate limit (saying so, once), never lets one check's failure become the
next one's, and mints the agent-bound key a server may want before a review is resolved.

The server-side odds (roomd's plan lock that stays held, its HTTP 429, its reviews that
only a bound key resolves) are played by wrapping the kit's own calls, against our server."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest

from conformance import Config, kit, run_kit, runner
from tests.e2e.conftest import TEAM_A_SECRET, RunningServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture
def team_key(server: RunningServer) -> Iterator[str]:
    """A team of its own, so that its rooms are this test's alone."""
    made = httpx.post(
        f"{server.url}/api/v1/teams",
        json={"slug": f"fair-{secrets.token_hex(5)}"},
        headers={"authorization": f"Bearer {TEAM_A_SECRET}"},
        timeout=20,
    )
    assert made.status_code == 201, made.text
    yield str(made.json()["key"]["secret"])


def _rooms(server: RunningServer, key: str) -> dict[str, str]:
    got = httpx.get(
        f"{server.url}/api/v1/rooms", headers={"authorization": f"Bearer {key}"}, timeout=20
    )
    assert got.status_code == 200, got.text
    return {r["roomId"]: r["status"] for r in got.json()}


async def test_a_base_url_finds_mcp_and_the_report_says_so(
    server: RunningServer, team_key: str
) -> None:
    report = await run_kit(Config(url=server.url + "/", key=team_key, only="read_plan"))
    assert report.url == server.mcp_url
    assert not report.failed, report.render()
    assert report.counts["PASS"] >= 2
    assert f"found it at {server.mcp_url}" in report.render()


async def test_where_nothing_answers_the_error_names_every_place_looked(
    server: RunningServer, team_key: str
) -> None:
    base = f"{server.url}/nowhere"
    with pytest.raises(ConnectionError) as raised:
        await run_kit(Config(url=base, key=team_key, only="read_plan", timeout=5))
    said = str(raised.value)
    assert base in said and f"{base}/mcp" in said, said
    assert "HTTP 404" in said or "HTTP 405" in said, said


async def test_the_rooms_of_a_run_are_taken_away_at_the_end(
    server: RunningServer, team_key: str
) -> None:
    report = await run_kit(Config(url=server.mcp_url, key=team_key, only="get_room_info"))
    assert not report.failed, report.render()
    used = sorted(report.cleanup.rooms["deleted"])
    assert used == sorted([report.room, f"{report.room}-tpl"]), report.cleanup.rooms
    # Our server deletes a room (DELETE /api/v1/rooms/<id>): none of the kit's is left.
    assert not [r for r in _rooms(server, team_key) if r.startswith(report.room)]
    assert not report.cleanup.rooms.get("archived") and not report.cleanup.rooms.get("left")


async def test_a_check_that_fails_midway_still_releases_its_lock(
    server: RunningServer, team_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """roomd's own plan writes take the lock named `plan`: while an agent holds it, every
    plan write fails. The advisory-lock check fails there (it is ours), and must release
    `plan` all the same, or every later plan check fails with it."""
    held: set[str] = set()
    send = kit.Conn.send

    async def like_roomd(self: kit.Conn, tool: str, args: dict[str, Any]) -> kit.Answer:
        if tool in ("add_task", "update_task") and held:
            return kit.Answer(False, None, "Error: Plan is locked. Retry in a moment.", None)
        answer = await send(self, tool, args)
        if args.get("resource") == "plan" and answer.ok:
            if tool == "acquire_lock" and answer.value.get("acquired"):
                held.add(str(args["roomId"]))
            if tool == "release_lock" and answer.value.get("released"):
                held.discard(str(args["roomId"]))
        return answer

    monkeypatch.setattr(kit.Conn, "send", like_roomd)
    report = await run_kit(Config(url=server.mcp_url, key=team_key, only="plan"))
    status = {o.name: o.status for o in report.outcomes}
    assert status["locks are advisory: the holder of `plan` can still update tasks"] == "FAIL"
    # A plan write after it, in the same room, is not failed by a lock left behind.
    assert status["create_room_from_template: never overwrites an existing plan"] == "PASS"
    assert not held


class Limiting(httpx2.AsyncBaseTransport):
    """Every `every`-th request is answered HTTP 429 with Retry-After: 1, as roomd's
    limiter does (before any JSON-RPC is read)."""

    def __init__(self, every: int) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.every = every
        self.seen = 0
        self.limited = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.seen += 1
        if self.seen % self.every == 0:
            self.limited += 1
            return httpx2.Response(
                429, headers={"Retry-After": "1"}, json={"error": "Rate limit exceeded"}
            )
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_an_http_429_is_waited_out_and_said_once(
    server: RunningServer,
    team_key: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    limiter = Limiting(every=7)
    original = kit.HttpWatch.__init__

    def through_limiter(
        self: kit.HttpWatch, inner: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        original(self, inner or limiter)

    monkeypatch.setattr(kit.HttpWatch, "__init__", through_limiter)
    report = await run_kit(Config(url=server.mcp_url, key=team_key, only="context"))
    assert limiter.limited >= 3, limiter.seen
    assert not report.failed, report.render()
    assert report.rate_waits >= 3 and report.rate_waited >= 1
    assert "pacing" in report.summary()
    said = capsys.readouterr().err
    assert said.count("pacing") == 1, said
    assert "rate-limits this key" in said


async def test_a_review_a_team_key_may_not_resolve_is_resolved_with_a_bound_key(
    server: RunningServer, team_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """roomd lets only a key bound to the reviewer resolve a review: the kit mints one
    (through our REST API) instead of failing the review checks, and revokes it after."""
    send = kit.Conn.send
    resolvers: list[str] = []

    async def bound_only(self: kit.Conn, tool: str, args: dict[str, Any]) -> kit.Answer:
        team_key_resolving = tool in ("approve", "reject") and not self.label.startswith("bound")
        if team_key_resolving and args.get("reviewId") != "zzconformancemissing":
            return kit.Answer(False, None, "Error: only a key bound to the reviewer", None)
        if tool in ("approve", "reject"):
            resolvers.append(self.label)
        return await send(self, tool, args)

    monkeypatch.setattr(kit.Conn, "send", bound_only)
    report = await run_kit(Config(url=server.mcp_url, key=team_key, only="approve"))
    status = {f"{o.name} ({o.kind})": o.status for o in report.outcomes}
    assert status["approve (call)"] == "PASS", report.render()
    behaviour = "reviews: only the named reviewer resolves, and only once (behaviour)"
    assert status[behaviour] == "PASS", report.render()
    assert "bound to bob" in resolvers
    assert report.cleanup.keys_left == []
    keys = httpx.get(
        f"{server.url}/api/v1/keys", headers={"authorization": f"Bearer {team_key}"}, timeout=20
    ).json()
    minted = [k for k in keys if k["agentName"] == "bob"]
    assert minted and all(k["revoked_at"] for k in minted), minted


async def test_without_a_way_to_mint_a_bound_key_the_check_skips_saying_why() -> None:
    ctx = kit.Ctx(base="conf-x", a=None, b=None, open_a=None)  # type: ignore[arg-type]
    with pytest.raises(kit.Skipped) as skipped:
        await ctx.bound("bob", why="approve as bob with the team's key was refused (only bound)")
    said = str(skipped.value)
    assert "refused (only bound)" in said and "no way to mint" in said, said


def test_roomd_legal_answers_pass_the_protocol_shapes() -> None:
    """list_rooms as ids, a lock without fencing token or expiry, an expired presence."""
    from conformance import shapes as s

    assert s.ROOMS({"rooms": ["conf-1", "conf-2"]}, "") == []
    assert s.room_ids({"rooms": ["conf-1"]}) == ["conf-1"]
    assert s.room_ids([{"roomId": "conf-1", "name": ""}]) == ["conf-1"]
    assert s.ROOMS({"rooms": [3]}, "") != []
    lock = {"acquired": True, "resource": "plan", "holder": "alice", "ttlSeconds": 30}
    assert s.LOCK(lock, "") == []
    assert s.LOCK_OURS(lock, "") != []
    assert s.LOCKS([{"resource": "plan", "owner": "alice"}], "") == []
    assert s.PRESENCE({"agentId": "bob", "status": "offline", "lastSeen": None}, "") == []


def _like_roomd_keys(
    server: RunningServer, team_key: str, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """Our REST API hidden (404), and roomd's own key routes in its place: POST /admin/keys
    with {note, boundAgentId} answering {keyId, secret, …}, DELETE /admin/keys/<keyId>
    (both played by our /api/v1/keys). Returns the calls the kit made there."""
    send = kit.Rest.send
    seen: list[str] = []

    async def roomd_routes(
        self: kit.Rest, method: str, path: str, body: Any = None, *, at_root: bool = False
    ) -> httpx2.Response | None:
        if not at_root and path.startswith("/keys"):
            return httpx2.Response(404, json={"error": "Not found"})
        if at_root and path.startswith("/admin/keys"):
            seen.append(f"{method} {path}")
            if method == "POST":
                made = await send(
                    self, "POST", "/keys", {"name": body["note"], "agentName": body["boundAgentId"]}
                )
                assert made is not None and made.status_code == 201, made
                key = made.json()
                return httpx2.Response(201, json={"keyId": key["id"], "secret": key["secret"]})
            revoked = await send(self, "POST", f"/keys/{path.rsplit('/', 1)[1]}/revoke")
            assert revoked is not None
            return httpx2.Response(204 if revoked.status_code < 300 else revoked.status_code)
        return await send(self, method, path, body, at_root=at_root)

    monkeypatch.setattr(kit.Rest, "send", roomd_routes)
    return seen


def _bound_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """roomd's rule: only a key bound to the reviewer approves or rejects."""
    send = kit.Conn.send
    resolvers: list[str] = []

    async def bound_only(self: kit.Conn, tool: str, args: dict[str, Any]) -> kit.Answer:
        team_key_resolving = tool in ("approve", "reject") and not self.label.startswith("bound")
        if team_key_resolving and args.get("reviewId") != "zzconformancemissing":
            return kit.Answer(False, None, "Error: only a key bound to the reviewer", None)
        if tool in ("approve", "reject"):
            resolvers.append(self.label)
        return await send(self, tool, args)

    monkeypatch.setattr(kit.Conn, "send", bound_only)
    return resolvers


REVIEW_CHECKS = {
    "approve (call)",
    "reject (call)",
    "reviews: only the named reviewer resolves, and only once (behaviour)",
}


async def test_against_roomd_the_review_checks_mint_a_key_through_roomds_own_route(
    server: RunningServer, team_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """roomd has no /api/v1: the kit tries roomd's `POST /admin/keys` (boundAgentId) before
    it skips, resolves the reviews with that key, and revokes it with roomd's DELETE."""
    seen = _like_roomd_keys(server, team_key, monkeypatch)
    resolvers = _bound_only(monkeypatch)
    status = {}
    for only in ("approve", "reject"):
        report = await run_kit(Config(url=server.mcp_url, key=team_key, only=only))
        status.update({f"{o.name} ({o.kind})": o.status for o in report.outcomes})
        assert report.cleanup.keys_left == []
    assert {name: status[name] for name in REVIEW_CHECKS} == dict.fromkeys(REVIEW_CHECKS, "PASS")
    assert "bound to bob" in resolvers
    assert seen[0] == "POST /admin/keys" and seen[-1].startswith("DELETE /admin/keys/")
    keys = httpx.get(
        f"{server.url}/api/v1/keys", headers={"authorization": f"Bearer {team_key}"}, timeout=20
    ).json()
    minted = [k for k in keys if k["agentName"] == "bob"]
    assert minted and all(k["revoked_at"] for k in minted), minted


async def test_each_skip_says_why_and_the_summary_counts_each_reason(
    server: RunningServer, team_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither key route mints (both 404): the review checks skip as "no agent-bound key",
    each naming what both routes answered; a tool left out is "not offered"; no KEY_B is
    "no KEY_B". Not every skip is "not offered"."""
    send = kit.Rest.send

    async def no_minting(
        self: kit.Rest, method: str, path: str, body: Any = None, *, at_root: bool = False
    ) -> httpx2.Response | None:
        if "/keys" in path:
            return httpx2.Response(404, json={"error": "Not found"})
        return await send(self, method, path, body, at_root=at_root)

    monkeypatch.setattr(kit.Rest, "send", no_minting)
    _bound_only(monkeypatch)
    report = await run_kit(Config(url=server.mcp_url, key=team_key, only="approve"))
    skipped = {f"{o.name} ({o.kind})": o for o in report.outcomes if o.status == "SKIP"}
    behaviour = "reviews: only the named reviewer resolves, and only once (behaviour)"
    assert set(skipped) == {"approve (call)", behaviour}, report.render()
    for outcome in skipped.values():
        assert outcome.reason == kit.NO_BOUND_KEY
        assert "/api/v1/keys (ours) answered HTTP 404" in outcome.detail, outcome.detail
        assert "/admin/keys (roomd) answered HTTP 404" in outcome.detail, outcome.detail
    assert not report.failed, report.render()
    assert f"2 skipped ({kit.NO_BOUND_KEY}: 2)" in report.summary(), report.summary()
    surface = frozenset(t for t in runner.ROOMD_TOOLS if t != "list_reviews")
    left_out = await run_kit(
        Config(url=server.mcp_url, key=team_key, only="list_reviews", surface=surface)
    )
    assert f"2 skipped ({kit.NOT_OFFERED}: 2)" in left_out.summary(), left_out.summary()
    teams = await run_kit(Config(url=server.mcp_url, key=team_key, only="teams: "))
    assert f"({kit.NO_KEY_B}: " in teams.summary() and "not offered" not in teams.summary()


async def test_roomds_answer_to_the_history_of_an_unknown_entry_fails_only_the_ours_check(
    server: RunningServer, team_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """roomd answers get_context_history of an unknown id without an error: the protocol's
    bad input (a missing id) passes there, and only the `ours` check says we refuse it."""
    send = kit.Conn.send

    async def like_roomd(self: kit.Conn, tool: str, args: dict[str, Any]) -> kit.Answer:
        if tool == "get_context_history" and args.get("id") == "zzconformancemissing":
            value = {"id": args["id"], "current": None, "history": []}
            return kit.Answer(True, value, json.dumps(value), None)
        return await send(self, tool, args)

    monkeypatch.setattr(kit.Conn, "send", like_roomd)
    report = await run_kit(Config(url=server.mcp_url, key=team_key, only="get_context_history"))
    status = {(o.name, o.kind, o.source): o.status for o in report.outcomes}
    assert status[("get_context_history", "bad input", "protocol")] == "PASS"
    ours = "unknown context ids are refused: get_context_history"
    assert status[(ours, "behaviour", "ours")] == "FAIL"
    assert [o.name for o in report.failed] == [ours]
