"""The floor of the stack, for `make bench`: a bare ASGI app under the same uvicorn that
answers every POST with one Redis GET and a small JSON-RPC result. No tool call can be
cheaper than this on this machine; the bench puts a tool call's throughput and CPU next
to it, measured in the same run.

FLOOR_GETS=2 makes the same app do two GETs, one after the other: the ceiling of any call
that is allowed two Redis round trips (a warm tool call: its budget step, then its room)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

Scope = MutableMapping[str, Any]
ROOT = Path(__file__).resolve().parent.parent
BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{}"}]}}'
GETS = int(os.environ.get("FLOOR_GETS", "1"))
_redis: aioredis.Redis | None = None


async def app(
    scope: Scope,
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    global _redis
    if scope["type"] != "http":
        return
    while True:  # the request body, whole
        message = await receive()
        if not message.get("more_body"):
            break
    if _redis is None:
        url = os.environ["REDIS_URL"].replace("redis+socket://", "unix://")
        _redis = aioredis.Redis.from_url(url)
    for _ in range(GETS):
        await _redis.get("bench:floor")
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(BODY)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": BODY})


def start(port: int, redis_url: str, *, gets: int = 1) -> subprocess.Popen[bytes]:
    """The floor app on 127.0.0.1:`port` doing `gets` Redis GETs a call, answering once it
    is up."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "bench.floor:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
            "--lifespan",
            "off",
        ],
        cwd=ROOT,
        env={**os.environ, "REDIS_URL": redis_url, "FLOOR_GETS": str(gets)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=b"{}", method="POST")
            with urllib.request.urlopen(req, timeout=1):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the floor app did not start")


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks
