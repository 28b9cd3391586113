"""Whatever `make run` starts dies with it, however it dies: here the way a supervisor ends
it, kill -9 of its whole process group — the Celery worker, the webhook relay and the
embedded Redis must not live on as orphans."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import ROOT, free_port

pytestmark = pytest.mark.e2e


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def names(pids: set[int]) -> str:
    out = []
    for pid in sorted(pids):
        with contextlib.suppress(OSError):
            out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:80])
    return "; ".join(out)


def bounded(check: object, bound: float) -> bool:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.single_redis
def test_kill_9_of_make_runs_group_leaves_no_orphans() -> None:
    var = Path(tempfile.mkdtemp(prefix="rs-orphans-"))
    port = free_port()
    env = {
        k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_TASK_ALWAYS_EAGER")
    }
    env.update(
        {
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "ROOMSERVICE_VAR_DIR": str(var),
            "DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}",
            "API_KEYS": "",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    with (var / "serve.log").open("ab") as log:
        serve = subprocess.Popen(
            [sys.executable, "-m", "config.serve"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as under a supervisor
        )
    try:
        assert bounded(lambda: _healthy(port), 60), (var / "serve.log").read_text()[-2000:]
        # The worker, the relay and the embedded Redis are up (their command lines say so).
        assert bounded(
            lambda: all(
                part in names(descendants(serve.pid))
                for part in ("celery", "relay_webhooks", "redis-server")
            ),
            60,
        ), names(descendants(serve.pid))
        family = descendants(serve.pid)
        os.killpg(serve.pid, signal.SIGKILL)  # the whole group, no chance to clean up
        serve.wait(timeout=10)
        left = lambda: {pid for pid in family if alive(pid)}  # noqa: E731
        assert bounded(lambda: not left(), 30), f"orphans: {names(left())}"
        assert not (var / "redis" / "redis.sock").exists() or not _redis_answers(var)
    finally:
        for pid in descendants(serve.pid) | {serve.pid}:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _redis_answers(var: Path) -> bool:
    import redis

    try:
        return bool(
            redis.Redis(unix_socket_path=str(var / "redis" / "redis.sock"), socket_timeout=1).ping()
        )
    except redis.RedisError:
        return False
