"""Start and stop `python -m config.serve` for the bench, on a free port, in a var folder
of its own (so bench data never mixes with `make run`'s)."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0
# Tool calls a minute per team for the servers under test; BENCH_RATE_LIMIT=0 turns the
# limiter off.
RATE_LIMIT = os.environ.get("BENCH_RATE_LIMIT", "1000000000")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Keys:
    secret: str
    other_secret: str  # a second team's key, for the cross-team check

    @classmethod
    def fresh(cls) -> Keys:
        return cls(secrets.token_urlsafe(24), secrets.token_urlsafe(24))

    def env(self) -> str:
        return f"bench:{self.secret},bench2:{self.other_secret}"


@dataclass
class BenchServer:
    dispatch: str
    host: str
    port: int
    var_dir: Path
    log: Path
    process: subprocess.Popen[bytes]
    redis_url: str
    embedded_redis: bool
    key_prefix: str

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> int | None:
        """SIGTERM, bounded wait, SIGKILL as a last resort (then stop its Redis ourselves)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                self._stop_orphan_redis()
        return self.process.returncode

    def _stop_orphan_redis(self) -> None:
        if not self.embedded_redis:
            return
        import redis

        with contextlib.suppress(redis.RedisError):
            redis.Redis.from_url(self.redis_url, socket_timeout=2).shutdown(nosave=True)

    def log_problems(self) -> list[str]:
        """Lines of the server log that report an error (uvicorn logs at warning level)."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return []
        return [
            line
            for line in text.splitlines()
            if "Traceback" in line
            or " ERROR " in line
            or " CRITICAL " in line
            or line.startswith(("ERROR", "CRITICAL"))
        ]

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def start(
    dispatch: str,
    var_root: Path,
    keys: Keys,
    key_prefix: str,
    *,
    name: str | None = None,
    extra_env: dict[str, str] | None = None,
) -> BenchServer:
    host, port = "127.0.0.1", free_port()
    var_dir = var_root / (name or dispatch)
    var_dir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HOST": host,
        "PORT": str(port),
        "API_KEYS": keys.env(),
        "ROOMSERVICE_VAR_DIR": str(var_dir),
        "REDIS_KEY_PREFIX": key_prefix,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONUNBUFFERED": "1",
        # The per-team limiter stays on (its Redis step is part of every call's cost) but
        # must never trip: the bench drives thousands of calls a second from one team.
        "RATE_LIMIT_PER_MINUTE": RATE_LIMIT,
        "RATE_LIMIT_INVITE_PER_MINUTE": RATE_LIMIT,
        # Push (bench section 6): the SSE stream must not be refused for the team's cap;
        # webhook deliveries go to a receiver on 127.0.0.1 and run in the web process.
        "SSE_STREAMS_PER_TEAM": "1000",
        "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        # Section 9 fills one room with 10,000 tasks (the default quota is 2,000); section
        # 6 parks up to 2,000 waiters of one team.
        "ROOM_TASKS_MAX": "20000",
        "WAITERS_PER_TEAM": "10000",
        **(extra_env or {}),
    }
    external_redis = os.environ.get("REDIS_URL", "")
    redis_url = external_redis or f"unix://{var_dir / 'redis' / 'redis.sock'}"
    log = var_dir / "server.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "config.serve"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = BenchServer(
        dispatch=dispatch,
        host=host,
        port=port,
        var_dir=var_dir,
        log=log,
        process=process,
        redis_url=redis_url,
        embedded_redis=not external_redis,
        key_prefix=key_prefix,
    )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"the server ({dispatch}) exited with {process.returncode} before answering "
                f"/health:\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(f"{server.base_url}/health", timeout=1) as resp:
                if resp.status == 200:
                    return server
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)  # bounded wait for the port to open
    server.stop()
    raise RuntimeError(
        f"the server ({dispatch}) did not answer /health within {START_TIMEOUT:.0f} s:\n"
        + server.log_tail()
    )
