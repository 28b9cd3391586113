"""Backups: the database's rows and a snapshot of every live room, in one .tar.gz.

One module on purpose: the archive's format is written (backup) and read back (restore)
here, side by side, so the two cannot drift apart; each half is a handful of functions.

What a backup holds (docs/operations.md, "Backup and restore"), in this order:

1. `database.jsonl`: every row an operator needs back, as Django's JSON Lines serializer
   writes it (what `dumpdata --natural-foreign` gives, so it loads on SQLite and Postgres
   alike): users and groups, the admin's log, teams, memberships, keys and every other
   credential as stored (digests; a webhook's signing secret, which the server signs
   with), invites, rooms, room archives, webhooks and their deliveries, the audit log.
   Primary keys are kept: Redis names a room's owner and a cached credential by the row's
   id. Left out (LEFT_OUT): content types and permissions (`migrate` makes them; rows
   refer to them by natural key), sessions (everyone signs in again) and pending Redis
   purges (they are for the Redis the backup does not restore; a restore starts empty).
2. `rooms/<room id>.json`: each live room's state, as `room_export` gives it: one signed
   document (rooms.snapshots), a snapshot taken in one Redis step while the room goes on.
   Rooms are exported and written one at a time, so the backup holds one room's document
   in memory at most; the rows go through a temporary file, never memory.
3. `manifest.json`: when, the service's version, the migration state, the row counts,
   the rooms, and each file's SHA-256.
4. `manifest.sig`, last: `hmac-sha256:<hex>`, the HMAC of manifest.json's exact bytes with
   the deployment's room export key (tenants.imports.export_key, the key the rooms'
   snapshots are signed with). Without it anyone who can write where backups are kept
   could rewrite the rows and recompute the digests; with it, the digests, and through
   them every file, are the deployment's own, and a backup restores only under that key.

Consistency: the rows are read in one database transaction (REPEATABLE READ on Postgres),
so they are one moment of the database; then each room that was live at that moment is
snapshotted, so a room is captured as of its own snapshot, a few moments later than the
rows. A room made after the rows were read is in neither; one deleted meanwhile is listed
as `gone` and left out by the restore.

A restore checks the whole archive first (complete, the manifest's signature, every file as
the manifest says, every room's signature, the migration state; a manifest larger than any
backup writes is refused by its declared size, unread), then loads the rows, only of the
models a backup writes, in one transaction and then puts each room back in Redis through
the import's own signature check.
Nothing is written before the checks pass. The load reads the archive a second time and
hashes each file again as it streams: rows whose bytes differ from the manifest's SHA-256
are rolled back, and a room whose bytes differ is not loaded (the archive changed between
the check and the load). If a room fails after the rows committed, it says which and that
running it again with --force starts over.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.metadata
import io
import json
import os
import re
import tarfile
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from django.apps import apps
from django.core import serializers
from django.core.management.color import no_style
from django.core.serializers.base import DeserializationError
from django.db import DatabaseError, connection, models, transaction
from django.db.migrations.recorder import MigrationRecorder

from rooms import clock, snapshots
from rooms.errors import DomainError
from rooms.keys import RoomKeys
from rooms.schemas import room_id_valid
from rooms.store import bearers as bearers_store
from rooms.store import budgets as budgets_store
from rooms.store import engine as engine_store
from tenants import archives, imports
from tenants.models import ApiKey, Invite, Room, Team

FORMAT = "roomservice.backup"
VERSION = 2  # 2: manifest.sig, the manifest signed with the export key
MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"
# What the manifest's HMAC covers comes after this: never a room document's domain.
SIGNED_DOMAIN = b"roomservice.backup/2\n"
SIGNATURE_BYTES_MAX = 1024
_SIGNATURE_LINE = re.compile(rb"hmac-sha256:([0-9a-f]{64})\n?\Z")
DATABASE = "database.jsonl"
ROOMS_DIR = "rooms/"
CHUNK_BYTES = 256 * 1024
# A manifest is about 150 bytes a room: this holds some 100,000 live rooms. It is read, whole,
# before its signature is checked (manifest.sig comes after it), so it is kept small.
MANIFEST_BYTES_MAX = 16 * 1024 * 1024
ROWS_PER_FETCH = 500
ARCHIVES_PER_FETCH = 1  # an archive's document can be tens of MiB
# Not backed up (module docstring); a restore over rows empties the last two all the same.
LEFT_OUT = ("contenttypes.contenttype", "auth.permission", "sessions.session")
EMPTIED_NOT_KEPT = ("sessions.session", "tenants.pendingpurge")
LEFT_OUT_TOO = ("tenants.pendingpurge",)
CONSISTENCY = (
    "rows: one database transaction; rooms: each live room as of its own snapshot, "
    "taken after the rows"
)

BACKUP_EXISTS = "{path} exists already: nothing was written. Name another file, or pass --force."
BACKUP_NO_FOLDER = "{folder} is not a folder: nothing was written."
BACKUP_MANIFEST_TOO_LARGE = (
    "The manifest of this backup would be {size} bytes, more than a restore reads "
    "({most}; calls.backups.MANIFEST_BYTES_MAX): no backup was written."
)
BACKUP_ROOM_FAILED = (
    "The snapshot of room {room_id} failed ({why}): no backup was written. Check that Redis "
    "is reachable and run the backup again."
)
RESTORE_NO_FILE = "{path} is not a file: nothing was restored."
RESTORE_UNREADABLE = (
    "{path} is not a complete backup archive ({why}): it is truncated or corrupt. Nothing "
    "was restored."
)
RESTORE_NO_MANIFEST = (
    "{path} has no manifest at its end: it was cut short, or it is not a backup made by "
    "`manage.py backup`. Nothing was restored."
)
RESTORE_NOT_OURS = (
    "{path} is not a Roomservice backup of a version this one reads ({why}). Nothing was restored."
)
RESTORE_MODEL_NOT_KEPT = (
    "a row of {label}, which no backup holds (a restore loads only the models a backup writes)"
)
RESTORE_DAMAGED = (
    "{path} does not hold what its manifest lists ({why}): it is corrupt. Nothing was restored."
)
RESTORE_SIGNATURE = (
    "The snapshots of {count} live room(s) in this backup ({rooms}) are not signed with this "
    "deployment's room export key: nothing was restored. A backup is restored with the key "
    "of the deployment that took it: the same ROOM_EXPORT_SIGNING_KEY (with DEBUG off), or, "
    "when it set none, the same VAR_DIR/room-export.key file. Set it and run restore again."
)
RESTORE_MANIFEST_UNSIGNED = (
    "{path} carries no signature of its manifest ({signature}): nothing was restored. "
    "`manage.py backup` signs every backup with this deployment's room export key; without "
    "the signature its rows and digests could have been rewritten by anyone who can write "
    "where it is kept. Restore a backup taken by this version, as written."
)
RESTORE_MANIFEST_KEY = (
    "The manifest of {path} is not signed with this deployment's room export key: nothing "
    "was restored. Either the backup was changed after it was taken (its rows or digests "
    "rewritten), or it was taken by a deployment with another key. A backup is restored "
    "with the key of the deployment that took it: the same ROOM_EXPORT_SIGNING_KEY (with "
    "DEBUG off), or, when it set none, the same VAR_DIR/room-export.key file."
)
RESTORE_CHANGED = (
    "{name} differs from the manifest's SHA-256 on the second read: the archive changed "
    "between the check and the load"
)
RESTORE_NEWER = (
    "This backup was taken at a newer database state than this database's ({migrations}; "
    "backup of version {version}): nothing was restored. Restore it with the version that "
    "took it, or run `manage.py migrate` here first if this version has those migrations."
)
RESTORE_OLDER = (
    "This database is migrated past the backup's state ({migrations}): nothing was "
    "restored. Migrate this (empty) database back to the backup's state first ({commands}), "
    "restore, then run `manage.py migrate`."
)
RESTORE_NOT_EMPTY = (
    "This database already holds rows ({present}): nothing was restored. Restore into an "
    "empty, migrated database, or pass --force to replace them with the backup's."
)
RESTORE_OVERWRITING = (
    "--force: replacing this database's rows ({present}) with the backup's; the live rooms "
    "of the rows replaced leave Redis."
)
RESTORE_ROWS_FAILED = (
    "The backup's rows could not be loaded ({why}): the transaction was rolled back and "
    "nothing was restored."
)
RESTORE_ROOMS_FAILED = (
    "The rows were restored and {done} of {total} live rooms; these were not: {rooms} "
    "({why}). Fix the cause and run restore again with --force: it starts over."
)
RESTORE_REREAD = (
    "{path} could not be read a second time ({why}): was it changed during the restore? "
    "Rows restored: {rows}. Run restore again with --force from a copy nobody writes."
)


class BackupError(DomainError):
    """A backup or a restore that cannot go on; the message says what was (not) written."""

    code = "backup_failed"


# --- What is kept ----------------------------------------------------------------------


def backed_up_models() -> list[type[models.Model]]:
    """Every concrete model whose rows a backup keeps, each after the models its rows refer
    to by natural key (so a restore loads them in this order)."""
    ordered = serializers.sort_dependencies(
        [(config, None) for config in apps.get_app_configs()], allow_cycles=True
    )
    skipped = set(LEFT_OUT) | set(LEFT_OUT_TOO)
    return [
        model
        for model in ordered
        if model._meta.managed and not model._meta.proxy and model._meta.label_lower not in skipped
    ]


def _emptied_models() -> list[type[models.Model]]:
    """What a restore over rows empties: the rows it replaces, and the sessions and purges
    that belonged to them."""
    return [*backed_up_models(), *(apps.get_model(label) for label in EMPTIED_NOT_KEPT)]


def _tables(models_: Iterable[type[models.Model]]) -> list[str]:
    tables: list[str] = []
    for model in models_:
        tables.append(model._meta.db_table)
        for field in model._meta.local_many_to_many:
            through = field.remote_field.through
            if through is not None and through._meta.auto_created:
                tables.append(through._meta.db_table)
    return tables


def service_version() -> str:
    try:
        return importlib.metadata.version("roomservice")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def migration_state() -> dict[str, list[str]]:
    """The migrations applied to this database, by app."""
    state: dict[str, list[str]] = {}
    for app, name in sorted(MigrationRecorder(connection).applied_migrations()):
        state.setdefault(app, []).append(name)
    return state


# --- Backup ----------------------------------------------------------------------------


def backup_write(path: Path, *, force: bool = False) -> dict[str, Any]:
    """Write a backup to `path` (module docstring); its manifest. The archive is written
    beside `path` under a temporary name (owner-only: it holds credentials' digests and
    webhook secrets) and put in place when complete, so a failed backup leaves nothing."""
    if path.exists() and not force:
        raise BackupError(BACKUP_EXISTS.format(path=path))
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise BackupError(BACKUP_NO_FOLDER.format(folder=folder))
    started = clock.now_iso()
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".part")
    partial = Path(temporary)
    try:
        with os.fdopen(fd, "wb") as out:
            with tarfile.open(fileobj=out, mode="w|gz") as tar:
                manifest = _archive_written(tar, started)
            out.flush()
            os.fsync(out.fileno())
        if force:
            os.replace(partial, path)
        else:
            try:
                os.link(partial, path)  # fails, rather than replace, if it appeared meanwhile
            except FileExistsError:
                raise BackupError(BACKUP_EXISTS.format(path=path)) from None
            partial.unlink()
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return manifest


def _archive_written(tar: tarfile.TarFile, started: str) -> dict[str, Any]:
    files: dict[str, str] = {}
    with tempfile.TemporaryFile() as rows:
        counts, live = _rows_dumped(rows)
        files[DATABASE] = _member_added(tar, DATABASE, rows)
    kept: list[str] = []
    gone: list[str] = []
    for room_id in live:
        try:
            document = archives.room_export(room_id)
        except Room.DoesNotExist:
            gone.append(room_id)  # deleted since the rows were read
            continue
        except Exception as exc:  # a store outage: a backup without the room is no backup
            why = exc.message if isinstance(exc, DomainError) else type(exc).__name__
            raise BackupError(BACKUP_ROOM_FAILED.format(room_id=room_id, why=why)) from exc
        name = f"{ROOMS_DIR}{room_id}.json"
        files[name] = _member_added(tar, name, io.BytesIO(document))
        kept.append(room_id)
        del document
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "startedAt": started,
        "finishedAt": clock.now_iso(),
        "serviceVersion": service_version(),
        "databaseVendor": connection.vendor,
        "migrations": migration_state(),
        "counts": {
            "rows": counts,
            "liveRooms": len(kept),
            "archivedRooms": counts.get("tenants.roomarchive", 0),
        },
        "rooms": {"live": kept, "gone": gone},
        "leftOut": [*LEFT_OUT, *LEFT_OUT_TOO],
        "consistency": CONSISTENCY,
        "files": files,
    }
    text = json.dumps(manifest, indent=1, sort_keys=True).encode()
    if len(text) > MANIFEST_BYTES_MAX:  # a restore would refuse it
        raise BackupError(BACKUP_MANIFEST_TOO_LARGE.format(size=len(text), most=MANIFEST_BYTES_MAX))
    _member_added(tar, MANIFEST, io.BytesIO(text))
    _member_added(tar, SIGNATURE, io.BytesIO(manifest_signature(text)))
    return manifest


def manifest_signature(text: bytes) -> bytes:
    """What manifest.sig holds for the manifest's exact bytes `text`: the HMAC-SHA256 with
    this deployment's room export key (module docstring)."""
    mac = hmac.new(imports.export_key(), SIGNED_DOMAIN + text, hashlib.sha256).hexdigest()
    return f"hmac-sha256:{mac}\n".encode()


