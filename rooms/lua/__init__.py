"""The Lua of every atomic step: one file a step, `rooms/lua/<domain>/<step>.lua`, read once
at start and assembled here; rooms/scripts.py names each step after its file.

A file opens with its header, lines that begin `---`: what arrives in KEYS and ARGV and
what comes back, and, on a line `--- uses: prelude tasks`, the libraries (`lib/<name>.lua`)
whose text goes before its own, in that order (a library may use others the same way).
The header is documentation and is not sent: a step's text is its libraries' and its own
body, so the script Redis runs (and its SHA, which tests/rooms/test_lua_golden.py pins) is
exactly what the file says, placeholders (`__NAME__`) filled from `fill`.

No script builds a key name. A step of a room that writes, indexes or wraps takes, after
its own keys, the room tail: eight keys in a fixed order, so the libraries and wrappers
find them by position from the end (rooms/store `ROOM_TAIL`):

    KEYS[#KEYS-7] presence   KEYS[#KEYS-6] idempotency   KEYS[#KEYS-5] idempotency_times
    KEYS[#KEYS-4] search_events   KEYS[#KEYS-3] search_docs   KEYS[#KEYS-2] search_vocab
    KEYS[#KEYS-1] owner   KEYS[#KEYS] meta
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path

LUA = Path(__file__).resolve().parent
HEADER = "---"
USES = "--- uses:"


@cache
def _parts(path: str) -> tuple[tuple[str, ...], str]:
    """(the libraries the file uses, its body without the header)."""
    text = (LUA / f"{path}.lua").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    uses: tuple[str, ...] = ()
    n = 0
    while n < len(lines) and lines[n].startswith(HEADER):
        if lines[n].startswith(USES):
            uses = tuple(f"lib/{name}" for name in lines[n][len(USES) :].split())
        n += 1
    return uses, "".join(lines[n:])


def _text(path: str) -> str:
    uses, body = _parts(path)
    return "".join(_text(lib) for lib in uses) + body


def assemble(path: str, fill: Mapping[str, str]) -> str:
    """The step's script: its libraries' text and its own, each `__NAME__` of `fill`
    replaced by its value."""
    text = _text(path)
    for placeholder, value in fill.items():
        text = text.replace(placeholder, value)
    return text
