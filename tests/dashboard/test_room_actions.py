"""People act in a room from its page (dashboard.actions): each action is the agents' own
tool, run under the person's name, in the log and the audit log; another team's person and
a read-only member are refused and change nothing; acting for an agent needs the team's
permission."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from calls.runner import tool_run
from rooms.store import engine as engine_store
from tenants import services
from tenants.models import AuditEvent, Room
from tests import callers
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store

ANN = "person:ann@example.com"


def _room(owner: Person) -> tuple[Room, Any]:
    room = services.room_create(team=owner.team, room_id=new_room_id("acts"), actor="test")
    return room, callers.team_caller(owner.team.slug)


def _call(agent: Any, tool: str, room: Room, **args: Any) -> Any:
    return engine_store.run_sync(tool_run, agent, tool, {"roomId": room.room_id, **args})


def _act(who: Person, room: Room, action: str, **form: str) -> Any:
    return who.client.post(f"/rooms/{room.room_id}/act/{action}", form, follow=True)


def _events(agent: Any, room: Room) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = _call(agent, "read_events", room, limit=100, order="asc")
    return events


def test_a_person_posts_messages_and_broadcasts_under_their_own_name(
    ann: Person, bob: Person
) -> None:
    room, agent = _room(ann)
    _call(agent, "heartbeat", room, agentId="backend")
    sent = _act(ann, room, "message", to="backend", subject="Hi", body="Please rebase", agentId="x")
    assert "Message sent to backend" in sent.content.decode()
    inbox = _call(agent, "inbox", room, agentId="backend")
    assert [(m["from"], m["body"]) for m in inbox["messages"]] == [(ANN, "Please rebase")]
    assert "Broadcast posted" in _act(ann, room, "broadcast", text="Freeze at 5").content.decode()
    broadcast = [e for e in _events(agent, room) if e["type"] == "broadcast"]
    assert [(e["from"], e["payload"]["text"]) for e in broadcast] == [(ANN, "Freeze at 5")]
    everyone = _act(ann, room, "message", to="*", body="anyone?").content.decode()
    assert "Message sent to backend." in everyone  # "*": the room's agents, the sender aside
    nobody = _act(ann, room, "message", to="tag:absent", body="anyone?").content.decode()
    assert "reached nobody" in nobody
    audit = AuditEvent.objects.filter(object_id=room.room_id, action="room.message")
    assert audit.count() == 3 and audit.first().detail["as"] == ANN  # type: ignore[union-attr]

    # Another team: a 404, and nothing was sent.
    assert bob.client.post(f"/rooms/{room.room_id}/act/broadcast", {"text": "x"}).status_code == 404
    assert len([e for e in _events(agent, room) if e["type"] == "broadcast"]) == 1


def test_a_person_creates_reassigns_unblocks_reprioritises_and_closes_tasks(ann: Person) -> None:
    room, agent = _room(ann)
    _act(ann, room, "task-add", title="Write the parser", owner="backend", priority="2")
    [task] = _call(agent, "read_plan", room)["tasks"]
    assert (task["owner"], task["priority"], task["status"]) == ("backend", 2, "pending")
    _call(agent, "claim_task", room, taskId=task["id"], agentId="backend")

    # Reassigning a task in progress: handed back, then given, both by the person.
    page = _act(ann, room, "task-assign", task_id=task["id"], owner="frontend").content.decode()
    assert "is now with frontend" in page
    moved = _call(agent, "get_task", room, taskId=task["id"])
    assert (moved["owner"], moved["status"]) == ("frontend", "in_progress")
    assert any(n["by"] == ANN and "from backend to frontend" in n["text"] for n in moved["notes"])

    _act(ann, room, "task-status", task_id=task["id"], status="blocked", note="waiting on API")
    assert _call(agent, "get_task", room, taskId=task["id"])["status"] == "blocked"
    _act(ann, room, "task-status", task_id=task["id"], status="in_progress")  # unblock
    _act(ann, room, "task-priority", task_id=task["id"], priority="0")
    _act(ann, room, "task-note", task_id=task["id"], note="ship it")
    _act(ann, room, "task-status", task_id=task["id"], status="done")
    done = _call(agent, "get_task", room, taskId=task["id"])
    assert (done["status"], done["priority"]) == ("done", 0)
    updates = [e for e in _events(agent, room) if e["type"] == "task_updated"]
    assert updates and all(e["from"] == ANN for e in updates)
    actions = set(
        AuditEvent.objects.filter(object_id=room.room_id).values_list("action", flat=True)
    )
    assert {"room.task-add", "room.task-assign", "room.task-status", "room.task-priority"} <= (
        actions
    )


def test_bad_input_is_said_on_the_page_and_changes_nothing(ann: Person) -> None:
    room, agent = _room(ann)
    for action, form, said in [
        ("task-add", {"title": ""}, "Title is required"),
        ("task-priority", {"task_id": "nope", "priority": "x"}, "whole number"),
        ("task-status", {"task_id": "nope", "status": "done"}, "nope"),
        ("task-status", {"task_id": "x", "status": "sideways"}, "Status must be one of"),
        ("no-such-action", {}, "Unknown action"),
    ]:
        response = _act(ann, room, action, **form)
        assert response.status_code == 200 and said in response.content.decode(), action
    assert _call(agent, "read_plan", room)["tasks"] == []
    assert not AuditEvent.objects.filter(object_id=room.room_id, action__startswith="room.task")


def _key_session(room: Room, owner: Person, **key: Any) -> Client:
    secret = services.api_key_create(team=owner.team, name="k", **key).secret
    client = Client()
    assert client.post("/login", {"key": secret}).status_code == 302
    return client


def test_a_read_only_key_session_sees_no_forms_and_is_refused(ann: Person, settings: Any) -> None:
    settings.AUTH_MODE = "both"
    room, agent = _room(ann)
    client = _key_session(room, ann, read_only=True)
    page = client.get(f"/rooms/{room.room_id}/").content.decode()
    assert "Act in this room" not in page and "Waiting for a person" not in page
    refused = client.post(f"/rooms/{room.room_id}/act/task-add", {"title": "sneaky"}, follow=True)
    assert "read-only" in refused.content.decode().lower()
    assert _call(agent, "read_plan", room)["tasks"] == []
    assert not AuditEvent.objects.filter(object_id=room.room_id, action="room.task-add")


def test_a_bound_key_session_acts_as_its_agent_only(ann: Person, settings: Any) -> None:
    settings.AUTH_MODE = "both"
    room, agent = _room(ann)
    client = _key_session(room, ann, agent_name="backend")
    client.post(f"/rooms/{room.room_id}/act/broadcast", {"text": "hello", "agentId": "boss"})
    [event] = [e for e in _events(agent, room) if e["type"] == "broadcast"]
    assert event["from"] == "backend"


def test_a_person_verifies_a_submission_and_answers_a_change_request(ann: Person) -> None:
    room, agent = _room(ann)
    task = _call(agent, "add_task", room, title="Ship", description="")
    _call(agent, "claim_task", room, taskId=task["id"], agentId="backend")
    _call(
        agent,
        "submit_task",
        room,
        taskId=task["id"],
        agentId="backend",
        evidence=[{"kind": "test", "text": "12 passed"}],
    )
    page = ann.client.get(f"/rooms/{room.room_id}/").content.decode()
    assert "Submissions to verify" in page and "Accept the submission of Ship" in page
    _act(ann, room, "task-verify", task_id=task["id"], verdict="reject", note="add a test")
    rejected = _call(agent, "get_task", room, taskId=task["id"])
    assert rejected["status"] == "in_progress"
    verdicts = [e for e in _events(agent, room) if e["type"] == "task_rejected"]
    assert [e["from"] for e in verdicts] == [ANN]

    cr = _call(
        agent,
        "write_context",
        room,
        type="change_request",
        summary="Add currency",
        consuming_agents=["backend"],
        author="frontend",
        payload={
            "requested_by": "frontend",
            "target_agent": "backend",
            "description": "Orders need a currency",
            "urgency": "high",
        },
    )
    entry_page = ann.client.get(f"/rooms/{room.room_id}/context/{cr['id']}").content.decode()
    assert "Accept the change" in entry_page
    _act(ann, room, "change-request", entry_id=cr["id"], answer="accepted", response="Will do")
    answered = _call(agent, "read_context", room, id=cr["id"])
    assert answered["payload"]["status"] == "accepted"
    assert answered["payload"]["answered_by"] == ANN and answered["version"] == "1.1"
    assert "Change requests" not in ann.client.get(f"/rooms/{room.room_id}/").content.decode()


def test_accepting_a_handoff_for_an_agent_needs_the_teams_permission(
    ann: Person, bob: Person
) -> None:
    room, agent = _room(ann)
    task = _call(agent, "add_task", room, title="API")
    _call(agent, "claim_task", room, taskId=task["id"], agentId="backend")
    _call(agent, "heartbeat", room, agentId="frontend")
    handoff = _call(
        agent, "handoff_task", room, taskId=task["id"], to="frontend", **{"from": "backend"}
    )
    form = {"handoff_id": handoff["id"], "to": "frontend"}

    refused = _act(ann, room, "handoff-accept", **form).content.decode()
    assert "does not let people act on an agent" in refused
    assert _call(agent, "get_task", room, taskId=task["id"])["owner"] == "backend"

    # Bob (owner of his own team) turns it on for his team only, never Ann's.
    assert bob.client.post("/team/acting", {"allowed": "1"}).status_code == 302
    ann.team.refresh_from_db()
    assert not ann.team.people_act_for_agents
    ann.client.post("/team/acting", {"allowed": "1"})
    ann.team.refresh_from_db()
    assert ann.team.people_act_for_agents

    page = _act(ann, room, "handoff-accept", **form).content.decode()
    assert "Handoff accepted for frontend" in page
    assert _call(agent, "get_task", room, taskId=task["id"])["owner"] == "frontend"
    [accepted] = [e for e in _events(agent, room) if e["type"] == "handoff_accepted"]
    assert ANN in str(accepted["payload"])  # the note names the person
    assert AuditEvent.objects.filter(action="room.handoff-accept", object_id=room.room_id).exists()
    assert (
        AuditEvent.objects.filter(action="team.people_act_for_agents", team=ann.team).count() == 1
    )


def test_a_review_asked_of_an_agent_is_resolved_for_it_only_with_permission(ann: Person) -> None:
    room, agent = _room(ann)
    task = _call(agent, "add_task", room, title="Docs")
    review = _call(
        agent,
        "request_review",
        room,
        targetType="task",
        targetId=task["id"],
        requestedBy="backend",
        reviewer="qa",
    )
    assert (
        "act on an agent"
        in _act(ann, room, "review", review_id=review["id"], verdict="approve").content.decode()
    )
    mine = _call(
        agent,
        "request_review",
        room,
        targetType="task",
        targetId=task["id"],
        requestedBy="backend",
        reviewer=ANN,
    )
    _act(ann, room, "review", review_id=mine["id"], verdict="approve", note="fine")
    statuses = {r["id"]: r["status"] for r in _call(agent, "list_reviews", room)}
    assert statuses == {review["id"]: "pending", mine["id"]: "approved"}


def test_the_task_page_shows_everything_about_the_task(ann: Person, bob: Person) -> None:
    room, agent = _room(ann)
    task = _call(agent, "add_task", room, title="Parser", description="Handle nested blocks")
    _call(agent, "claim_task", room, taskId=task["id"], agentId="backend", paths=["src/parser/**"])
    _call(agent, "update_task", room, taskId=task["id"], status="in_progress", note="halfway")
    _call(
        agent,
        "write_context",
        room,
        type="task",
        summary="Parser criteria",
        consuming_agents=["backend"],
        author="lead",
        payload={"task_id": task["id"], "acceptance_criteria": ["nested"], "technical_notes": ""},
    )
    page = ann.client.get(f"/rooms/{room.room_id}/tasks/{task['id']}")
    text = page.content.decode()
    assert page.status_code == 200
    for shown in ("Handle nested blocks", "halfway", "src/parser/**", "Parser criteria", "claimed"):
        assert shown in text, shown
    assert 'aria-current="page">Live' in text
    assert bob.client.get(f"/rooms/{room.room_id}/tasks/{task['id']}").status_code == 404
    assert ann.client.get(f"/rooms/{room.room_id}/tasks/nope").status_code == 404


def test_an_agent_cannot_act_under_a_persons_name(ann: Person) -> None:
    """The attack: an agent's key signs its writes `person:ann@example.com`, to pass its
    work off as Ann's or to resolve a review asked of her. Refused, and nothing written;
    binding a key to such a name is refused too. Ann's own action still goes through."""
    import pytest

    from tenants import errors as tenant_errors

    room, agent = _room(ann)
    for tool, args in [
        ("add_task", {"title": "forged", "agentId": ANN}),
        ("room_broadcast", {"text": "forged", "agentId": ANN}),
        ("send_message", {"to": "*", "body": "forged", "from": ANN}),
    ]:
        with pytest.raises(tenant_errors.ActorMismatchError) as refused:
            _call(agent, tool, room, **args)
        assert "person's name" in refused.value.message
    assert _events(agent, room) == []
    with pytest.raises(tenant_errors.NotPermittedError):
        services.api_key_create(team=ann.team, name="k", agent_name=ANN)
    _act(ann, room, "broadcast", text="mine")
    assert [e["from"] for e in _events(agent, room)] == [ANN]


