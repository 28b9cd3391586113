"""`make prod-check` (issue 26, point 3), run whole: the production configuration on this
machine behind Caddy's TLS, used through it, and stopped. It is its own program
(ops/prod_check.py) so an operator runs the same thing; here it runs once, in the
single pass (it brings its own Postgres database and Redis databases)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ops import prod_check
from ops.chromium import chromium_path

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.browser, pytest.mark.prod]


def test_the_production_layout_works_through_tls_and_stops_cleanly() -> None:
    if shutil.which("caddy") is None:
        pytest.skip("no caddy: apt-get install caddy (make test installs it when it can)")
    if chromium_path() is None:
        pytest.skip("no Chromium: apt-get install chromium")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    running = subprocess.Popen(
        [sys.executable, "-m", "ops.prod_check"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = running.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        running.terminate()  # SIGTERM: it stops what it started, then ends
        out, err = running.communicate(timeout=60)
    assert running.returncode == 0, out[-4000:] + err[-2000:]
    for step in ("TLS:", "browser:", "MCP over HTTPS", "webhook:", "/metrics:"):
        assert f"  {step}" in out and "FAILED" not in out, step
    assert "prod-check passed" in out
    # Nothing it started is left: no process of its folder, no database of its own.
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "var/prod-check" not in left and "deploy/Caddyfile" not in left
    assert not prod_check.FOLDER.exists()


SIGNALLED = """
import signal, sys
from ops import prod_check
from ops.chromium import chromium_path
prod_check.FOLDER.mkdir(parents=True, exist_ok=True)
for signum in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(signum, prod_check._stop_on_signal)
check = prod_check.ProdCheck()
try:
    check.spawn("web", ["sleep", "300"])
    check.spawn("caddy", ["sh", "-c", "sleep 300 & wait"])
    print(" ".join(str(p.pid) for p in check.processes.values()), flush=True)
    signal.pause()
finally:
    check.stop()
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = (
        Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}").exists() else "X"
    )
    return state != "Z"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_check_stops_everything_it_started(signum: int) -> None:
    """A CI timeout or a closed terminal: the check's own handlers run its `finally`, which
    stops its children (they run in sessions of their own, out of reach of the signal)."""
    running = subprocess.Popen(
        [sys.executable, "-c", SIGNALLED], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert running.stdout is not None
        pids = [int(p) for p in running.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        running.send_signal(signum)
        assert running.wait(30) == 128 + signum
        assert not any(_alive(p) for p in pids)
    finally:
        running.kill()
        running.communicate(timeout=10)  # closes its pipe
        shutil.rmtree(prod_check.FOLDER, ignore_errors=True)


def test_the_next_run_stops_what_a_killed_run_left() -> None:
    """SIGKILL leaves no `finally`: the next run stops the process groups the folder lists
    that still run with that folder in their environment, and nothing else."""
    killed = prod_check.ProdCheck()
    prod_check.FOLDER.mkdir(parents=True, exist_ok=True)
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        killed.spawn("web", ["sleep", "300"])
        left = killed.processes["web"]
        # A pid listed by the killed run that the system has since given to someone else.
        with (prod_check.FOLDER / "pids").open("a") as pids:
            pids.write(f"{stranger.pid}\n")
        prod_check.leftovers_stop()
        assert left.wait(10) is not None
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait(10)
        shutil.rmtree(prod_check.FOLDER, ignore_errors=True)


def test_it_never_empties_a_redis_database_it_was_not_lent(monkeypatch: pytest.MonkeyPatch) -> None:
    import redis

    store = redis.Redis.from_url(f"{prod_check.REDIS_BASE_URL}/{prod_check.REDIS_DB}")
    store.flushdb()
    store.set("someone-elses", "data")
    try:
        check = prod_check.ProdCheck()
        with pytest.raises(prod_check.CheckFailed, match="not the prod-check's"):
            check.stores_make()
        assert store.get("someone-elses") == b"data"
    finally:
        store.flushdb()


def test_stopping_ends_every_process_it_started_even_a_stubborn_one(tmp_path: Path) -> None:
    """A step that fails leaves nothing running: stop() ends each process group, and kills
    one that ignores SIGTERM."""
    check = prod_check.ProdCheck()
    prod_check.FOLDER.mkdir(parents=True, exist_ok=True)
    try:
        check.spawn("polite", ["sleep", "300"])
        check.spawn("stubborn", ["sh", "-c", "trap '' TERM; sleep 300 & wait"])
        check.stop()
        assert all(p.poll() is not None for p in check.processes.values())
    finally:
        shutil.rmtree(prod_check.FOLDER, ignore_errors=True)
