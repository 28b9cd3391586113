"""Every credential becomes a `Caller` here, through one function, for every door.

What a door can present: a bearer secret (MCP, the REST tool door, SSE, the account API),
a person's dashboard session, a dashboard session entered with a team key, or a share
link's token. `caller_resolve` turns any of them into one `Caller` with explicit
capabilities (tenants.capabilities), or None; `credential_lookup` is the only code that
decides those capabilities.

Bearers, in order (docs/protocol.md "Tenancy and access"): static keys from API_KEYS
(constant time over digests, every key checked), then team keys, then invites, then OAuth
access tokens (django-oauth-toolkit's, found by the same SHA-256), which only the OAuth
door takes: a caller's `resource` is the door URL it is good at, and every door compares. Team keys
and invites are answered from a short Redis cache on the hot path and from the database on
a miss. A revocation bumps the digest's generation before it drops the cache entry, and a
fill only lands if the generation it read is still current, so no request in flight can
re-cache a credential revoked a moment earlier.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError

from rooms import clock, profiles
from rooms.store import bearers as bearers_store
from rooms.store import engine as engine_store
from tenants import budgets
from tenants.capabilities import (
    STATIC_MANAGEMENT,
    Caller,
    key_capabilities,
    role_capabilities,
)
from tenants.credentials import secret_digest, static_key_match, static_keys_parse
from tenants.db import db_run
from tenants.models import ApiKey, Invite, Membership, OAuthConnection, Room, ShareLink, Team

log = logging.getLogger(__name__)
BEARER_CACHE_SECONDS = 60
# What every door answers (with 401) to a missing or unknown bearer.
UNAUTHORIZED = (
    "Missing or unknown bearer secret. Send 'Authorization: Bearer <team key or invite>'."
)


# --- What a door can present ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bearer:
    secret: str | None


@dataclass(frozen=True, slots=True)
class PersonSession:
    """A signed-in person. The team is the one the dashboard chose (`team_id`), or the team
    owning `room_id` (an event stream opened from a room page), or the person's first."""

    user_id: int
    team_id: int | None = None
    room_id: str | None = None


@dataclass(frozen=True, slots=True)
class KeySession:
    """A dashboard session entered with a team key (AUTH_MODE apikey/both): only the key's
    digest is kept in the session, and the key's own capabilities apply."""

    digest: str


@dataclass(frozen=True, slots=True)
class ShareToken:
    token: str


Presented = Bearer | PersonSession | KeySession | ShareToken


def bearer_from_header(value: str | None) -> Bearer:
    if not value:
        return Bearer(None)
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer":
        return Bearer(None)
    return Bearer(token.strip() or None)


# --- Static teams -------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _static_keys(raw: str) -> list[tuple[str, str]]:
    return static_keys_parse(raw)


def static_slugs() -> list[str]:
    return [slug for slug, _ in _static_keys(str(settings.API_KEYS))]


# slug -> team id of the static teams this process has seen (tests clear it with the DB).
_static_ids: dict[str, int] = {}

STATIC_SLUG_TAKEN = (
    "API_KEYS names the team {slug!r}, but a team with that slug was created through the "
    "API or the dashboard; give the static key another team slug."
)


def static_team_get(slug: str) -> Team | None:
    """The static team of `slug`, created if it does not exist yet. None (and an error in
    the log) when a non-static team already holds the slug: a static key never reaches a
    team someone else created."""
    team = Team.objects.filter(slug=slug).first()
    if team is None:
        try:
            team = Team.objects.create(slug=slug, name=slug, is_static=True)
        except IntegrityError:
            team = Team.objects.get(slug=slug)
    if not team.is_static:
        log.error(STATIC_SLUG_TAKEN.format(slug=slug))
        return None
    _static_ids[slug] = team.pk
    return team


def static_teams_ensure() -> None:
    """At startup: every API_KEYS team exists (so its slug can never be taken), or the
    configuration is refused."""
    for slug in static_slugs():
        if static_team_get(slug) is None:
            raise ImproperlyConfigured(STATIC_SLUG_TAKEN.format(slug=slug))


def _static_caller(team_id: int, slug: str) -> Caller:
    return Caller(
        team_id=team_id,
        team_slug=slug,
        kind="static",
        credential=f"static:{team_id}",
        write=True,
        manage=STATIC_MANAGEMENT,
    )


def caches_clear() -> None:
    """Forget what this process remembers of the database (tests flush it between tests)."""
    _static_ids.clear()
    _known.clear()


