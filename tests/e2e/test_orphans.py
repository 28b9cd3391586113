"""Whatever `make run` starts dies with it, however it dies: here the way a supervisor ends
it, kill -9 of its whole process group — the Celery worker (and its beat process), the
webhook relay and the embedded Redis must not live on as orphans, wherever `make run` was
started: also by a launcher that ignores or blocks SIGTERM, which its children inherit."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import ROOT, free_port, migrated_database

pytestmark = pytest.mark.e2e


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = _parent(int(entry))
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def of_this_run(var: Path) -> set[int]:
    """Every live process with this run's folder in its environment: what `make run` started
    and what they started (the worker's beat process too), wherever they were reparented."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and entry != str(os.getpid()):
            with contextlib.suppress(OSError):
                if f"ROOMSERVICE_VAR_DIR={var}\0".encode() in Path(
                    f"/proc/{entry}/environ"
                ).read_bytes() and alive(int(entry)):
                    found.add(int(entry))
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


def _ignoring() -> None:
    """A launcher that ignores the stopping signals (`trap '' TERM INT HUP`, some supervisors):
    SIG_IGN survives exec."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)


def _blocking() -> None:
    """A launcher that blocks them (a runner's thread with a signal mask): the mask survives
    exec, so the children of a `make run` started there could not be told to stop."""
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGTERM, signal.SIGINT, signal.SIGHUP))


# Where `make run` is started: a plain shell, a script under coreutils `timeout` (make run is
# then timeout's child, and the group killed is timeout's), and launchers that hand it
# SIGTERM ignored or blocked.
LAUNCHERS = {
    "plain": ([], None),
    "timeout": (["timeout", "600"], None),
    "signals-ignored": ([], _ignoring),
    "signals-blocked": ([], _blocking),
}


def _launch(var: Path, port: int, launcher: str) -> subprocess.Popen[bytes]:
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
    shutil.copyfile(migrated_database(), var / "db.sqlite3")  # what is killed is the subject
    prefix, preexec = LAUNCHERS[launcher]
    with (var / "serve.log").open("ab") as log:
        return subprocess.Popen(
            [*prefix, sys.executable, "-m", "config.serve"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as under a supervisor
            preexec_fn=preexec,
        )


def _family_up(var: Path, port: int, serve: subprocess.Popen[bytes]) -> None:
    """Once it answers and the worker with its beat process, the relay and the embedded
    Redis are up (their command lines say so)."""
    assert bounded(lambda: _healthy(port), 60), (var / "serve.log").read_text()[-2000:]
    assert bounded(
        lambda: (
            sorted(
                part
                for pid in descendants(serve.pid)
                for part in ("config.celery", "relay_webhooks", "redis-server")
                if part in names({pid})
            )
            == ["config.celery", "config.celery", "redis-server", "relay_webhooks"]
        ),
        60,
    ), names(descendants(serve.pid))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.single_redis
@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_kill_9_of_make_runs_group_leaves_no_orphans(launcher: str) -> None:
    var = Path(tempfile.mkdtemp(prefix="rs-orphans-"))
    port = free_port()
    serve = _launch(var, port, launcher)
    try:
        _family_up(var, port, serve)
        os.killpg(serve.pid, signal.SIGKILL)  # the whole group, no chance to clean up
        serve.wait(timeout=10)
        assert bounded(lambda: not of_this_run(var), 30), f"orphans: {names(of_this_run(var))}"
        assert not (var / "redis" / "redis.sock").exists() or not _redis_answers(var)
    finally:
        for pid in of_this_run(var) | {serve.pid}:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.single_redis
def test_a_worker_killed_outright_takes_its_beat_process_with_it() -> None:
    """The OOM killer's way: the worker gets no chance to stop the beat process it forked,
    which must not live on scheduling for a worker that is gone; the rest of the run does."""
    var = Path(tempfile.mkdtemp(prefix="rs-orphans-"))
    port = free_port()
    serve = _launch(var, port, "plain")
    try:
        _family_up(var, port, serve)
        (worker,) = (pid for pid in _children(serve.pid) if "config.celery" in names({pid}))
        (beat,) = _children(worker)
        os.kill(worker, signal.SIGKILL)
        assert bounded(lambda: not alive(beat), 30), f"left: {names({beat})}"
        left = names(descendants(serve.pid))
        assert serve.poll() is None and "relay_webhooks" in left and "redis-server" in left
    finally:
        os.killpg(serve.pid, signal.SIGKILL)
        serve.wait(timeout=10)
        for pid in of_this_run(var):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_a_beat_whose_worker_died_before_it_started_ends_at_once() -> None:
    """The race a busy machine runs: the worker dies between forking its beat process and the
    beat's start, when the beat has no parent left to die with; it must end, not live on."""
    program = """
import os
import time
import config.celery
read, write = os.pipe()
beat = os.fork()
if beat == 0:
    os.close(write)
    os.close(1)  # the worker's output is its own: the test reads it to its end
    os.close(2)
    os.read(read, 1)  # the end of file: the worker is gone
    config.celery._beat_dies_with_worker()
    time.sleep(120)  # the beat's own run, had it gone on
    os._exit(0)
print(beat, flush=True)
os._exit(0)
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    worker = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, timeout=60
    )
    beat = int(worker.stdout)
    try:
        assert bounded(lambda: not alive(beat), 30), "the beat lived on without its worker"
    finally:
        with contextlib.suppress(OSError):
            os.kill(beat, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    return [child for child in descendants(pid) if _parent(child) == pid]


def _parent(pid: int) -> int:
    """`pid`'s parent (OSError once it is gone)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.single_redis
@pytest.mark.parametrize("launcher", ["signals-ignored", "signals-blocked"])
def test_sigterm_stops_everything_in_order_whatever_the_launcher_did(launcher: str) -> None:
    """The graceful path holds there too: SIGTERM reaches `make run`, which stops its
    children (they stop on their SIGTERM: the embedded Redis removes its socket) and ends 0."""
    var = Path(tempfile.mkdtemp(prefix="rs-orphans-"))
    port = free_port()
    serve = _launch(var, port, launcher)
    try:
        _family_up(var, port, serve)
        serve.send_signal(signal.SIGTERM)
        # Well inside the 15 s after which it kills a child that did not stop on SIGTERM.
        assert serve.wait(timeout=14) == 0, (var / "serve.log").read_text()[-2000:]
        assert bounded(lambda: not of_this_run(var), 10), f"left: {names(of_this_run(var))}"
        assert not (var / "redis" / "redis.sock").exists()  # a SIGTERM'd Redis, not a killed one
        assert (var / "redis" / "redis.log").read_text().count("ready to exit, bye bye") == 1
    finally:
        for pid in of_this_run(var) | {serve.pid}:
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
