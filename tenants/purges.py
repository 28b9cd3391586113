"""Redis follows the database: a deleted team, room, key, invite or share link — deleted
anywhere, the Django admin included — takes its Redis state and cached credentials with it,
and every process hears of revocations and membership changes at once.

Each clean-up is a `PendingPurge` row written in the same transaction as the deletion (a
`pre_delete` receiver, so the admin's deletes and cascades are covered too) and carried out
right after the commit; a row that could not be carried out (Redis away) stays, and
`purges_retry` (a periodic task) retries it until it succeeds.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models.signals import post_save, pre_delete
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from rooms.keys import RoomKeys
from rooms.store import bearers as bearers_store
from rooms.store import budgets as budgets_store
from rooms.store import engine as engine_store
from rooms.store import signals as signals_store
from tenants.models import (
    ApiKey,
    Invite,
    Membership,
    OAuthConnection,
    PendingPurge,
    Room,
    ShareLink,
    Team,
    Webhook,
)

log = logging.getLogger(__name__)


def _enqueue(kind: str, value: str) -> None:
    row = PendingPurge.objects.create(kind=kind, value=value)
    transaction.on_commit(functools.partial(purges_run, [row.pk]))


def credential_purge(*, ref: str, digest: str, team_id: int) -> None:
    """After commit: the digest's cache entry is dropped (its generation bumped, so no fill
    in flight lands), the team's epoch moves on (so no process's in-process cache answers
    for it again) and live uses of `ref` end."""
    _enqueue(PendingPurge.Kind.CREDENTIAL, f"{ref} {digest} {team_id}")


def room_purge(room_id: str, team_id: int) -> None:
    _enqueue(PendingPurge.Kind.ROOM, f"{room_id} {team_id}")


def team_purge(team_id: int) -> None:
    _enqueue(PendingPurge.Kind.TEAM, str(team_id))


def signal_after_commit(refs: list[str]) -> None:
    """Ask every process to re-check the live uses of `refs` (nothing to clean up; a lost
    signal is made up for by the periodic re-check of live uses)."""

    def publish() -> None:
        try:
            engine_store.run_sync(signals_store.revocation_publish, refs)
        except Exception:
            log.exception("could not publish a revocation signal")

    transaction.on_commit(publish)


def _team_of(parts: list[str], at: int) -> int | None:
    """The team id at `parts[at]`; None in a row written before it was recorded."""
    return int(parts[at]) if len(parts) > at and parts[at].isdigit() else None


async def _carry_out(kind: str, value: str) -> None:
    # Each order matters: the database already changed, then Redis's own record goes (the
    # generation bumped, the owner dropped), and only then the epoch moves, so a process
    # that reads the new epoch can no longer find the old answer anywhere.
    parts = value.split(" ")
    if kind == PendingPurge.Kind.CREDENTIAL:
        if len(parts) > 1 and parts[1]:
            await bearers_store.bearers_forget([parts[1]])
        await signals_store.revocation_publish([parts[0]])
        if (team_id := _team_of(parts, 2)) is not None:
            await budgets_store.team_epoch_bump(team_id)
    elif kind == PendingPurge.Kind.ROOM:
        await bearers_store.room_forget(RoomKeys(parts[0]))
        await signals_store.revocation_publish([f"room:{parts[0]}"])
        if (team_id := _team_of(parts, 1)) is not None:
            await budgets_store.team_epoch_bump(team_id)
    elif kind == PendingPurge.Kind.TEAM:
        await signals_store.revocation_publish([f"team:{parts[0]}"])
        await bearers_store.team_budget_forget(int(parts[0]))


def purges_run(ids: list[int]) -> int:
    """Carry out these pending purges; returns how many are done."""
    done = 0
    for row in PendingPurge.objects.filter(pk__in=ids).order_by("pk"):
        try:
            engine_store.run_sync(_carry_out, row.kind, row.value)
        except Exception as exc:  # Redis away: keep the row for the periodic retry
            PendingPurge.objects.filter(pk=row.pk).update(
                attempts=row.attempts + 1, last_error=f"{type(exc).__name__}: {exc}"[:300]
            )
            log.warning("purge of %s %s failed, will retry: %s", row.kind, row.value, exc)
            continue
        row.delete()
        done += 1
    return done


def purges_retry() -> int:
    """Every pending purge, oldest first (the periodic task)."""
    return purges_run(list(PendingPurge.objects.order_by("pk").values_list("pk", flat=True)[:500]))


# --- Receivers: whatever deletes a row, its Redis state follows --------------------------------


def _on_team_delete(sender: Any, instance: Team, **kwargs: Any) -> None:
    team_purge(instance.pk)


def _on_room_delete(sender: Any, instance: Room, **kwargs: Any) -> None:
    room_purge(instance.room_id, instance.team_id)


def _on_key_delete(sender: Any, instance: ApiKey, **kwargs: Any) -> None:
    credential_purge(ref=f"key:{instance.pk}", digest=instance.digest, team_id=instance.team_id)


def _on_invite_delete(sender: Any, instance: Invite, **kwargs: Any) -> None:
    credential_purge(ref=f"invite:{instance.pk}", digest=instance.digest, team_id=instance.team_id)


def _on_share_delete(sender: Any, instance: ShareLink, **kwargs: Any) -> None:
    credential_purge(ref=f"share:{instance.pk}", digest="", team_id=instance.room.team_id)


def _on_membership_delete(sender: Any, instance: Membership, **kwargs: Any) -> None:
    signal_after_commit([f"user:{instance.user_id}"])
    # A person who left the team takes their clients' access to it with them.
    OAuthConnection.objects.filter(user_id=instance.user_id, team_id=instance.team_id).delete()


def _on_user_save(sender: Any, instance: User, **kwargs: Any) -> None:
    if not instance.is_active:  # deactivated: no client acts for them any more
        OAuthConnection.objects.filter(user_id=instance.pk).delete()
        signal_after_commit([f"user:{instance.pk}"])  # and their own streams end


def oauth_tokens_end(*, user_id: int, application_id: int) -> None:
    """Delete a client's codes and tokens for a person; each token's cached caller goes
    after commit (`_on_access_token_delete`), so the next call is refused."""
    pair = {"user_id": user_id, "application_id": application_id}
    RefreshToken.objects.filter(**pair).delete()
    AccessToken.objects.filter(**pair).delete()
    Grant.objects.filter(**pair).delete()


def _on_connection_delete(sender: Any, instance: OAuthConnection, **kwargs: Any) -> None:
    """However a connection goes (revoked, replaced, its room or team deleted, its person
    gone), its tokens go with it, and with each its cached caller; live uses of it end. No
    token outlives the consent it was issued under, nor acts under a later one."""
    oauth_tokens_end(user_id=instance.user_id, application_id=instance.application_id)
    signal_after_commit([f"oauth:{instance.pk}"])


def _on_access_token_delete(sender: Any, instance: AccessToken, **kwargs: Any) -> None:
    """An OAuth access token deleted (revoked by its client, rotated by a refresh, its family
    ended on reuse, its connection ended): its cached caller goes, like a revoked key's."""
    connection = OAuthConnection.objects.filter(
        user_id=instance.user_id, application_id=instance.application_id
    ).first()
    if connection is not None:  # without one it never resolved to a caller
        credential_purge(
            ref=f"oauth:{connection.pk}", digest=instance.token_checksum, team_id=connection.team_id
        )