# --- The one place capabilities are decided ----------------------------------------------------


def _ms(value: datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


def _key_caller(key: ApiKey, *, session: bool) -> Caller:
    agent = key.agent_name or None
    write, manage = key_capabilities(read_only=key.read_only, agent=agent)
    return Caller(
        team_id=key.team_id,
        team_slug=key.team.slug,
        kind="key_session" if session else "key",
        credential=f"key:{key.pk}",
        write=write,
        manage=manage,
        agent=agent,
        expires_at_ms=_ms(key.expires_at),
        tools_profile=profiles.profile_stored(key.tools_profile),
    )


def _digest_lookup(digest: str, *, invites: bool, session: bool) -> Caller | None:
    now = clock.now()
    key = ApiKey.objects.select_related("team").filter(digest=digest).first()
    if key is not None:
        if not key.is_live(now):
            return None
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return _key_caller(key, session=session)
    if not invites:
        return None
    invite = Invite.objects.select_related("team", "room").filter(digest=digest).first()
    if invite is None:
        return _oauth_lookup(digest, now)
    if not invite.is_live(now):
        return None
    Invite.objects.filter(pk=invite.pk).update(last_used_at=now)
    return Caller(
        team_id=invite.team_id,
        team_slug=invite.team.slug,
        kind="invite",
        credential=f"invite:{invite.pk}",
        room=invite.room.room_id,
        write=not invite.read_only,
        agent=invite.agent_name or None,
        expires_at_ms=_ms(invite.expires_at),
        tools_profile=profiles.profile_stored(invite.tools_profile),
    )


def _oauth_lookup(digest: str, now: datetime) -> Caller | None:
    """An OAuth access token's caller: live, for this service's one scope and one door URL,
    of an active person still in the team their connection to this client names."""
    from oauth2_provider.models import AccessToken

    token = AccessToken.objects.filter(token_checksum=digest).first()
    if (
        token is None
        or token.user_id is None
        or token.expires <= now
        or not token.allow_scopes(["mcp"])
        or len(token.resource or []) != 1
    ):
        return None
    connection = (
        OAuthConnection.objects.select_related("team", "room")
        .filter(
            user_id=token.user_id,
            application_id=token.application_id,
            user__is_active=True,
            team__memberships__user_id=token.user_id,
        )
        .first()
    )
    if connection is None:
        return None
    OAuthConnection.objects.filter(pk=connection.pk).update(last_used_at=now)
    return Caller(
        team_id=connection.team_id,
        team_slug=connection.team.slug,
        kind="oauth",
        credential=f"oauth:{connection.pk}",
        room=connection.room.room_id if connection.room is not None else None,
        write=not connection.read_only,
        agent=connection.agent_name,
        expires_at_ms=_ms(token.expires),
        user_id=token.user_id,
        tools_profile=profiles.profile_stored(connection.tools_profile),
        resource=token.resource[0],
    )


def _static_lookup(digest: str) -> Caller | None:
    slug = static_key_match(digest, _static_keys(str(settings.API_KEYS)))
    if slug is None:
        return None
    team = static_team_get(slug)
    return _static_caller(team.pk, slug) if team is not None else None


def _person_lookup(presented: PersonSession) -> Caller | None:
    memberships = Membership.objects.filter(
        user_id=presented.user_id, user__is_active=True
    ).select_related("team")
    if presented.room_id is not None:
        team_id = Room.objects.filter(room_id=presented.room_id).values_list("team_id", flat=True)
        membership = memberships.filter(team_id__in=team_id).first()
    elif presented.team_id is not None:
        membership = memberships.filter(team_id=presented.team_id).first()
    else:
        membership = memberships.order_by("team__name", "team_id").first()
    if membership is None:
        return None
    write, manage = role_capabilities(membership.role)
    return Caller(
        team_id=membership.team_id,
        team_slug=membership.team.slug,
        kind="session",
        credential=f"user:{presented.user_id}",
        write=write,
        manage=manage,
        user_id=presented.user_id,
        role=membership.role,
    )


def _share_lookup(token: str) -> Caller | None:
    link = (
        ShareLink.objects.select_related("room", "room__team")
        .filter(digest=secret_digest(token))
        .first()
    )
    if link is None or not link.is_live(clock.now()):
        return None
    return Caller(
        team_id=link.room.team_id,
        team_slug=link.room.team.slug,
        kind="share",
        credential=f"share:{link.pk}",
        room=link.room.room_id,
        write=False,
        expires_at_ms=_ms(link.expires_at),
    )


def credential_lookup(presented: Presented) -> Caller | None:
    """The database's answer for any credential: who it is and what it may do."""
    if isinstance(presented, Bearer):
        if not presented.secret:
            return None
        digest = secret_digest(presented.secret)
        return _key_door(
            _static_lookup(digest) or _digest_lookup(digest, invites=True, session=False)
        )
    if isinstance(presented, KeySession):
        found = _static_lookup(presented.digest)
        if found is not None:
            return found
        return _digest_lookup(presented.digest, invites=False, session=True)
    if isinstance(presented, PersonSession):
        return _person_lookup(presented)
    return _share_lookup(presented.token)


def _key_door(caller: Caller | None) -> Caller | None:
    """What the doors other than /oauth/mcp take: an OAuth token is good there alone."""
    return caller if caller is None or caller.resource is None else None


def caller_recheck(caller: Caller) -> bool:
    """Is the credential behind `caller` still live (not revoked, expired or removed)?
    Asked of every open stream and waiting call, at each keep-alive and on each signal."""
    now = clock.now()
    kind, _, ident = caller.credential.partition(":")
    if kind == "static":
        return Team.objects.filter(
            pk=caller.team_id, is_static=True, slug__in=static_slugs()
        ).exists()
    if kind == "key":
        key = ApiKey.objects.filter(pk=int(ident), team_id=caller.team_id).first()
        return key is not None and key.is_live(now)
    if kind == "invite":
        invite = Invite.objects.filter(pk=int(ident), team_id=caller.team_id).first()
        return invite is not None and invite.is_live(now)
    if kind == "share":
        link = ShareLink.objects.filter(pk=int(ident), room__team_id=caller.team_id).first()
        return link is not None and link.is_live(now)
    if kind == "user":
        return Membership.objects.filter(
            user_id=int(ident), team_id=caller.team_id, user__is_active=True
        ).exists()
    if kind == "oauth" and caller.user_id is not None:
        from oauth2_provider.models import AccessToken

        connection = OAuthConnection.objects.filter(
            pk=int(ident),
            team_id=caller.team_id,
            user__is_active=True,
            team__memberships__user_id=caller.user_id,
        ).first()
        # The connection stands and still holds a live token (its client may have revoked
        # the one the call began with).
        return connection is not None and bool(
            AccessToken.objects.filter(
                user_id=connection.user_id,
                application_id=connection.application_id,
                expires__gt=now,
            ).exists()
        )
    return False


# --- The async doors' entrance, with the bearer cache -------------------------------------------


def _expired(caller: Caller) -> bool:
    return caller.expires_at_ms is not None and caller.expires_at_ms <= clock.now_ms()


def _cache_seconds(caller: Caller) -> int:
    if caller.expires_at_ms is None:
        return BEARER_CACHE_SECONDS
    left = (caller.expires_at_ms - clock.now_ms()) // 1000
    return max(1, min(BEARER_CACHE_SECONDS, left))


async def _bearer_lookup(digest: str) -> tuple[Caller | None, int]:
    """The caller of a team key or invite digest, from the shared Redis cache or the
    database, and the digest's generation read before either."""
    cached, generation = await bearers_store.bearer_cached(digest)
    if cached is not None:
        found = Caller.from_json(json.loads(cached))
        return (None if _expired(found) else found), generation
    caller = await db_run(_digest_lookup, digest, invites=True, session=False)
    if caller is not None:
        await bearers_store.bearer_cache_fill(
            digest,
            json.dumps(caller.to_json()),
            ttl_seconds=_cache_seconds(caller),
            generation=generation,
        )
    return caller, generation


def _static_slug(digest: str) -> str | None:
    return static_key_match(digest, _static_keys(str(settings.API_KEYS)))


async def _static_bearer(slug: str) -> Caller | None:
    team_id = _static_ids.get(slug)
    if team_id is None:
        team = await db_run(static_team_get, slug)
        if team is None:
            return None
        team_id = team.pk
    return _static_caller(team_id, slug)


async def _bearer(secret: str | None) -> Caller | None:
    if not secret:
        return None
    digest = secret_digest(secret)
    slug = _static_slug(digest)
    if slug is not None:
        return await _static_bearer(slug)
    return (await _bearer_lookup(digest))[0]


# --- The tool doors' entrance: the caller and the call's charge, warm in one round trip --------


@dataclass(frozen=True, slots=True)
class Admission:
    """Who is calling, and what their budget step answered (`charge.epoch` is what the
    caller's in-process answers were checked against, for this call's room check too)."""

    caller: Caller
    charge: budgets.Charge
    charged: bool


@dataclass(frozen=True, slots=True)
class _Known:
    caller: Caller
    epoch: int
    until_ms: int


# digest -> a team key or invite this process resolved, valid while its team's epoch stands.
_known: dict[str, _Known] = {}
KNOWN_MAX = 10_000


def _remember(digest: str, caller: Caller, epoch: int) -> None:
    if len(_known) >= KNOWN_MAX:
        _known.pop(next(iter(_known)))  # the oldest entry
    until = clock.now_ms() + BEARER_CACHE_SECONDS * 1000
    if caller.expires_at_ms is not None:
        until = min(until, caller.expires_at_ms)
    _known[digest] = _Known(caller, epoch, until)


async def caller_admit(
    presented: Bearer, *, charge: bool, resource: str | None = None
) -> Admission | None:
    """The caller of a bearer, with this call charged to its budget when `charge` (a tool
    call); None: 401, also for a credential of the other door (`resource`: the OAuth door's
    URL, which only an OAuth token for exactly it passes; None: a key door). Warm, this is one
    round trip: the budget step, which also reads the team's epoch, and a remembered caller is
    only used if that epoch is the one it was remembered under. Every revocation moves the epoch
    after the database and the shared cache changed (tenants.purges), so no process answers for
    a revoked credential after its purge has run.
    """
    if not presented.secret:
        return None
    digest = secret_digest(presented.secret)
    slug = _static_slug(digest)
    if slug is not None:
        static = await _static_bearer(slug)
        if static is None or resource is not None:
            return None
        if not charge:  # a static key cannot be revoked but by a restart: nothing to check
            return Admission(static, budgets.Charge(epoch=None), charged=False)
        return Admission(static, await budgets.budget_step(static, charge=True), charged=True)
    known = _known.get(digest)
    if known is not None and known.until_ms > clock.now_ms():
        if known.caller.resource != resource:
            return None
        step = await budgets.budget_step(known.caller, charge=charge)
        if step.epoch is not None and step.epoch == known.epoch:
            return Admission(known.caller, step, charged=charge)
        # Stale: the team changed something. The epoch was read before the lookup below, so
        # it can be remembered under, and the call is not charged twice.
        _known.pop(digest, None)
        caller, _ = await _bearer_lookup(digest)
        if caller is None or caller.resource != resource:
            return None
        if caller.budget != known.caller.budget:
            step = await budgets.budget_step(caller, charge=charge)
        if step.epoch is not None:
            _remember(digest, caller, step.epoch)
        return Admission(caller, step, charged=charge)
    caller, generation = await _bearer_lookup(digest)
    if caller is None or caller.resource != resource:
        return None
    step = await budgets.budget_step(caller, charge=charge)
    # The epoch was read after the lookup: remember the caller under it only if nothing was
    # revoked in between (a revocation bumps the generation before it moves the epoch).
    if step.epoch is not None and await bearers_store.bearer_generation(digest) == generation:
        _remember(digest, caller, step.epoch)
    return Admission(caller, step, charged=charge)


async def caller_resolve(presented: Presented) -> Caller | None:
    """Who is calling, with what capabilities; None: the door answers 401 (or sign in)."""
    if isinstance(presented, Bearer):
        return _key_door(await _bearer(presented.secret))
    return await db_run(credential_lookup, presented)


async def caller_watching(presented: Presented) -> tuple[Caller | None, int | None]:
    """The caller of a stream, and for a bearer its team's epoch, read by an uncharged budget
    step: with it a key this process knows opens its stream as a warm tool call does (the
    room as the process last saw it under that epoch), not with the room's cold check (53
    commands, measured). A static key is admitted without a step, so it takes one here."""
    if not isinstance(presented, Bearer):
        return await caller_resolve(presented), None
    admitted = await caller_admit(presented, charge=False)
    if admitted is None:
        return None, None
    epoch = admitted.charge.epoch
    if epoch is None:
        epoch = (await budgets.budget_step(admitted.caller, charge=False)).epoch
    return admitted.caller, epoch


def caller_resolve_sync(presented: Presented) -> Caller | None:
    """`caller_resolve` for sync doors (DRF views, dashboard pages)."""
    if isinstance(presented, Bearer):
        return engine_store.run_sync(caller_resolve, presented)
    return credential_lookup(presented)
