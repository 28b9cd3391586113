"""A small HTTP/1.1 keep-alive client on asyncio streams, and JSON-RPC tool calls over it.

Why not httpx: on this 2-core machine the client shares the CPU with the server, so the
client must cost as little as possible per request (a few tens of microseconds here) for
the figures to describe the server. It speaks just what the bench needs: one request at a
time per connection, Content-Length or chunked bodies, reconnect on `Connection: close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

ACCEPT = "application/json, text/event-stream"
# A connection idle this long is opened again before its next request: uvicorn closes one
# idle for 5 s (timeout_keep_alive), and a request sent as it does is lost.
IDLE_REOPEN_SECONDS = 4.0


class HttpError(Exception):
    pass


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


class Connection:
    """One keep-alive TCP connection to host:port."""

    def __init__(self, host: str, port: int, *, timeout: float = 30.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._used = 0.0
        self.reconnects = 0

    async def open(self) -> None:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
        self._reader = self._writer = None

    async def request(self, raw: bytes) -> Response:
        """Send one pre-built request (bytes) and read its response."""
        try:
            async with asyncio.timeout(self.timeout):
                return await self._exchange(raw)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, HttpError) as exc:
            await self.close()
            raise HttpError(f"{type(exc).__name__}: {exc}") from None

    async def _exchange(self, raw: bytes) -> Response:
        if self._writer is not None and time.monotonic() - self._used > IDLE_REOPEN_SECONDS:
            await self.close()
        if self._writer is None:
            await self.open()
        assert self._reader is not None and self._writer is not None
        self._writer.write(raw)
        head = await self._reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
            raise HttpError(f"bad status line {lines[0]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        if "content-length" in headers:
            body = await self._reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self._reader.readuntil(b"\r\n")  # no trailers expected
                    break
                chunks.append(await self._reader.readexactly(size))
                await self._reader.readexactly(2)
            body = b"".join(chunks)
        elif status in (204, 304) or 100 <= status < 200:
            body = b""
        else:
            body = await self._reader.read()
            headers["connection"] = "close"
        self._used = time.monotonic()
        if headers.get("connection", "").lower() == "close":
            await self.close()
            self.reconnects += 1
        return Response(status, headers, body)


def build_request(
    method: str,
    host: str,
    port: int,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def tool_call_body(name: str, arguments: dict[str, Any], rid: int = 1) -> bytes:
    msg = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(msg, separators=(",", ":")).encode("utf-8")


@dataclass
class CallResult:
    ok: bool
    value: Any = None
    status: int = 0
    problem: str = ""
    request: bytes = b""
    response: bytes = b""
    seconds: float = 0.0

    def describe(self) -> str:
        req = self.request.decode("utf-8", "replace")
        body = req.split("\r\n\r\n", 1)[-1]
        return (
            f"{self.problem}\n      request : POST /mcp {body[:400]}\n"
            f"      response: HTTP {self.status} {self.response[:600].decode('utf-8', 'replace')}"
        )


@dataclass
class McpEndpoint:
    host: str
    port: int
    token: str
    path: str = "/mcp"
    _rid: int = field(default=0)

    def headers(self) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Accept": ACCEPT,
        }

    def raw_call(self, name: str, arguments: dict[str, Any]) -> bytes:
        self._rid += 1
        return build_request(
            "POST",
            self.host,
            self.port,
            self.path,
            headers=self.headers(),
            body=tool_call_body(name, arguments, self._rid),
        )

    def connection(self) -> Connection:
        return Connection(self.host, self.port)


def parse_call(resp: Response) -> tuple[bool, Any, str]:
    """(ok, value, problem) for a tools/call response: ok means HTTP 200, a JSON-RPC
    result, and isError false; value is structuredContent, else the parsed text."""
    if resp.status != 200:
        return False, None, f"HTTP {resp.status}"
    try:
        msg = json.loads(resp.body)
    except ValueError:
        return False, None, "response body is not JSON"
    if "error" in msg or "result" not in msg:
        return False, None, "JSON-RPC error"
    result = msg["result"]
    if result.get("isError"):
        return False, None, "tool error (isError: true)"
    value = result.get("structuredContent")
    if value is None:
        try:
            value = json.loads(result["content"][0]["text"])
        except (KeyError, IndexError, ValueError, TypeError):
            return False, None, "result has neither structuredContent nor JSON text"
    return True, value, ""


async def call_tool(
    conn: Connection, ep: McpEndpoint, name: str, arguments: dict[str, Any]
) -> CallResult:
    raw = ep.raw_call(name, arguments)
    t0 = time.perf_counter()
    try:
        resp = await conn.request(raw)
    except HttpError as exc:
        return CallResult(
            False, problem=f"transport: {exc}", request=raw, seconds=time.perf_counter() - t0
        )
    seconds = time.perf_counter() - t0
    ok, value, problem = parse_call(resp)
    return CallResult(
        ok, value, resp.status, f"{name}: {problem}" if problem else "", raw, resp.body, seconds
    )
