"""Request bodies bounded before anything reads them (issue 31, P3), against the real ASGI
server: the attacker's unauthenticated chunked POST that never ends, and a declared one too
large, are answered 413 while they are still being sent; bodies of ordinary size, declared
or chunked, still go through."""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import TEAM_A_SECRET, RunningServer

pytestmark = pytest.mark.e2e
HOOK = "/api/v1/rooms/limits-room/hooks/claude-code"
GIB = 1024**3


def endless_chunks(total: int = GIB, size: int = 64 * 1024) -> Iterator[bytes]:
    """What the attacker streams: a JSON string that goes on for a gigabyte."""
    yield b'{"tool_input": "'
    for _ in range(total // size):
        yield b"A" * size


def _connect(server: RunningServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def _answer(sock: socket.socket) -> tuple[int, dict[str, object]]:
    data = b""
    while True:
        try:
            piece = sock.recv(65536)
        except ConnectionResetError:
            break
        if not piece:
            break
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_an_endless_chunked_post_to_the_hook_door_is_refused_while_it_is_being_sent(
    server: RunningServer,
) -> None:
    sock = _connect(server)
    sent = 0
    with sock:
        sock.sendall(
            f"POST {HOOK} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        for chunk in endless_chunks():
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break  # the server answered before the body ended
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                break  # or it stopped taking it
            sent += len(chunk)
        status, body = _answer(sock)
    assert status == 413 and body["code"] == "payload_too_large", body
    assert "REQUEST_BODY_BYTES_MAX" in str(body["message"])
    # Refused at the limit (1 MB), not after the gigabyte: what was sent beyond it is only
    # what the sockets' buffers held.
    assert sent < 64 * 1024 * 1024, sent


def test_a_declared_body_over_the_limit_is_refused_before_a_byte_is_sent(
    server: RunningServer,
) -> None:
    sock = _connect(server)
    with sock:
        sock.sendall(
            f"POST {HOOK} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {GIB}\r\n\r\n".encode()
        )
        status, body = _answer(sock)  # answered with no body sent at all
    assert status == 413 and body["code"] == "payload_too_large", body


def test_bodies_of_ordinary_size_still_go_through_declared_or_chunked(
    server: RunningServer,
) -> None:
    auth = {"authorization": f"Bearer {TEAM_A_SECRET}"}
    hook = httpx.post(f"{server.url}{HOOK}", json={"hook_event_name": "Stop"}, timeout=10)
    assert hook.status_code == 200, hook.text

    def chunked() -> Iterator[bytes]:
        yield b'{"roomId": "limits-room", '
        yield b'"title": "' + b"t" * 400 + b'"}'

    door = f"{server.url}/api/v1/rooms/limits-room/tools/add_task"
    for body in (chunked(), b"".join(chunked())):
        r = httpx.post(
            door, content=body, headers={**auth, "content-type": "application/json"}, timeout=10
        )
        assert r.status_code == 200, r.text
        assert r.json()["title"] == "t" * 400