def _manifest_authentic(text: bytes, signature: bytes) -> bool:
    found = _SIGNATURE_LINE.match(signature)
    if found is None:
        return False
    return hmac.compare_digest(manifest_signature(text).strip(), found.group(0).strip())


def _rows_dumped(out: IO[bytes]) -> tuple[dict[str, int], list[str]]:
    """Every backed-up row into `out` as JSON Lines, read in one transaction (one moment of
    the database); (the rows per model, the rooms that were live at that moment)."""
    counts: dict[str, int] = {}
    text = io.TextIOWrapper(out, encoding="utf-8", newline="\n")
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # the transaction's first statement
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        for model in backed_up_models():
            label = model._meta.label_lower
            per_fetch = ARCHIVES_PER_FETCH if label == "tenants.roomarchive" else ROWS_PER_FETCH
            rows = model._base_manager.order_by("pk").iterator(chunk_size=per_fetch)
            counted = Counter[str]()
            serializers.serialize(
                "jsonl",
                _counted(rows, counted),
                stream=text,
                use_natural_foreign_keys=True,
                use_natural_primary_keys=False,
            )
            counts[label] = counted["rows"]
        live = list(
            Room.objects.exclude(status=Room.Status.ARCHIVED)
            .order_by("room_id")
            .values_list("room_id", flat=True)
        )
    text.flush()
    text.detach()
    return counts, live