def _on_user_delete(sender: Any, instance: User, **kwargs: Any) -> None:
    signal_after_commit([f"user:{instance.pk}"])


def _on_webhook_delete(sender: Any, instance: Webhook, **kwargs: Any) -> None:
    room_id = instance.room.room_id

    def publish() -> None:
        try:
            engine_store.run_sync(signals_store.webhooks_changed_publish, room_id)
        except Exception:
            log.exception("could not tell the relay that webhooks changed")

    transaction.on_commit(publish)


def receivers_connect() -> None:
    """Called once from TenantsConfig.ready()."""
    pre_delete.connect(_on_team_delete, sender=Team, dispatch_uid="purge-team")
    pre_delete.connect(_on_room_delete, sender=Room, dispatch_uid="purge-room")
    pre_delete.connect(_on_key_delete, sender=ApiKey, dispatch_uid="purge-key")
    pre_delete.connect(_on_invite_delete, sender=Invite, dispatch_uid="purge-invite")
    pre_delete.connect(_on_share_delete, sender=ShareLink, dispatch_uid="purge-share")
    pre_delete.connect(_on_membership_delete, sender=Membership, dispatch_uid="purge-member")
    pre_delete.connect(_on_user_delete, sender=User, dispatch_uid="purge-user")
    pre_delete.connect(_on_webhook_delete, sender=Webhook, dispatch_uid="purge-webhook")
    pre_delete.connect(_on_access_token_delete, sender=AccessToken, dispatch_uid="purge-oauth")
    pre_delete.connect(
        _on_connection_delete, sender=OAuthConnection, dispatch_uid="purge-oauth-connection"
    )
    post_save.connect(_on_user_save, sender=User, dispatch_uid="purge-user-deactivated")
