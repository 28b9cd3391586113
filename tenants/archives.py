"""Rooms that never silently vanish: archive to Postgres, restore, export, import.

Redis holds a live room; a room idle for its whole TTL would simply expire there. The
archive sweep (Celery beat, `archives.sweep`) moves every room idle for longer than the TTL
less ROOM_ARCHIVE_AHEAD_SECONDS to Postgres first; `set_room_status(archived)`, the API,
the dashboard and `manage.py room_archive` do the same on demand.

An archive is three steps, in this order, so no acknowledged write is ever lost: freeze
(the room's status becomes "archiving" in one Redis step; from then on every write step
refuses, rooms/lua/wrap/guard.lua), snapshot (copied in one short Redis step, read out of the
copy in chunks) and record (the document and the room's status in one Postgres
transaction), then the room's keys go. If the record fails, the room is thawed back to the
status it had.

While archived, reads answer from a read-only copy of the archive, loaded on the first
read for ROOM_ARCHIVE_VIEW_SECONDS; writes are refused, saying how to restore. A restore
writes the archive into staging copies in chunks and puts them in place in one short Redis
step (stream ids included, so every agent's cursor goes on where it was); the room is
active again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from rooms import clock, errors, quotas, redaction, search, snapshots
from rooms.keys import RoomKeys
from rooms.refs import RoomRef
from rooms.schemas import room_id_valid
from rooms.store import archives as archives_store
from rooms.store import bearers as bearers_store
from rooms.store import budgets as budgets_store
from rooms.store import engine as engine_store
from rooms.store import room as room_store
from rooms.store import search as search_store
from tenants import imports
from tenants.db import db_run
from tenants.models import Room, RoomArchive, Team
from tenants.services import audit_record, room_insert

log = logging.getLogger(__name__)
# A loader that finds another at work waits this long for the room to appear.
LOAD_WAIT_SECONDS = 5.0
LOADING_MARK_SECONDS = 30


@dataclass(frozen=True, slots=True)
class StatusMove:
    """What an archive or a restore did: the room's status before and now."""

    room_id: str
    previous: str
    status: str

    def result(self) -> dict[str, str]:
        return {"roomId": self.room_id, "status": self.status, "previousStatus": self.previous}


def room_archive(
    room_id: str,
    *,
    actor: str,
    reason: str = RoomArchive.Reason.REQUESTED,
    idle_before: datetime | None = None,
    by: str | None = None,
) -> StatusMove:
    """Move the room's whole state to Postgres and out of Redis. Archiving an archived room
    changes nothing (and says so); nor does the sweep's archive (`idle_before`) of a room
    used again since it was found idle."""
    keys = RoomKeys(room_id)
    with transaction.atomic():
        room = Room.objects.select_for_update().select_related("team").get(room_id=room_id)
        if room.status == Room.Status.ARCHIVED or (
            idle_before is not None and room.last_active_at >= idle_before
        ):
            return StatusMove(room_id, room.status, room.status)
        before = engine_store.run_sync(archives_store.room_freeze, keys)
        try:
            raw: list[archives_store.RawKey] = []
            earlier = RoomArchive.objects.filter(room=room).first()
            if before is None and earlier is not None and earlier.document.get("parts"):
                # Redis holds nothing of the room (it lost it after a restore): the archive
                # it was restored from is its last copy; keep it, never an empty one.
                raw = _document_keys(earlier.document)[1]
            elif before is not None:
                engine_store.run_sync(
                    room_store.room_status_event,
                    keys,
                    status="archived",
                    previous=before,
                    by=by or actor,
                )
                raw = engine_store.run_sync(archives_store.room_snapshot, keys)
            document = snapshots.document_build(
                room_id, raw, status=before or room.status, taken_at=clock.now_iso()
            )
            size = len(json.dumps(document, separators=(",", ":")))
            RoomArchive.objects.update_or_create(
                room=room,
                defaults={
                    "document": document,
                    "size_bytes": size,
                    "reason": reason,
                    "archived_at": clock.now(),
                    "archived_by": actor[:200],
                    "restored_at": None,
                },
            )
            previous = before or room.status
            room.status = Room.Status.ARCHIVED
            room.save(update_fields=["status"])
            audit_record(
                team=room.team,
                actor=actor,
                action="room.archive",
                object_type="room",
                object_id=room_id,
                detail={"reason": reason, "previous": previous, "bytes": size}
                | snapshots.document_summary(document),
            )
        except BaseException:
            if before is not None:
                engine_store.run_sync(archives_store.room_thaw, keys, before)
                engine_store.run_sync(archives_store.room_claims_due_restore, keys)
            else:
                engine_store.run_sync(bearers_store.room_forget, keys)  # drop the freeze's mark
            raise
    engine_store.run_sync(bearers_store.room_forget, keys, tombstone=True)
    engine_store.run_sync(budgets_store.team_epoch_bump, room.team_id)
    return StatusMove(room_id, previous, Room.Status.ARCHIVED)