def _counted(rows: Iterator[models.Model], counted: Counter[str]) -> Iterator[models.Model]:
    for row in rows:
        counted["rows"] += 1
        yield row


def _member_added(tar: tarfile.TarFile, name: str, data: IO[bytes]) -> str:
    """`data` (from its start) as the file `name` of the archive; its SHA-256."""
    digest = hashlib.sha256()
    data.seek(0)
    while chunk := data.read(CHUNK_BYTES):
        digest.update(chunk)
    info = tarfile.TarInfo(name)
    info.size = data.tell()
    info.mtime = int(clock.now().timestamp())
    info.mode = 0o600
    data.seek(0)
    tar.addfile(info, data)
    return digest.hexdigest()


# --- Restore ---------------------------------------------------------------------------


def backup_check(path: Path) -> dict[str, Any]:
    """Read the whole archive once before anything is written: complete, the manifest signed
    with this deployment's export key, every file the manifest lists and as it lists it,
    every room signed with that key. Its manifest, or BackupError saying what is wrong."""
    if not path.is_file():
        raise BackupError(RESTORE_NO_FILE.format(path=path))
    key = imports.export_key()
    seen: dict[str, str] = {}
    unsigned: list[str] = []
    text: bytes | None = None
    signature: bytes | None = None
    try:
        with _opened(path) as tar:
            for member in tar:
                if signature is not None or (text is not None and member.name != SIGNATURE):
                    raise BackupError(RESTORE_DAMAGED.format(path=path, why="files follow it"))
                if not seen and member.name != DATABASE:
                    raise BackupError(
                        RESTORE_DAMAGED.format(path=path, why=f"it does not open with {DATABASE}")
                    )
                room_id = _member_room(member.name)
                known = member.name in (MANIFEST, DATABASE) or room_id is not None
                known = known or (member.name == SIGNATURE and text is not None)
                data = tar.extractfile(member) if member.isfile() else None
                if data is None or not known or member.name in seen:
                    raise BackupError(
                        RESTORE_DAMAGED.format(path=path, why=f"unexpected entry {member.name!r}")
                    )
                if member.name == MANIFEST:
                    # Refused by its declared size before a byte of it is read (a member is
                    # never read past its declared size).
                    if member.size > MANIFEST_BYTES_MAX:
                        why = f"its manifest is larger than {MANIFEST_BYTES_MAX} bytes"
                        raise BackupError(RESTORE_NOT_OURS.format(path=path, why=why))
                    text = data.read()
                    continue
                if member.name == SIGNATURE:
                    signature = data.read(SIGNATURE_BYTES_MAX + 1)
                    continue
                digest = hashlib.sha256()
                check = snapshots.BodyCheck(key)
                while chunk := data.read(CHUNK_BYTES):
                    digest.update(chunk)
                    if room_id is not None:
                        check.update(chunk)
                seen[member.name] = digest.hexdigest()
                if room_id is not None:
                    try:
                        check.verified()
                    except DomainError:
                        unsigned.append(room_id)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise BackupError(RESTORE_UNREADABLE.format(path=path, why=_why(exc))) from None
    if text is None:
        raise BackupError(RESTORE_NO_MANIFEST.format(path=path))
    # Nothing the manifest says is believed (not even parsed) before its signature matched.
    if signature is None:
        raise BackupError(RESTORE_MANIFEST_UNSIGNED.format(path=path, signature=SIGNATURE))
    if not _manifest_authentic(text, signature):
        raise BackupError(RESTORE_MANIFEST_KEY.format(path=path))
    manifest = _manifest_parsed(path, text)
    if manifest["files"] != seen:
        listed, found = set(manifest["files"]), set(seen)
        why = (
            f"{len(listed - found)} listed file(s) missing, {len(found - listed)} unlisted"
            if listed != found
            else "a file's SHA-256 differs"
        )
        raise BackupError(RESTORE_DAMAGED.format(path=path, why=why))
    if unsigned:
        shown = ", ".join(unsigned[:5]) + (", ..." if len(unsigned) > 5 else "")
        raise BackupError(RESTORE_SIGNATURE.format(count=len(unsigned), rooms=shown))
    return dict(manifest)