def test_an_agent_cannot_forge_the_servers_own_events(ann: Person) -> None:
    """The attack: post_event with a type the server writes (a verdict, a handoff, a
    broadcast), which the room page would show as a trusted sentence. Refused."""
    import pytest

    from rooms import errors as room_errors

    room, agent = _room(ann)
    for kind in ("task_verified", "handoff_accepted", "room_status_changed", "broadcast"):
        with pytest.raises(room_errors.ToolArgumentsError):
            _call(
                agent,
                "post_event",
                room,
                type=kind,
                to="all",
                payload={"task": {"id": "t", "title": "Ship"}},
                **{"from": "backend"},
            )
    assert _events(agent, room) == []
    _call(agent, "room_broadcast", room, agentId="backend", text="the real one")
    assert [e["type"] for e in _events(agent, room)] == ["broadcast"]


def test_unassigning_a_task_in_progress_leaves_it_pending(ann: Person) -> None:
    room, agent = _room(ann)
    task = _call(agent, "add_task", room, title="Parser")
    _call(agent, "claim_task", room, taskId=task["id"], agentId="backend")
    page = _act(ann, room, "task-assign", task_id=task["id"], owner="").content.decode()
    assert "now unowned" in page
    moved = _call(agent, "get_task", room, taskId=task["id"])
    assert (moved["owner"], moved["status"]) == (None, "pending")