def room_restore(room_id: str, *, actor: str, by: str | None = None) -> StatusMove:
    """Bring an archived room back to Redis, exactly, and active. Restoring a room that is
    not archived changes nothing (so a retry, or two people at once, restore it once)."""
    keys = RoomKeys(room_id)
    with transaction.atomic():
        room = Room.objects.select_for_update().select_related("team").get(room_id=room_id)
        if room.status != Room.Status.ARCHIVED:
            return StatusMove(room_id, room.status, room.status)
        archive = RoomArchive.objects.get(room=room)
        _, raw = _document_keys(archive.document)
        _loaded(room_id, room.team_id, raw, status=Room.Status.ACTIVE, view=False)
        try:
            archive.restored_at = clock.now()
            archive.save(update_fields=["restored_at"])
            room.status = Room.Status.ACTIVE
            room.last_active_at = clock.now()
            room.save(update_fields=["status", "last_active_at"])
            audit_record(
                team=room.team,
                actor=actor,
                action="room.restore",
                object_type="room",
                object_id=room_id,
                detail=snapshots.document_summary(archive.document),
            )
        except BaseException:
            # The record says archived still: no live room may stand in Redis beside it.
            engine_store.run_sync(bearers_store.room_forget, keys, tombstone=True)
            raise
    engine_store.run_sync(
        room_store.room_status_event, keys, status="active", previous="archived", by=by or actor
    )
    engine_store.run_sync(archives_store.room_claims_due_restore, keys)
    engine_store.run_sync(budgets_store.team_epoch_bump, room.team_id)
    return StatusMove(room_id, Room.Status.ARCHIVED, Room.Status.ACTIVE)


async def room_status_move(
    room: RoomRef, *, status: str, actor: str, by: str
) -> dict[str, str] | None:
    """set_room_status's moves into and out of the archive (the others are the room's own,
    rooms.services.lifecycle): None when this is not one."""
    if status == Room.Status.ARCHIVED:
        return (await db_run(room_archive, room.room_id, actor=actor, by=by)).result()
    if room.status not in (Room.Status.ARCHIVED, "archiving"):
        return None
    if status == Room.Status.ACTIVE:
        return (await db_run(room_restore, room.room_id, actor=actor, by=by)).result()
    raise errors.RoomClosedError(
        errors.ROOM_ARCHIVED_STATUS.format(room_id=room.room_id, status=status),
        extra={"roomId": room.room_id, "status": room.status},
    )


