"""Room imports bounded before they are trusted, and the key that signs exports.

An import is read in chunks into a bounded spool (a SpooledTemporaryFile: SPOOL_MEMORY
bytes in memory, the rest on disk) while its signature is checked over the bytes
(rooms.snapshots.BodyCheck); nothing is parsed before the signature matched, and a body
over ROOM_IMPORT_BYTES_MAX is refused (413) as soon as it is passed, never read whole.
(config/import_guard.py does the same in front of Django's ASGI handler, which would
otherwise read the whole body before the view.) Then the document is read a line at a time
(rooms.snapshots.document_read).

Imports are few and heavy, so they are rationed: one at a time per team (a Redis mark,
429 with Retry-After) and ROOM_IMPORTS_PER_PROCESS at a time per process (503 with
Retry-After). docs/durable-rooms.md has the measured cost.

The export key: ROOM_EXPORT_SIGNING_KEY when it is set and DEBUG is off (production);
otherwise a random key made once per deployment and kept in VAR_DIR/room-export.key (every
web worker of the deployment reads the same file; it survives restarts). Never the
SECRET_KEY: a key of its own, so that a document signed before the SECRET_KEY was
generated per install (it was once a published development key) is never taken.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, Protocol, TypeVar

from django import db
from django.conf import settings

from config.kept_secret import kept_secret
from rooms import scripts, snapshots
from rooms.errors import DomainError
from rooms.keys import prefix
from rooms.store import connections as connections_store
from rooms.store import engine as engine_store

T = TypeVar("T")
CHUNK_BYTES = 256 * 1024
SPOOL_MEMORY = 1024 * 1024
KEY_FILE = "room-export.key"
TEAM_MARK_SECONDS = 600  # a crashed import's mark lapses after this
RETRY_AFTER_SECONDS = 5
# An import's share of a core (Pacer): 1 ms of work, then 1 ms of rest.
PACE_WORK_SECONDS = 0.001
PACE_REST_SECONDS = 0.004
SWITCH_SECONDS = 0.0005
NICE = 10  # the import's thread yields the CPU to the server's own threads and to Redis

IMPORT_TOO_LARGE = (
    "This room document is larger than this server imports ({most} bytes; "
    "ROOM_IMPORT_BYTES_MAX): nothing was read past that. Export a smaller room, or ask the "
    "operator."
)
IMPORT_TEAM_BUSY = (
    "Your team is importing another room right now; imports run one at a time per team. "
    "Retry after {seconds} seconds."
)
IMPORTS_FULL = (
    "This server is importing as many rooms as it takes at once. Retry after {seconds} seconds."
)


class ImportTooLargeError(DomainError):
    status = 413
    code = "payload_too_large"


class ImportBusyError(DomainError):
    """The team's one import at a time is in use."""

    status = 429
    code = "import_busy"

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(RETRY_AFTER_SECONDS)}


class ImportsFullError(DomainError):
    """The process imports as many rooms as it may at once."""

    status = 503
    code = "imports_full"

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(RETRY_AFTER_SECONDS)}


# --- The export key ------------------------------------------------------------------------

_key_lock = threading.Lock()
_key_cache: dict[Path, bytes] = {}


def export_key() -> bytes:
    """The key that signs exports and checks imports (module docstring)."""
    explicit = str(settings.ROOM_EXPORT_SIGNING_KEY or "")
    if explicit and not settings.DEBUG:
        return explicit.encode()
    return deployment_key(Path(settings.VAR_DIR))


def deployment_key(var_dir: Path) -> bytes:
    """The deployment's own random export key, made on first use and kept in VAR_DIR
    (config.kept_secret: of several workers starting at once one makes it, every one
    reads that one); read once per process."""
    path = var_dir / KEY_FILE
    with _key_lock:
        if path not in _key_cache:
            _key_cache[path] = kept_secret(path).encode()
        return _key_cache[path]


def legacy_keys() -> list[bytes]:
    """What may have signed a version 1 document this deployment exported: its explicit
    key, or in production its SECRET_KEY (required there, so never the published one)."""
    keys = []
    if settings.ROOM_EXPORT_SIGNING_KEY and not settings.DEBUG:
        keys.append(str(settings.ROOM_EXPORT_SIGNING_KEY).encode())
    if settings.PRODUCTION and not settings.DEBUG:
        keys.append(str(settings.SECRET_KEY).encode())
    return keys


# --- The body: bounded, then checked, then read --------------------------------------------


class Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


@dataclass(frozen=True)
class SignedBody:
    """An import's bytes whose signature matched; only `body_spooled` makes one."""

    spool: IO[bytes]
    size: int

    def lines(self) -> Iterator[bytes]:
        self.spool.seek(0)
        yield from self.spool


