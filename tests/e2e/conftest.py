"""A real server for whole-service tests: `python -m config.serve` on a free port, the same
Redis as the rest of the suite, its own SQLite database and var folder."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
TEAM_A_SECRET = "e2e-secret-team-a-0123456789"
TEAM_B_SECRET = "e2e-secret-team-b-0123456789"
# A server for a test the background jobs play no part in (what it checks is the web
# process's): no Celery worker, scheduler or webhook relay to start, wait for and stop.
WEB_ONLY = {"RUN_WORKER": "0", "RUN_RELAY": "0", "HEALTH_PROCESSES": ""}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RunningServer:
    url: str
    process: subprocess.Popen[bytes]
    var_dir: Path
    log: Path

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)


def migrated_database() -> Path:
    """A SQLite database migrated once for the whole run (its workers wait on one lock),
    copied into each new server's folder: migrating from nothing costs a server seconds
    (django-oauth-toolkit alone has 22 migrations). It is named by the migrations it holds,
    so a changed migration makes a new one. The server still runs `migrate`, which finds
    nothing to do; migrating from nothing is what the README walkthrough and
    tests/browser/test_first_run.py test, through `make run` itself."""
    migrations = sorted(ROOT.glob("*/migrations/*.py"))
    digest = hashlib.sha256(importlib.metadata.version("django-oauth-toolkit").encode())
    for path in migrations:
        digest.update(path.read_bytes())
    folder = Path(tempfile.gettempdir()) / f"rs-e2e-migrated-{digest.hexdigest()[:16]}"
    database = folder / "db.sqlite3"
    folder.mkdir(exist_ok=True)
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not database.exists():
            building = folder / "building.sqlite3"
            building.unlink(missing_ok=True)
            env = {
                **os.environ,
                "ROOMSERVICE_VAR_DIR": str(folder),
                "DATABASE_URL": f"sqlite:///{building}",
                "DJANGO_SETTINGS_MODULE": "config.settings",
            }
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
                cwd=ROOT,
                env=env,
                check=True,
            )
            building.replace(database)
    return database


def start_server(
    env_extra: dict[str, str] | None = None, var_dir: Path | None = None
) -> RunningServer:
    port = free_port()
    var = var_dir or Path(tempfile.mkdtemp(prefix="rs-e2e-"))
    var.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "API_KEYS": f"team-a:{TEAM_A_SECRET},team-b:{TEAM_B_SECRET}",
        "ROOMSERVICE_VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        # Load tests make thousands of calls; the limiter has tests of its own.
        "RATE_LIMIT_PER_MINUTE": "0",
        "RATE_LIMIT_INVITE_PER_MINUTE": "0",
        "SIGNUPS_PER_ADDRESS_PER_HOUR": "1000000",
    }
    env.update(env_extra or {})
    database = var / "db.sqlite3"
    if env["DATABASE_URL"] == f"sqlite:///{database}" and not database.exists():
        shutil.copyfile(migrated_database(), database)
        database.chmod(0o600)  # as the service makes its files: its owner's alone
    log = var / "server.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "config.serve"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return RunningServer(url=url, process=process, var_dir=var, log=log)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)  # bounded wait for the port to open, not a sleep to make a test pass
    process.kill()
    raise RuntimeError(f"server did not answer /health:\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="session")
def server() -> Iterator[RunningServer]:
    running = start_server()
    yield running
    running.stop()