def _loaded(
    room_id: str,
    team_id: int,
    raw: list[archives_store.RawKey],
    *,
    status: str,
    view: bool,
    pace: Callable[[], None] | None = None,
) -> bool:
    """The room's keys in Redis from a document's: a live room for the idle TTL, or a
    read-only view of an archived one for ROOM_ARCHIVE_VIEW_SECONDS. With `pace` (an
    import's, on an event loop of its own: tenants.imports.off_loop), the writes are paced
    by it between their steps."""
    seconds = settings.ROOM_ARCHIVE_VIEW_SECONDS if view else settings.ROOM_IDLE_TTL_SECONDS
    load = archives_store.room_load(
        RoomKeys(room_id),
        raw,
        team_id=str(team_id),
        status=status,
        ttl_ms=int(seconds) * 1000,
        view=view,
    )
    return engine_store.run_sync(_paced, load, pace)


async def _paced(step: Awaitable[bool], pace: Callable[[], None] | None) -> bool:
    """`step`, with `pace()` called about every millisecond while it runs (its sleep holds
    this loop, and so the step, for a moment)."""
    if pace is None:
        return await step
    task = asyncio.ensure_future(step)
    while not task.done():
        await asyncio.wait({task}, timeout=0.001)
        pace()
    return task.result()


def _document_keys(document: dict[str, Any]) -> tuple[str, list[archives_store.RawKey]]:
    """An archive's own document: it was written by this service, so it is trusted."""
    return snapshots.document_keys(document)


def room_view_load(room_id: str) -> bool:
    """Reads of an archived room: its archive as a read-only copy in Redis, for
    ROOM_ARCHIVE_VIEW_SECONDS (the first reader loads it, the others wait for it). False
    when the room is no longer archived (restored meanwhile: read it as it is)."""
    keys = RoomKeys(room_id)
    deadline = time.monotonic() + LOAD_WAIT_SECONDS
    while True:
        if engine_store.run_sync(archives_store.room_loading, keys, seconds=LOADING_MARK_SECONDS):
            try:
                room = Room.objects.select_related("archive").filter(room_id=room_id).first()
                if room is None:
                    raise errors.RoomAccessError(errors.ROOM_ACCESS_DENIED)  # deleted meanwhile
                if room.status != Room.Status.ARCHIVED:
                    return False
                _, raw = _document_keys(room.archive.document)
                _loaded(room_id, room.team_id, raw, status=Room.Status.ARCHIVED, view=True)
                return True
            finally:
                engine_store.run_sync(archives_store.room_loading_done, keys)
        if engine_store.run_sync(archives_store.room_present, keys):
            return True
        if time.monotonic() > deadline:
            raise errors.StoreUnavailableError(errors.ROOM_LOADING.format(room_id=room_id))
        time.sleep(0.05)


def room_export(room_id: str) -> bytes:
    """The room as one signed document, the bytes export hands out (rooms.snapshots,
    version 2): its archive when archived, else a snapshot of this moment (one Redis step;
    the room goes on taking writes)."""
    room = Room.objects.select_related("archive").get(room_id=room_id)
    if room.status == Room.Status.ARCHIVED:
        document = {**room.archive.document, "version": snapshots.VERSION}
    else:
        raw = engine_store.run_sync(archives_store.room_snapshot, RoomKeys(room_id))
        document = snapshots.document_build(
            room_id, raw, status=room.status, taken_at=clock.now_iso()
        )
    return snapshots.document_encode(document, imports.export_key())


def room_snapshot_load(room: Room, body: imports.SignedBody) -> None:
    """A live room's snapshot from a backup (calls.backups) back in Redis exactly as it
    was, owned by its row's team. Unlike an import, no quota or secret check and no new
    row: the document is this deployment's own (its signature matched), taken from a room
    those checks already held, and its row was restored with the database."""
    head, raw = snapshots.document_read(body.lines())
    _loaded(room.room_id, room.team_id, raw, status=snapshots.document_status(head), view=False)
    engine_store.run_sync(archives_store.room_claims_due_restore, RoomKeys(room.room_id))


