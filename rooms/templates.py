"""Room templates: a plan to start from (roomd's list_templates / create_room_from_template).

A template is a list of tasks whose dependencies name earlier tasks of the same list; a
room made from it gets them as one plan, in one step, or not at all. Templates are code,
not data: they are reviewed like code and the same on every process.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from rooms import errors, suggest
from rooms.results import TemplateList


@dataclass(frozen=True, slots=True)
class TemplateTask:
    title: str
    description: str = ""
    after: tuple[int, ...] = ()  # indexes of the template's tasks this one depends on
    priority: int | None = None


@dataclass(frozen=True, slots=True)
class Template:
    id: str
    name: str
    description: str
    tasks: tuple[TemplateTask, ...]


TEMPLATES: tuple[Template, ...] = (
    Template("blank", "Blank room", "An empty plan: add the tasks yourself.", ()),
    Template(
        "web-app",
        "Web application",
        "A backend and a frontend agent building one feature: contract first, then both "
        "sides against it, then the end-to-end check.",
        (
            TemplateTask(
                "Agree the API contract",
                "Write the endpoints as an api_contract context entry; the frontend consumes it.",
                priority=0,
            ),
            TemplateTask("Data model and migrations", after=(0,), priority=1),
            TemplateTask("Backend endpoints", "Implement the contract.", after=(0, 1), priority=2),
            TemplateTask("Frontend screens", "Build against the contract.", after=(0,), priority=2),
            TemplateTask("Wire the frontend to the backend", after=(2, 3), priority=3),
            TemplateTask(
                "End-to-end test and review",
                "Request a review of the feature from another agent.",
                after=(4,),
                priority=4,
            ),
        ),
    ),
    Template(
        "incident",
        "Incident response",
        "Triage, mitigate, fix and learn: one agent leads, the others investigate.",
        (
            TemplateTask(
                "Triage: impact and severity", "Post what is broken and for whom.", priority=0
            ),
            TemplateTask("Mitigate: stop the bleeding", after=(0,), priority=1),
            TemplateTask("Find the root cause", after=(0,), priority=1),
            TemplateTask("Fix and verify", after=(2,), priority=2),
            TemplateTask(
                "Write the postmortem",
                "Record the timeline and the decisions as context entries.",
                after=(1, 3),
                priority=3,
            ),
        ),
    ),
    Template(
        "library-release",
        "Library release",
        "Get a package from main to a published, announced release.",
        (
            TemplateTask("Freeze and write the changelog", priority=0),
            TemplateTask("Run the whole test matrix", after=(0,), priority=1),
            TemplateTask("Bump the version and tag", after=(1,), priority=2),
            TemplateTask("Publish the package", after=(2,), priority=3),
            TemplateTask("Announce the release", after=(3,), priority=4),
        ),
    ),
)

_BY_ID = {t.id: t for t in TEMPLATES}

UNKNOWN_TEMPLATE = (
    "Unknown templateId {wanted!r}.{hint} The templates are: {names} (list_templates)."
)


def template_get(template_id: str) -> Template:
    found = _BY_ID.get(template_id)
    if found is not None:
        return found
    near = suggest.closest(template_id, ((t.id, t.name) for t in TEMPLATES)).pairs
    hint = f" Did you mean {suggest.describe(near)}?" if near else ""
    raise errors.ToolArgumentsError(
        UNKNOWN_TEMPLATE.format(wanted=template_id, hint=hint, names=", ".join(_BY_ID)),
        extra={"fields": ["templateId"], "closest": [cid for cid, _ in near]},
    )


def template_list() -> TemplateList:
    return {
        "templates": [
            {"id": t.id, "name": t.name, "description": t.description, "taskCount": len(t.tasks)}
            for t in TEMPLATES
        ]
    }


def template_room_id(template_id: str, *, team_id: int, idempotency_key: str | None) -> str:
    """A new room's id for create_room_from_template without a roomId: the template's name
    and a tail that is the team's and the key's (a retry with the same key reaches the same
    room; another team's same key makes another id), or random without a key."""
    stem = re.sub(r"[^a-z0-9-]+", "-", template_id.lower()).strip("-")[:40] or "room"
    if idempotency_key:
        seed = f"{team_id}\n{idempotency_key}".encode()
        tail = hashlib.sha256(seed).hexdigest()[:12]
    else:
        tail = secrets.token_hex(6)
    return f"{stem}-{tail}"
