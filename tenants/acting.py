"""A person acting in a room from the dashboard: who they act as, and when they may act as
one of the team's agents.

A person writes to a room under a name of their own (`person_agent`), so every event,
note and verdict they leave names them, never an agent, and an agent cannot later be
blamed for what a person did. Acting *for* an agent (accepting a handoff offered to it,
resolving a review asked of it) is off unless the team's owner turned it on; even then the
person's name goes into the note the event carries, and the audit log records both.
"""

from __future__ import annotations

import dataclasses

from django.contrib.auth.models import User

from tenants import errors, services
from tenants.capabilities import PERSON_PREFIX, Caller, Manage
from tenants.models import Team

ACTING_FOR_OFF = (
    "This team does not let people act on an agent's behalf. A team owner can allow it on "
    "the Team page ('People may act for agents')."
)
ACTING_FOR_BOUND = "A key bound to one agent acts only as that agent, never for another one."


def person_agent(caller: Caller, user: User | None) -> str:
    """The name a person's writes carry: `person:<email>` for a signed-in person, the
    bound agent for a key session of a bound key, else the credential (`key:<id>`)."""
    if caller.agent is not None:
        return caller.agent
    if user is not None and user.email:
        return (PERSON_PREFIX + user.email)[:128]
    return caller.credential[:128]


def acting_as(caller: Caller, user: User | None) -> Caller:
    """The caller bound to the person's own name: every argument naming the actor is that
    name, whatever a form posted (tenants.access.actors_bind). Only a person's session
    becomes one; no credential may name itself `person:` otherwise."""
    name = person_agent(caller, user)
    # The flag says where the name came from (a person's own email), never what it reads
    # like: a key session acts as its bound agent or its credential, even a key bound
    # before bindings were checked to a name that reads "person:" (rooms.names).
    person = caller.agent is None and user is not None and bool(user.email)
    return dataclasses.replace(caller, agent=name, person=person)


def acting_for_allowed(caller: Caller, team: Team) -> bool:
    """Whether this caller may act for an agent at all: the team allows people to, and the
    caller is not a key bound to one agent (which acts as that agent only)."""
    return bool(team.people_act_for_agents) and caller.agent is None


def acting_for(caller: Caller, team: Team, agent: str) -> Caller:
    """The caller bound to `agent`, for one call made on its behalf; refused unless the team
    allows people to act for agents."""
    if not acting_for_allowed(caller, team):
        refusal = ACTING_FOR_BOUND if caller.agent is not None else ACTING_FOR_OFF
        raise errors.NotPermittedError(refusal, extra={"agent": agent})
    return dataclasses.replace(caller, agent=agent, person=False)


def acting_for_set(*, team: Team, allowed: bool, caller: Caller) -> Team:
    """Turn acting-for-agents on or off (team owners), audited."""
    if not caller.may(Manage.TEAM):
        raise errors.NotPermittedError("Only a team owner changes what people may do for agents.")
    if team.people_act_for_agents != allowed:
        team.people_act_for_agents = allowed
        team.save(update_fields=["people_act_for_agents"])
        services.audit_record(
            team=team,
            actor=caller.actor,
            action="team.people_act_for_agents",
            object_type="team",
            object_id=team.pk,
            detail={"allowed": allowed},
        )
    return team