def room_import(
    *,
    team: Team,
    body: imports.SignedBody,
    room_id: str | None,
    actor: str,
    pace: Callable[[], None] = lambda: None,
) -> Room:
    """A new room of `team` from an exported document whose signature matched (under
    `room_id`, else the document's own id): the room that was exported, in its status, with
    the secrets in it redacted by its rule and within the quotas a room written by tools
    keeps. An id that is not free gets the one room denial, whoever holds it. `pace` is
    called often while the document is read and checked (tenants.imports.Pacer)."""
    head, raw = snapshots.document_read(body.lines(), pace)
    return _imported(team, head, raw, room_id=room_id, actor=actor, pace=pace)


def room_import_legacy(*, team: Team, document: Any, room_id: str | None, actor: str) -> Room:
    """`room_import` for a version 1 document (a file the operator holds; manage.py
    room_import): its signature is checked with the keys that may have signed it."""
    checked = snapshots.document_legacy_checked(document, imports.legacy_keys())
    status, raw = snapshots.document_keys(checked)
    return _imported(team, {**checked, "status": status}, raw, room_id=room_id, actor=actor)


def _imported(
    team: Team,
    head: dict[str, Any],
    raw: list[archives_store.RawKey],
    *,
    room_id: str | None,
    actor: str,
    pace: Callable[[], None] = lambda: None,
) -> Room:
    status = snapshots.document_status(head)
    # What a room inherited is its own team's project memory, not the importer's.
    raw = [key for key in raw if key.part != "inherited"]
    chosen = room_id or str(head.get("roomId") or "")
    if not room_id_valid(chosen):
        raise errors.ToolArgumentsError(errors.ROOM_ID_INVALID.format(room_id=chosen[:80]))
    _quotas_checked(raw)
    indexed = any(k.part.startswith("search_") for k in raw)
    raw, found = snapshots.keys_redacted(raw, _secrets_policy(raw), pace)
    reindex = bool(found) or (indexed and not any(k.part.startswith("search_") for k in raw))
    try:
        room = room_insert(team_id=team.pk, room_id=chosen, name="", actor=actor, how="imported")
    except IntegrityError:  # taken, by anyone (two imports at once included): no oracle
        raise errors.RoomAccessError(errors.ROOM_ACCESS_DENIED) from None
    try:
        _loaded(chosen, team.pk, raw, status=status, view=False, pace=pace)
        if reindex:
            engine_store.run_sync(_search_reindexed, RoomKeys(chosen))
    except BaseException:
        engine_store.run_sync(bearers_store.room_forget, RoomKeys(chosen))
        room.delete()
        raise
    if status != Room.Status.ACTIVE:
        Room.objects.filter(pk=room.pk).update(status=status)
        room.status = status
    if found:
        audit_record(
            team=team,
            actor=actor,
            action="room.import.redacted",
            object_type="room",
            object_id=chosen,
            detail={"redacted": redaction.places(found)[:50], "count": len(found)},
        )
    engine_store.run_sync(archives_store.room_claims_due_restore, RoomKeys(chosen))
    return room


# part -> (the quota a room written by tools keeps it within, what it counts, per item)
_PART_QUOTAS: dict[str, tuple[str, int]] = {
    "tasks": ("ROOM_TASKS_MAX", 2),
    "ctx": ("ROOM_CONTEXT_MAX", 2),
    "vars": ("ROOM_VARS_MAX", 2),
    "leases": ("ROOM_LEASES_MAX", 2),
    "file_reads": ("ROOM_FILE_READS_MAX", 2),
    "cursors": ("ROOM_CURSORS_MAX", 2),
    "handoffs": ("ROOM_HANDOFFS_MAX", 2),
    "messages": ("ROOM_MESSAGES_MAX", 2),
    "deliveries": ("ROOM_DELIVERIES_MAX", 2),
    "reviews": ("ROOM_REVIEWS_MAX", 2),
    "presence": ("ROOM_AGENTS_MAX", 2),
    "idem": ("ROOM_IDEMPOTENCY_KEYS_MAX", 2),
    "events": ("ROOM_EVENT_CAP", 1),
}


