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
    done = subprocess.run(
        [sys.executable, "-m", "config.prod_check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    out = done.stdout
    for step in ("TLS:", "browser:", "MCP over HTTPS", "webhook:", "/metrics:"):
        assert f"  {step}" in out and "FAILED" not in out, step
    assert "prod-check passed" in out
    # Nothing it started is left: no process of its folder, no database of its own.
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "var/prod-check" not in left and "deploy/Caddyfile" not in left
    assert not prod_check.FOLDER.exists()


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