def test_a_handoff_is_accepted_for_whom_the_room_says_not_the_form(ann: Person) -> None:
    room, agent = _room(ann)
    ann.client.post("/team/acting", {"allowed": "1"})
    task = _call(agent, "add_task", room, title="API")
    _call(agent, "claim_task", room, taskId=task["id"], agentId="backend")
    _call(agent, "heartbeat", room, agentId="frontend")
    handoff = _call(
        agent, "handoff_task", room, taskId=task["id"], to="frontend", **{"from": "backend"}
    )
    _act(ann, room, "handoff-accept", handoff_id=handoff["id"], to="mallory")
    assert _call(agent, "get_task", room, taskId=task["id"])["owner"] == "frontend"
    audit = AuditEvent.objects.get(action="room.handoff-accept", object_id=room.room_id)
    assert audit.detail["for"] == "frontend" and audit.detail["as"] == ANN
    again = _act(ann, room, "handoff-accept", handoff_id=handoff["id"]).content.decode()
    assert "No handoff" in again


def test_minting_for_a_persons_name_or_over_a_quota_is_said_on_the_page(
    ann: Person, settings: Any
) -> None:
    """Refusals the key, invite and Connect pages meet (a person's name, the key quota)
    are answered on the page with their own status, never a 500, and mint nothing."""
    from tenants.models import ApiKey, Invite

    room, _ = _room(ann)
    keys = ann.client.post("/keys", {"name": "k", "agent_name": ANN})
    assert keys.status_code == 200 and "for people acting" in keys.content.decode()
    invite = ann.client.post(
        f"/rooms/{room.room_id}/invites", {"label": "g", "agent_name": ANN, "expires_in": ""}
    )
    assert invite.status_code == 200 and "for people acting" in invite.content.decode()
    assert not ApiKey.objects.filter(agent_name=ANN).exists()
    assert not Invite.objects.filter(agent_name=ANN).exists()

    settings.TEAM_KEYS_MAX = ApiKey.objects.filter(team=ann.team, revoked_at=None).count()
    full = ann.client.post(f"/rooms/{room.room_id}/connect")
    assert 400 <= full.status_code < 500 and "Quota reached" in full.content.decode()
    assert ApiKey.objects.filter(team=ann.team).count() == settings.TEAM_KEYS_MAX


def test_a_key_session_is_never_a_person() -> None:
    """acting_as gives the person flag (which lets `person:` names through) only to a
    person's own name: a key session acts as its bound agent or its credential."""
    from tenants import acting
    from tenants.capabilities import Caller

    bound = Caller(team_id=1, team_slug="t", kind="key_session", credential="key:1", agent="ci")
    unbound = Caller(team_id=1, team_slug="t", kind="key_session", credential="key:2")
    assert acting.acting_as(bound, None).person is False
    assert acting.acting_as(unbound, None).agent == "key:2"
    assert acting.acting_as(unbound, None).person is False