def _quotas_checked(raw: list[archives_store.RawKey]) -> None:
    """Refuses (QuotaExceededError) a document holding more than a room written by tools
    may: tasks, context entries, events and their bytes, vars, leases, messages..."""
    for key in raw:
        quota, per = _PART_QUOTAS.get(key.part, ("", 1))
        if not quota:
            continue
        used = len(key.entries) if key.type == "stream" else len(key.items) // per
        limit = int(getattr(settings, quota))
        if used > limit:
            raise _import_quota(quota, used, limit)
        if key.type == "stream":
            # As the append step counts an event (scripts.entry_size), less its postings.
            size = sum(48 + sum(map(len, fields[1::2])) for _, fields in key.entries)
            most = int(settings.ROOM_EVENT_BYTES_MAX)
            if size > most:
                raise _import_quota("ROOM_EVENT_BYTES_MAX", size, most)


def _import_quota(quota: str, used: int, limit: int) -> errors.QuotaExceededError:
    what = quotas.QUOTAS.get(quota, (f"{quota} in this room", ""))[0]
    return errors.QuotaExceededError(
        what=what,
        quota=quota,
        used=used,
        limit=limit,
        how="Nothing was imported: a room over this server's quotas cannot be brought in. "
        "Export a smaller room, or ask the operator.",
    )


def _secrets_policy(raw: list[archives_store.RawKey]) -> str:
    """The imported room's own rule (set_room_mode(secrets)), redact unless it says."""
    meta = next((k for k in raw if k.part == "meta"), None)
    items = meta.items if meta is not None else []
    for i in range(0, len(items) - 1, 2):
        if items[i] == b"mode":
            try:
                mode = json.loads(items[i + 1])
            except ValueError:
                break
            policy = mode.get("secrets") if isinstance(mode, dict) else None
            if policy in ("off", "refuse"):
                return str(policy)
            break
    return redaction.DEFAULT_POLICY


async def _search_reindexed(keys: RoomKeys) -> None:
    """Tasks and context indexed again after a redaction left the old index out (events
    already indexed are not: their postings went with it; new ones are indexed as usual)."""
    for what in ("tasks", "context"):
        done, start = False, 0
        while not done:
            done, _, start = await search_store.search_reindex_step(
                keys, what=what, most=search.REINDEX_STEP, start=start
            )


def archives_idle_before() -> datetime:
    """Rooms last active before this are due: idle for longer than the idle TTL less
    ROOM_ARCHIVE_AHEAD_SECONDS. Every access marks a room's last activity at least once a
    minute and refreshes its keys' TTL, so none of them is in use."""
    idle = int(settings.ROOM_IDLE_TTL_SECONDS) - int(settings.ROOM_ARCHIVE_AHEAD_SECONDS)
    return clock.now() - timedelta(seconds=idle)


def archives_sweep() -> list[str]:
    """Archive every room about to expire, oldest first (the periodic task): the rooms
    archived. Safe to run in several processes at once (each archive locks its row)."""
    cutoff = archives_idle_before()
    due = (
        Room.objects.exclude(status=Room.Status.ARCHIVED)
        .filter(last_active_at__lt=cutoff)
        .order_by("last_active_at")
        .values_list("room_id", flat=True)
    )
    done = []
    for room_id in list(due):
        try:
            move = room_archive(
                room_id,
                actor="system:archive-sweep",
                reason=RoomArchive.Reason.IDLE,
                idle_before=cutoff,
            )
        except Room.DoesNotExist:
            continue  # deleted meanwhile
        except Exception:
            # One room that fails (a store outage, a document the database refuses) must
            # not leave every room behind it to expire: the next sweep tries it again.
            log.exception("archiving idle room %s failed; the next sweep retries it", room_id)
            continue
        if move.status != move.previous:
            done.append(room_id)
    return done