def body_spooled(stream: Readable, *, most: int | None = None) -> SignedBody:
    """`stream` read in chunks into a spool while its signature is checked: 413 as soon as
    it passes `most` (ROOM_IMPORT_BYTES_MAX), 400 when its signature does not match. The
    caller closes the spool (`spooled` does)."""
    limit = int(settings.ROOM_IMPORT_BYTES_MAX) if most is None else most
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)  # noqa: SIM115  # returned
    check = snapshots.BodyCheck(export_key())
    try:
        while chunk := stream.read(CHUNK_BYTES):
            if check.size + len(chunk) > limit:
                raise ImportTooLargeError(IMPORT_TOO_LARGE.format(most=limit))
            check.update(chunk)
            spool.write(chunk)
        check.verified()
    except BaseException:
        spool.close()
        raise
    return SignedBody(spool, check.size)


@contextlib.contextmanager
def spooled(stream: Readable, *, most: int | None = None) -> Iterator[SignedBody]:
    body = body_spooled(stream, most=most)
    try:
        yield body
    finally:
        body.spool.close()


# --- Rationing ---------------------------------------------------------------------------


class Pacer:
    """Called often by an import's CPU-bound steps: after each `work` seconds of them it
    sleeps `rest` seconds, so the import takes at most work / (work + rest) of a core and,
    above all, lets go of the GIL often: the requests the same process serves meanwhile
    wait for it at most `work`, not the interpreter's 5 ms switch interval."""

    def __init__(self, work: float = PACE_WORK_SECONDS, rest: float = PACE_REST_SECONDS) -> None:
        self.work, self.rest = work, rest
        self.since = time.perf_counter()

    def __call__(self) -> None:
        if time.perf_counter() - self.since >= self.work:
            time.sleep(self.rest)
            self.since = time.perf_counter()


_process_lock = threading.Lock()
_process_running = 0


@contextlib.contextmanager
def process_slot() -> Iterator[None]:
    """One of the process's ROOM_IMPORTS_PER_PROCESS imports at a time, or 503."""
    global _process_running
    with _process_lock:
        if _process_running >= int(settings.ROOM_IMPORTS_PER_PROCESS):
            raise ImportsFullError(IMPORTS_FULL.format(seconds=RETRY_AFTER_SECONDS))
        _process_running += 1
    try:
        yield
    finally:
        with _process_lock:
            _process_running -= 1


_switch_lock = threading.Lock()
_switch_users = 0
_switch_before = 0.005


@contextlib.contextmanager
def _switching_often() -> Iterator[None]:
    """While an import runs, the interpreter hands the GIL over every SWITCH_SECONDS rather
    than every 5 ms: the server's event loop, waiting for it to answer another tenant,
    waits that long at most (bench section imports measures the difference)."""
    global _switch_users, _switch_before
    with _switch_lock:
        if _switch_users == 0:
            _switch_before = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_SECONDS)
        _switch_users += 1
    try:
        yield
    finally:
        with _switch_lock:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_before)


def off_loop(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn` run in a thread of its own, waited for: its store steps (an import's load: tens
    of thousands of writes) run on an event loop of their own (rooms.store.engine.run_sync from
    plain sync code), not on the server's, where they would queue between other tenants'
    calls. Its database connection is closed when it is done."""
    out: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            with contextlib.suppress(OSError, AttributeError):  # Linux: a thread's own nice
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
            out.append(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller
            failed.append(exc)
        finally:
            db.connection.close()

    worker = threading.Thread(target=run, name="room-import")
    with _switching_often():
        worker.start()
        worker.join()
    if failed:
        raise failed[0]
    return out[0]


def team_mark(team_id: int) -> str:
    """String with an expiry: the team has an import running (its token)."""
    return f"{prefix()}:{{team:{team_id}}}:importing"


async def _mark_take(team_id: int, token: str) -> bool:
    return bool(
        await connections_store.client().set(
            team_mark(team_id), token, nx=True, ex=TEAM_MARK_SECONDS
        )
    )


# Releasing the team's mark (imports/release_mark.lua): it was this import's, or it lapsed
# (TEAM_MARK_SECONDS) and may be another's now.
MarkRelease = Literal["released", "not_ours"]


async def _mark_release(team_id: int, token: str) -> bool:
    """Whether the mark was still this import's (`token`), and is gone now."""
    res = await engine_store.run(scripts.RELEASE_MARK_SCRIPT, [team_mark(team_id)], [token])
    released: MarkRelease = engine_store.named(res, MarkRelease)
    return released == "released"


@contextlib.contextmanager
def team_slot(team_id: int) -> Iterator[None]:
    """The team's one import at a time, or 429."""
    token = secrets.token_hex(8)
    if not engine_store.run_sync(_mark_take, team_id, token):
        raise ImportBusyError(IMPORT_TEAM_BUSY.format(seconds=RETRY_AFTER_SECONDS))
    try:
        yield
    finally:
        engine_store.run_sync(_mark_release, team_id, token)