def _opened(path: Path) -> tarfile.TarFile:
    """The archive at `path`, read as a stream (each of a restore's two reads opens it)."""
    return tarfile.open(path, mode="r|gz")


class _Hashed:
    """A file of the archive as it is read, by chunks or by lines, hashed on the way: the
    load's second read is checked against the manifest without being read twice."""

    def __init__(self, data: IO[bytes]) -> None:
        self._data = data
        self._digest = hashlib.sha256()

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._data.read(size)
        self._digest.update(chunk)
        return chunk

    def __iter__(self) -> Iterator[bytes]:
        for line in self._data:
            self._digest.update(line)
            yield line

    def matches(self, expected: object) -> bool:
        """Whether the whole file (the rest read now) has the SHA-256 `expected`."""
        while chunk := self._data.read(CHUNK_BYTES):
            self._digest.update(chunk)
        return isinstance(expected, str) and hmac.compare_digest(self._digest.hexdigest(), expected)


def _member_room(name: str) -> str | None:
    """The room id of a room's file name, None for any other name."""
    if not (name.startswith(ROOMS_DIR) and name.endswith(".json")):
        return None
    room_id = name[len(ROOMS_DIR) : -len(".json")]
    return room_id if room_id_valid(room_id) else None


def _manifest_parsed(path: Path, text: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(text)
    except ValueError:
        raise BackupError(
            RESTORE_NOT_OURS.format(path=path, why="its manifest is not JSON")
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(RESTORE_NOT_OURS.format(path=path, why=f'not a "{FORMAT}" manifest'))
    if manifest.get("version") != VERSION:
        why = f"backup format version {manifest.get('version')!r}; this one reads {VERSION}"
        raise BackupError(RESTORE_NOT_OURS.format(path=path, why=why))
    shapes = {"files": dict, "migrations": dict, "counts": dict, "rooms": dict}
    for field, kind in shapes.items():
        if not isinstance(manifest.get(field), kind):
            raise BackupError(RESTORE_NOT_OURS.format(path=path, why=f"no {field} in it"))
    return manifest


def migrations_checked(manifest: dict[str, Any]) -> None:
    """The backup's rows fit this database only at the same migration state."""
    theirs = {(app, name) for app, names in manifest["migrations"].items() for name in names}
    ours = {(app, name) for app, names in migration_state().items() for name in names}
    if theirs - ours:
        shown = ", ".join(f"{a}.{n}" for a, n in sorted(theirs - ours)[:5])
        version = manifest.get("serviceVersion", "unknown")
        raise BackupError(RESTORE_NEWER.format(migrations=shown, version=version))
    if ours - theirs:
        shown = ", ".join(f"{a}.{n}" for a, n in sorted(ours - theirs)[:5])
        apps_past = sorted({app for app, _ in ours - theirs})
        commands = "; ".join(
            f"manage.py migrate {app} {(manifest['migrations'].get(app) or ['zero'])[-1]}"
            for app in apps_past
        )
        raise BackupError(RESTORE_OLDER.format(migrations=shown, commands=commands))


def rows_present() -> dict[str, int]:
    """The rows a restore would replace, per model, those with any."""
    present = {}
    for model in backed_up_models():
        count = model._base_manager.count()
        if count:
            present[model._meta.label_lower] = count
    return present


def _described(present: dict[str, int]) -> str:
    return ", ".join(f"{count} {label}" for label, count in present.items())


def backup_restore(
    path: Path, *, force: bool = False, say: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """Restore the backup at `path` into this database and Redis (module docstring): its
    manifest. Over a database holding rows only with `force`, which replaces them."""
    manifest = backup_check(path)
    migrations_checked(manifest)
    present = rows_present()
    if present and not force:
        raise BackupError(RESTORE_NOT_EMPTY.format(present=_described(present)))
    replaced: list[str] = []
    teams_before: set[int] = set()
    digests_before: set[str] = set()
    if present:
        say(RESTORE_OVERWRITING.format(present=_described(present)))
        replaced = list(Room.objects.values_list("room_id", flat=True))
        teams_before = set(Team.objects.values_list("pk", flat=True))
        digests_before = _bearer_digests()
    live = list(manifest["rooms"].get("live", []))
    try:
        _archive_loaded(path, manifest, live, replace=bool(present), replaced=replaced)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:  # changed since checked
        raise BackupError(
            RESTORE_REREAD.format(path=path, why=_why(exc), rows=Room.objects.exists())
        ) from None
    # Every process's cached callers and room answers of the teams before and after are
    # stale: a replaced team's key must not go on authenticating from a cache.
    for team_id in sorted(teams_before | set(Team.objects.values_list("pk", flat=True))):
        engine_store.run_sync(budgets_store.team_epoch_bump, team_id)
    # Redis's shared cache of keys and invites, by digest: what it holds answered for rows
    # that may be gone or different now.
    engine_store.run_sync(bearers_store.bearers_forget, sorted(digests_before | _bearer_digests()))
    return manifest


def _archive_loaded(
    path: Path, manifest: dict[str, Any], live: list[str], *, replace: bool, replaced: list[str]
) -> None:
    """The second read of a checked archive: the rows, then each live room, each file hashed
    again as it streams and refused when it is not what the (signed) manifest says: the
    rows before their transaction commits, a room before it is put in Redis."""
    loaded: set[str] = set()
    expected = set(live)
    rows_loaded = False
    files = manifest["files"]

    def rooms_failed(why: str) -> BackupError:
        rest = [room_id for room_id in live if room_id not in loaded]
        shown = ", ".join(rest[:5]) + (", ..." if len(rest) > 5 else "")
        return BackupError(
            RESTORE_ROOMS_FAILED.format(done=len(loaded), total=len(live), rooms=shown, why=why)
        )

    with _opened(path) as tar:
        for member in tar:
            data = tar.extractfile(member)
            if data is None or member.name in (MANIFEST, SIGNATURE):
                continue  # the manifest was checked and is held; it changes nothing now
            if not rows_loaded and member.name != DATABASE:
                why = RESTORE_CHANGED.format(name=f"{member.name!r}, before {DATABASE},")
                raise BackupError(RESTORE_ROWS_FAILED.format(why=why))
            if member.name == DATABASE:
                if rows_loaded:
                    raise rooms_failed(RESTORE_CHANGED.format(name=f"a second {DATABASE}"))
                _rows_loaded(_Hashed(data), manifest, replace=replace)
                rows_loaded = True
                for old in replaced:  # their Redis keys belong to rows no longer there
                    engine_store.run_sync(bearers_store.room_forget, RoomKeys(old))
                continue
            room_id = _member_room(member.name)
            if room_id is None or room_id not in expected or room_id in loaded:
                raise rooms_failed(RESTORE_CHANGED.format(name=repr(member.name)))
            try:
                _room_loaded(room_id, _Hashed(data), member.size, files.get(member.name))
            except Exception as exc:
                raise rooms_failed(
                    exc.message if isinstance(exc, DomainError) else _why(exc)
                ) from exc
            loaded.add(room_id)
    if not rows_loaded:
        why = RESTORE_CHANGED.format(name=DATABASE)
        raise BackupError(RESTORE_ROWS_FAILED.format(why=why))
    if len(loaded) < len(live):
        raise rooms_failed(RESTORE_CHANGED.format(name="the rooms' files (some are missing)"))


def _bearer_digests() -> set[str]:
    return set(ApiKey.objects.values_list("digest", flat=True)) | set(
        Invite.objects.values_list("digest", flat=True)
    )


def _why(exc: BaseException) -> str:
    """An exception's first line, for a message (never a traceback)."""
    text = str(exc).strip()
    return (text.splitlines()[0][:300] if text else "") or type(exc).__name__


def _rows_loaded(data: _Hashed, manifest: dict[str, Any], *, replace: bool) -> None:
    """The backup's rows, in one transaction: all of them, or (rolled back) none; none
    unless their bytes, hashed as they were read, are the ones the manifest lists."""
    kept = backed_up_models()
    # Only what a backup writes is loaded, whatever the (signed) rows name: never a
    # session, a permission or a content type (LEFT_OUT), nor a model of no backup.
    allowed = {model._meta.label_lower for model in kept}
    counted: Counter[str] = Counter()
    try:
        with transaction.atomic():
            if replace:
                statements = connection.ops.sql_flush(
                    no_style(), _tables(_emptied_models()), reset_sequences=True
                )
                with connection.cursor() as cursor:
                    for sql in statements:
                        cursor.execute(sql)
            with connection.constraint_checks_disabled():
                # A line at a time (json.loads takes the bytes): one row in memory at most.
                for row in serializers.deserialize("jsonl", data):
                    label = row.object._meta.label_lower
                    if label not in allowed:
                        raise BackupError(RESTORE_MODEL_NOT_KEPT.format(label=label))
                    row.save()
                    counted[label] += 1
            if not data.matches(manifest["files"].get(DATABASE)):
                raise BackupError(RESTORE_CHANGED.format(name=DATABASE))
            connection.check_constraints(table_names=[m._meta.db_table for m in kept])
            with connection.cursor() as cursor:
                for sql in connection.ops.sequence_reset_sql(no_style(), kept):
                    cursor.execute(sql)
            expected = {k: v for k, v in manifest["counts"]["rows"].items() if v}
            if dict(counted) != expected:
                raise BackupError("the rows differ from the manifest's counts")
            gone = manifest["rooms"].get("gone", [])
            if gone:  # deleted while the backup ran: as they would be now
                Room.objects.filter(room_id__in=gone).delete()
    except (DeserializationError, DatabaseError, BackupError, ValueError) as exc:
        why = exc.message if isinstance(exc, BackupError) else _why(exc)
        raise BackupError(RESTORE_ROWS_FAILED.format(why=why)) from None


def _room_loaded(room_id: str, data: _Hashed, size: int, digest: object) -> None:
    """One live room back in Redis from its snapshot, through the import's signature check,
    and only when its bytes, hashed as they were spooled, are the ones the manifest lists."""
    room = Room.objects.get(room_id=room_id)
    with imports.spooled(data, most=size) as body:
        if not data.matches(digest):
            raise BackupError(RESTORE_CHANGED.format(name=f"{ROOMS_DIR}{room_id}.json"))
        archives.room_snapshot_load(room, body)
