"""`manage.py backup` and `restore` (calls.backups): the rows and every live room come
back exactly, each room with its own team; the same keys authenticate; an archived room is
still archived and restorable. And the refusals: an existing file, a truncated or damaged
archive, a database that holds rows, another deployment's export key, a manifest rewritten
or unsigned, an archive changed between the check and the load."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from calls import backups
from rooms import errors, keys
from tenants import auth, services
from tenants.access import caches_clear as access_caches_clear
from tenants.access import room_access
from tenants.capabilities import Caller
from tenants.db import db_run
from tenants.models import Room, RoomArchive, Team
from tests.rooms.test_archives import READS, answers, call, comparable, furnish

pytestmark = [pytest.mark.anyio, pytest.mark.store]


def _team_with_key(slug: str) -> tuple[int, str]:
    team = services.team_create(slug=slug)
    return team.pk, services.api_key_create(team=team, name=f"{slug} agent").secret


async def _caller(secret: str) -> Caller | None:
    return await auth.caller_resolve(auth.bearer_from_header(f"Bearer {secret}"))


def _wipe(sync_redis: redis.Redis) -> None:
    """An empty database (migrated: flush keeps the schema and makes the content types
    again) and an empty Redis (this run's keys), and no process cache of either."""
    call_command("flush", interactive=False, verbosity=0)
    for key in sync_redis.scan_iter(match=f"{keys.prefix()}:*", count=1000):
        sync_redis.delete(key)
    auth.caches_clear()
    access_caches_clear()


def _backup(path: Path, *extra: str) -> str:
    out = io.StringIO()
    call_command("backup", str(path), *extra, stdout=out)
    return out.getvalue()


def _restore(path: Path, *extra: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("restore", str(path), *extra, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def _manifest(path: Path) -> dict[str, Any]:
    with tarfile.open(path, "r:gz") as tar:
        member = tar.extractfile(MANIFEST_NAME)
        assert member is not None
        return dict(json.loads(member.read()))


MANIFEST_NAME = backups.MANIFEST


def _members(path: Path) -> dict[str, bytes]:
    """An archive's files, in their order."""
    with tarfile.open(path, "r:gz") as tar:
        members = {}
        for member in tar.getmembers():
            data = tar.extractfile(member)
            assert data is not None
            members[member.name] = data.read()
        return members


def _archived(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))


def _forged(
    members: dict[str, bytes], edit: Callable[[dict[str, Any]], None] = lambda _: None
) -> dict[str, bytes]:
    """What someone who can write the archive but has no export key makes of it: the
    manifest's digests recomputed over the files as they are now (and `edit`ed), and the
    old signature kept."""
    manifest = json.loads(members[backups.MANIFEST])
    manifest["files"] = {
        name: hashlib.sha256(body).hexdigest()
        for name, body in members.items()
        if name not in (backups.MANIFEST, backups.SIGNATURE)
    }
    edit(manifest)
    text = json.dumps(manifest, indent=1, sort_keys=True).encode()
    return {**members, backups.MANIFEST: text, backups.SIGNATURE: members[backups.SIGNATURE]}


def _resigned(members: dict[str, bytes]) -> dict[str, bytes]:
    """The same, signed with this deployment's export key (what only the deployment can)."""
    text = members[backups.MANIFEST]
    return {**members, backups.SIGNATURE: backups.manifest_signature(text)}


MALLORY = {
    "model": "auth.user",
    "pk": 4242,
    "fields": {
        "password": "!",
        "last_login": None,
        "is_superuser": True,
        "username": "mallory",
        "first_name": "",
        "last_name": "",
        "email": "mallory@example.com",
        "is_staff": True,
        "is_active": True,
        "date_joined": "2024-01-01T00:00:00Z",
        "groups": [],
        "user_permissions": [],
    },
}


def _with_mallory(rows: bytes) -> bytes:
    return rows + json.dumps(MALLORY).encode() + b"\n"


def _mallory_counted(manifest: dict[str, Any]) -> None:
    counts = manifest["counts"]["rows"]
    counts["auth.user"] = counts.get("auth.user", 0) + 1


def _users() -> list[str]:
    from django.contrib.auth import get_user_model

    return list(get_user_model()._base_manager.values_list("username", flat=True))


def _row_counts() -> dict[str, int]:
    return {
        model._meta.label_lower: model._base_manager.count() for model in backups.backed_up_models()
    }


async def test_a_backup_restores_rows_and_rooms_exactly_each_with_its_team(
    tmp_path: Path, sync_redis: redis.Redis, redis_client_closed: None
) -> None:
    a_id, a_secret = await db_run(_team_with_key, "backup-a")
    b_id, b_secret = await db_run(_team_with_key, "backup-b")
    team_a, team_b = await _caller(a_secret), await _caller(b_secret)
    assert team_a is not None and team_b is not None
    live_a, old_a, live_b = "bk-a-live", "bk-a-archived", "bk-b-live"
    for caller, room_id in ((team_a, live_a), (team_a, old_a), (team_b, live_b)):
        await room_access(caller, room_id, write=True)
    made = {
        room_id: await furnish(caller, room_id)
        for caller, room_id in ((team_a, live_a), (team_a, old_a), (team_b, live_b))
    }
    await call(team_a, old_a, "set_room_status", status="archived")
    before = {
        live_a: await answers(team_a, live_a, made[live_a]),
        live_b: await answers(team_b, live_b, made[live_b]),
    }
    archived_plan = await call(team_a, old_a, "read_plan")

    path = tmp_path / "roomservice.tar.gz"
    said = await db_run(_backup, path)
    assert "2 live rooms, 1 archived rooms" in said
    manifest = _manifest(path)
    counts_before = await db_run(_row_counts)
    assert manifest["counts"]["rows"] == counts_before
    assert manifest["rooms"] == {"live": sorted([live_a, live_b]), "gone": []}
    assert manifest["migrations"]["tenants"] and manifest["serviceVersion"]
    assert path.stat().st_mode & 0o077 == 0, "the archive holds credentials: owner only"

    await db_run(_wipe, sync_redis)
    assert await _caller(a_secret) is None, "wiped: the key is unknown"
    assert not await db_run(lambda: Team.objects.exists())

    said = await db_run(_restore, path)
    assert "2 live rooms, 1 archived rooms" in said
    assert await db_run(_row_counts) == manifest["counts"]["rows"]

    # The same keys authenticate, as the same teams.
    again_a, again_b = await _caller(a_secret), await _caller(b_secret)
    assert again_a is not None and again_b is not None
    assert (again_a.team_id, again_b.team_id) == (a_id, b_id)
    # Each room with its own team, in the database and in Redis (the access check).
    owners = await db_run(lambda: dict(Room.objects.values_list("room_id", "team__slug")))
    assert owners == {live_a: "backup-a", old_a: "backup-a", live_b: "backup-b"}
    for stranger, room_id in ((again_b, live_a), (again_b, old_a), (again_a, live_b)):
        with pytest.raises(errors.RoomAccessError):
            await call(stranger, room_id, "read_plan")
    # The live rooms read back the same through the tools, log and cursors included.
    for caller, room_id in ((again_a, live_a), (again_b, live_b)):
        after = await answers(caller, room_id, made[room_id])
        for name, _ in READS:
            assert comparable(name, after[name]) == comparable(name, before[room_id][name]), (
                room_id,
                name,
            )
    # The archived room is still archived, reads from its archive, and restores.
    assert await db_run(lambda: Room.objects.get(room_id=old_a).status) == "archived"
    assert await db_run(lambda: RoomArchive.objects.filter(room__room_id=old_a).exists())
    assert await call(again_a, old_a, "read_plan") == archived_plan
    moved = await call(again_a, old_a, "set_room_status", status="active")
    assert moved["previousStatus"] == "archived"
    assert await call(again_a, old_a, "read_plan") == archived_plan
    # New writes go on after the restored ones.
    task = await call(again_a, live_a, "add_task", title="after the restore")
    assert task["title"] == "after the restore"


def _two_rows() -> None:
    _team_with_key("backup-one")
    _team_with_key("backup-two")


async def test_an_existing_file_is_refused_unless_forced(
    tmp_path: Path, redis_client_closed: None
) -> None:
    await db_run(_two_rows)
    path = tmp_path / "kept.tar.gz"
    path.write_bytes(b"an earlier backup")
    with pytest.raises(CommandError, match="exists already: nothing was written"):
        await db_run(_backup, path)
    assert path.read_bytes() == b"an earlier backup"
    await db_run(_backup, path, "--force")
    assert _manifest(path)["counts"]["rows"]["tenants.team"] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["kept.tar.gz"], "no temporary file left"


async def test_a_truncated_or_damaged_archive_restores_nothing(
    tmp_path: Path, sync_redis: redis.Redis, redis_client_closed: None
) -> None:
    await db_run(_two_rows)
    team = await _caller(await db_run(lambda: _team_with_key("backup-rooms")[1]))
    assert team is not None
    await call(team, "bk-trunc", "add_task", title="kept")
    path = tmp_path / "whole.tar.gz"
    await db_run(_backup, path)
    await db_run(_wipe, sync_redis)

    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CommandError, match=r"truncated or corrupt\. Nothing was restored"):
        await db_run(_restore, cut)

    # Whole as gzip, but a room's document changed inside it: its digest differs.
    changed = tmp_path / "changed.tar.gz"
    with tarfile.open(path, "r:gz") as src, tarfile.open(changed, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member)
            assert data is not None
            body = data.read()
            if member.name.startswith("rooms/"):
                body = body.replace(b"kept", b"KEPT")
            dst.addfile(member, io.BytesIO(body))
    with pytest.raises(CommandError, match="does not hold what its manifest lists"):
        await db_run(_restore, changed)

    # Not a gzip at all.
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(gzip.compress(b"not a tar") + b"trailing")
    with pytest.raises(CommandError, match="Nothing was restored"):
        await db_run(_restore, junk)
    assert not await db_run(lambda: Team.objects.exists()), "nothing was written"
    assert not list(sync_redis.scan_iter(match=f"{keys.prefix()}:{{bk-trunc}}:*"))

    # The whole one still restores.
    await db_run(_restore, path)
    assert [t["title"] for t in (await call(team, "bk-trunc", "read_plan"))["tasks"]] == ["kept"]


async def test_restoring_over_rows_is_refused_unless_forced_and_says_what_it_replaces(
    tmp_path: Path, sync_redis: redis.Redis, redis_client_closed: None
) -> None:
    _, secret = await db_run(_team_with_key, "backup-first")
    first = await _caller(secret)
    assert first is not None
    await call(first, "bk-first", "add_task", title="from the backup")
    path = tmp_path / "first.tar.gz"
    await db_run(_backup, path)
    # Later: another team and room, and the first room changed.
    _, later_secret = await db_run(_team_with_key, "backup-later")
    later = await _caller(later_secret)
    assert later is not None
    await call(later, "bk-later", "add_task", title="after the backup")
    await call(first, "bk-first", "add_task", title="also after")

    with pytest.raises(CommandError, match=r"already holds rows .*2 tenants\.team") as refused:
        await db_run(_restore, path)
    assert "--force" in str(refused.value)
    assert await db_run(lambda: Team.objects.count()) == 2, "nothing was replaced"

    said = await db_run(_restore, path, "--force")
    assert "--force: replacing this database's rows (2 tenants.team" in said
    auth.caches_clear()
    access_caches_clear()
    assert await db_run(lambda: list(Team.objects.values_list("slug", flat=True))) == [
        "backup-first"
    ]
    assert await _caller(later_secret) is None
    assert not list(sync_redis.scan_iter(match=f"{keys.prefix()}:{{bk-later}}:*"))
    plan = await call(first, "bk-first", "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["from the backup"]


async def test_another_deployments_export_key_is_named_and_nothing_is_restored(
    tmp_path: Path, sync_redis: redis.Redis, settings: Any, redis_client_closed: None
) -> None:
    settings.DEBUG = False
    settings.ROOM_EXPORT_SIGNING_KEY = "a" * 40
    _, secret = await db_run(_team_with_key, "backup-signed")
    team = await _caller(secret)
    assert team is not None
    await call(team, "bk-signed", "add_task", title="signed")
    path = tmp_path / "signed.tar.gz"
    await db_run(_backup, path)
    await db_run(_wipe, sync_redis)

    settings.ROOM_EXPORT_SIGNING_KEY = "b" * 40
    with pytest.raises(CommandError, match="not signed with this deployment's room export key"):
        await db_run(_restore, path)
    assert not await db_run(lambda: Team.objects.exists())

    settings.ROOM_EXPORT_SIGNING_KEY = "a" * 40
    await db_run(_restore, path)
    plan = await call(team, "bk-signed", "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["signed"]


async def test_a_backup_from_a_newer_migration_state_is_refused(
    tmp_path: Path, redis_client_closed: None
) -> None:
    await db_run(_two_rows)
    path = tmp_path / "newer.tar.gz"
    await db_run(_backup, path)
    newer = tmp_path / "newer-edited.tar.gz"

    def future(manifest: dict[str, Any]) -> None:
        manifest["migrations"]["tenants"].append("9999_from_the_future")

    # Signed again with this deployment's key: as a newer version of it would have.
    _archived(newer, _resigned(_forged(_members(path), future)))
    await db_run(lambda: call_command("flush", interactive=False, verbosity=0))
    with pytest.raises(CommandError, match=r"newer database state .*tenants\.9999_from_the_future"):
        await db_run(_restore, newer)
    assert not await db_run(lambda: Team.objects.exists())


async def test_rows_rewritten_with_the_digests_recomputed_are_refused_unsigned_too(
    tmp_path: Path, sync_redis: redis.Redis, redis_client_closed: None
) -> None:
    _, secret = await db_run(_team_with_key, "backup-victim")
    team = await _caller(secret)
    assert team is not None
    await call(team, "bk-victim", "add_task", title="theirs")
    path = tmp_path / "victim.tar.gz"
    await db_run(_backup, path)
    members = _members(path)
    assert list(members)[-2:] == [backups.MANIFEST, backups.SIGNATURE], "the signature last"
    await db_run(_wipe, sync_redis)

    # A superuser added to the rows, the digests and counts made to agree: the manifest's
    # signature no longer does, and nothing is written.
    forged = tmp_path / "forged.tar.gz"
    rows = _with_mallory(members[backups.DATABASE])
    _archived(forged, _forged({**members, backups.DATABASE: rows}, _mallory_counted))
    with pytest.raises(CommandError) as refused:
        await db_run(_restore, forged)
    said = str(refused.value)
    assert "is not signed with this deployment's room export key: nothing was restored" in said
    assert "ROOM_EXPORT_SIGNING_KEY" in said
    # The same with the signature left out: refused for having none.
    unsigned = tmp_path / "unsigned.tar.gz"
    _archived(unsigned, {k: v for k, v in members.items() if k != backups.SIGNATURE})
    with pytest.raises(CommandError, match=r"carries no signature of its manifest \(manifest\.sig"):
        await db_run(_restore, unsigned)
    # Or a signature that is not one.
    garbled = tmp_path / "garbled.tar.gz"
    _archived(garbled, {**members, backups.SIGNATURE: b"hmac-sha256:" + b"0" * 64 + b"\n"})
    with pytest.raises(CommandError, match="not signed with this deployment's room export key"):
        await db_run(_restore, garbled)
    assert await db_run(_users) == []
    assert not await db_run(lambda: Team.objects.exists()), "nothing was written"
    assert not list(sync_redis.scan_iter(match=f"{keys.prefix()}:{{bk-victim}}:*"))

    # The backup as written restores, beside them.
    await db_run(_restore, path)
    assert await db_run(_users) == []
    plan = await call(team, "bk-victim", "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["theirs"]


async def test_an_archive_changed_between_the_check_and_the_load_is_rolled_back(
    tmp_path: Path,
    sync_redis: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    redis_client_closed: None,
) -> None:
    _, secret = await db_run(_team_with_key, "backup-swapped")
    team = await _caller(secret)
    assert team is not None
    await call(team, "bk-swapped", "add_task", title="as taken")
    path = tmp_path / "checked.tar.gz"
    await db_run(_backup, path)
    members = _members(path)
    # What the second read finds: the rows with a superuser more (the manifest as checked).
    swapped = tmp_path / "swapped.tar.gz"
    _archived(swapped, {**members, backups.DATABASE: _with_mallory(members[backups.DATABASE])})
    opened = backups._opened
    reads: list[Path] = []

    def second_read_swapped(at: Path) -> tarfile.TarFile:
        reads.append(at)
        return opened(swapped if len(reads) == 2 else at)

    monkeypatch.setattr(backups, "_opened", second_read_swapped)

    # Over an empty database: the rows are rolled back, nothing is restored.
    await db_run(_wipe, sync_redis)
    with pytest.raises(CommandError) as refused:
        await db_run(_restore, path)
    said = str(refused.value)
    assert "transaction was rolled back and nothing was restored" in said
    assert "database.jsonl differs from the manifest's SHA-256 on the second read" in said
    assert len(reads) == 2
    assert await db_run(_users) == []
    assert not await db_run(lambda: Team.objects.exists())
    assert not list(sync_redis.scan_iter(match=f"{keys.prefix()}:{{bk-swapped}}:*"))

    # Over rows with --force: the rows replaced come back (the flush is rolled back too).
    await db_run(_two_rows)
    reads.clear()
    with pytest.raises(CommandError, match="the archive changed between the check and the load"):
        await db_run(_restore, path, "--force")
    slugs = await db_run(lambda: sorted(Team.objects.values_list("slug", flat=True)))
    assert slugs == ["backup-one", "backup-two"]
    assert await db_run(_users) == []

    # A room's snapshot swapped for another signed one: the rows are in, the room is not
    # loaded from bytes the manifest does not list, and the message says to run it again.
    # First the archive as taken, so the team is there again under its own id (flushing may
    # or may not reset the ids `_two_rows` got, so the caller's team is not left to chance).
    monkeypatch.setattr(backups, "_opened", opened)
    await db_run(_restore, path, "--force")
    monkeypatch.setattr(backups, "_opened", second_read_swapped)
    other = tmp_path / "other.tar.gz"
    await call(team, "bk-swapped", "add_task", title="later")
    await db_run(_backup, other, "--force")
    room = f"{backups.ROOMS_DIR}bk-swapped.json"
    _archived(swapped, {**members, room: _members(other)[room]})
    await db_run(_wipe, sync_redis)
    reads.clear()
    with pytest.raises(CommandError, match=r"bk-swapped \(rooms/bk-swapped\.json differs"):
        await db_run(_restore, path)
    assert not list(sync_redis.scan_iter(match=f"{keys.prefix()}:{{bk-swapped}}:*"))

    # Read twice from the same bytes, it restores.
    monkeypatch.setattr(backups, "_opened", opened)
    await db_run(_restore, path, "--force")
    plan = await call(team, "bk-swapped", "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["as taken"]


def _truncated_with_manifest_of(path: Path, rows: bytes, declared: int) -> None:
    """An archive whose manifest's header declares `declared` bytes, followed by none (and
    no signature): what its header says is all a restore may look at."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo(backups.DATABASE)
        info.size = len(rows)
        tar.addfile(info, io.BytesIO(rows))
        head = tarfile.TarInfo(backups.MANIFEST)
        head.size = declared
        raw.write(head.tobuf())
    path.write_bytes(gzip.compress(raw.getvalue()))


async def test_a_huge_manifest_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """The reviewer's archive (issue 31, I2): a manifest of 256 MiB, never signed. Refused
    by its declared size, before a byte of it is read or its signature looked for."""
    huge = tmp_path / "huge.tar.gz"
    await db_run(_truncated_with_manifest_of, huge, b"", 256 * 1024 * 1024)
    with pytest.raises(CommandError, match=r"its manifest is larger than 16777216 bytes"):
        await db_run(_restore, huge)
    # One within the bound is read (and, unsigned, refused for that).
    small = tmp_path / "small.tar.gz"
    await db_run(_truncated_with_manifest_of, small, b"", 1024)
    with pytest.raises(CommandError, match="carries no signature of its manifest"):
        await db_run(_restore, small)


async def test_signed_rows_of_a_model_no_backup_writes_are_refused(
    tmp_path: Path, sync_redis: redis.Redis, redis_client_closed: None
) -> None:
    """One holding the export key (issue 31, I2) signs rows that plant a session for the
    superuser, and a permission: a restore loads only the models a backup writes, so
    nothing is written; the backup as it was made restores beside it."""
    _, secret = await db_run(_team_with_key, "backup-models")
    team = await _caller(secret)
    assert team is not None
    await call(team, "bk-models", "add_task", title="kept")
    path = tmp_path / "models.tar.gz"
    await db_run(_backup, path)
    members = _members(path)
    await db_run(_wipe, sync_redis)
    planted = {
        "sessions.session": {
            "model": "sessions.session",
            "pk": "x" * 32,
            "fields": {"session_data": "planted", "expire_date": "2099-01-01T00:00:00Z"},
        },
        "auth.permission": {
            "model": "auth.permission",
            "pk": 9999,
            "fields": {"name": "Can own", "content_type": ["tenants", "team"], "codename": "own"},
        },
    }
    for label, row in planted.items():

        def counted(manifest: dict[str, Any], label: str = label) -> None:
            manifest["counts"]["rows"][label] = 1

        rows = members[backups.DATABASE] + json.dumps(row).encode() + b"\n"
        forged = tmp_path / f"{label}.tar.gz"
        _archived(forged, _resigned(_forged({**members, backups.DATABASE: rows}, counted)))
        with pytest.raises(CommandError) as refused:
            await db_run(_restore, forged)
        assert f"a row of {label}, which no backup holds" in str(refused.value)
        assert "rolled back and nothing was restored" in str(refused.value)
        assert not await db_run(lambda: Team.objects.exists()), "nothing was written"

    await db_run(_restore, path)
    plan = await call(team, "bk-models", "read_plan")
    assert [t["title"] for t in plan["tasks"]] == ["kept"]
