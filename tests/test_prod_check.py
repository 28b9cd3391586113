"""`make prod-check` (issue 26, point 3), run whole: the production configuration on this
machine behind Caddy's TLS, used through it, and stopped. It is its own program
(config/prod_check.py) so an operator runs the same thing; here it runs once, in the
single pass (it brings its own Postgres database and Redis databases)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from config import prod_check

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.browser_only


def test_the_production_layout_works_through_tls_and_stops_cleanly() -> None:
    if shutil.which("caddy") is None:
        pytest.skip("no caddy: apt-get install caddy (make test installs it when it can)")
    if not any(c and Path(c).exists() for c in prod_check.CHROMIUM):
        pytest.skip("no Chromium: apt-get install chromium")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    running = subprocess.Popen(
        [sys.executable, "-m", "config.prod_check"],
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


def test_a_sigterm_mid_check_stops_everything_it_started() -> None:
    """A CI timeout or a closed terminal sends SIGTERM: the check still stops its children
    (they run in sessions of their own) and drops its database."""
    if shutil.which("caddy") is None:
        pytest.skip("no caddy")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONUNBUFFERED"] = "1"
    running = subprocess.Popen(
        [sys.executable, "-m", "config.prod_check"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert running.stdout is not None
    seen = ""
    while "start:" not in seen:  # SIGTERM once it has started processes
        line = running.stdout.readline()
        assert line, seen
        seen += line
    running.terminate()
    running.communicate(timeout=120)
    assert running.returncode != 0
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "deploy/Caddyfile" not in left and "var/prod-check/beat-schedule" not in left, left
    assert not prod_check.FOLDER.exists()


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


def test_the_next_run_stops_what_a_killed_run_left() -> None:
    """SIGKILL leaves no `finally`: the next run stops the processes the folder lists (and
    only those still running with that folder) and drops the old database."""
    if shutil.which("caddy") is None:
        pytest.skip("no caddy")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONUNBUFFERED"] = "1"
    killed = subprocess.Popen(
        [sys.executable, "-m", "config.prod_check"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert killed.stdout is not None
    seen = ""
    while "start:" not in seen:
        line = killed.stdout.readline()
        assert line, seen
        seen += line
    killed.kill()
    killed.communicate(timeout=30)
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "deploy/Caddyfile" in left  # what SIGKILL leaves behind
    check = prod_check.ProdCheck()
    try:
        check.stores_make()
        left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert "deploy/Caddyfile" not in left and "var/prod-check/beat-schedule" not in left
    finally:
        check.stop()
        shutil.rmtree(prod_check.FOLDER, ignore_errors=True)
        (prod_check.FOLDER.parent / "prod-check.lock").unlink(missing_ok=True)
