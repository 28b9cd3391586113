"""The Lua of every atomic step: one file a step, `rooms/lua/<domain>/<step>.lua`, read once
at start and assembled here; rooms/scripts.py names each step after its file.

A file opens with its header, lines that begin `---`: what arrives in KEYS and ARGV and
what comes back, and two kinds of line the loader reads:

- `--- uses: prelude tasks`: the libraries (`lib/<name>.lua`) whose text goes before the
  file's own, in that order (a library may use others the same way);
- `--- constants: SEARCH_FIELD_BYTES SEARCH_DOC_TERMS`: values defined in Python
  (rooms/scripts.py CONSTANTS), declared as Lua locals just before the file's body
  (`local SEARCH_FIELD_BYTES = 4096`). No file holds a placeholder that text replaces.

One more name may be used: `room`, first, for a step that takes the room tail and runs
without wrappers (`--- uses: room prelude`): it declares ROOM (below).

The rest of the header is documentation and is not sent: a step's text is its libraries'
and its own body, so the script Redis runs (and its SHA, which tests/rooms/test_lua_golden.py
pins) is exactly what the files say. One name is the engine's, not a file's: `WAKE_VERB`
(PUBLISH on one Redis, SPUBLISH on a cluster), declared first by rooms/store/engine.py
`script_source`, and so is `TRACE` ('', the trace context a write records on its events:
`write_step` declares it again from the call's envelope).

No script builds a key name. A step of a room that writes, indexes or is wrapped takes,
after its own keys, the room tail: the keys rooms/keys.py ROOM_TAIL lists, in its order.
Lua reads them by name from the table `ROOM` (`ROOM.meta`, `ROOM.holds`), which
`write_step` declares for every write step and `uses: room` for the others; the libraries
that use it (lib/search.lua, lib/holds.lua) leave it to them.

A write step runs inside wrappers, which are Lua functions (rooms/lua/wrap/): `guard`,
outermost, refuses a room that is gone or being archived; `present` makes the act of the
agent it names presence, renewing what the agent holds; `keyed` records an idempotencyKey;
`turn` takes a post only in the poster's turn. `write_step` composes them around the step's
own text, `guard(present(keyed(step, wrote_ok)))()` (a post's step is `turn(step, wrote_ok)`
there), where `wrote_*`
(wrap/wrote.lua) says which answers changed the room. What they need arrives as one named
envelope, the step's last argument, decoded once as `CALL` (rooms/store/engine.py
`call_envelope`): a wrapper whose part the call does not carry (no idempotencyKey, no
acting agent) leaves the step alone. A wrapper that answers for the step (a
refusal, a replay) answers {CALL_ANSWER, its words as JSON}. A wrapper's header may name
libraries it uses, as a step's does.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Literal

from rooms.keys import ROOM_TAIL

LUA = Path(__file__).resolve().parent
HEADER = "---"
USES = "--- uses:"
CONSTANTS = "--- constants:"

# Which answers of a write step changed the room (wrap/wrote.lua): {'ok', ...} for most;
# every answer (heartbeat; release_lock answers either way); any but {'quota', ...}
# (acquire_lock); {'granted' or 'renewed', ...} (lease_claim).
Wrote = Literal["ok", "always", "unless_quota", "granted"]
# The first word of a wrapper's own answer (wrap/wrote.lua `answered`).
CALL_ANSWER = "__call"
# The room tail by name: ROOM.<name> is its KEYS entry, counted from the end.
ROOM_KEYS = (
    "local ROOM = {}\n"
    f"for i, name in ipairs({{{', '.join(repr(n) for n in ROOM_TAIL)}}}) do\n"
    f"  ROOM[name] = KEYS[#KEYS - {len(ROOM_TAIL)} + i]\n"
    "end\n"
)
WRAPPERS = ("wrap/wrote", "wrap/guard", "wrap/present", "wrap/keyed")


@cache
def _parts(path: str) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(the libraries the file uses, the constants it declares, its body without the
    header)."""
    text = (LUA / f"{path}.lua").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    uses: tuple[str, ...] = ()
    constants: tuple[str, ...] = ()
    n = 0
    while n < len(lines) and lines[n].startswith(HEADER):
        if lines[n].startswith(USES):
            uses = tuple(f"lib/{name}" for name in lines[n][len(USES) :].split())
        elif lines[n].startswith(CONSTANTS):
            constants = tuple(lines[n][len(CONSTANTS) :].split())
        n += 1
    return uses, constants, "".join(lines[n:])


def lua_literal(value: str | int) -> str:
    """A Python constant as Lua source: an integer, or a quoted string."""
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _text(path: str, constants: Mapping[str, str | int]) -> str:
    uses, declared, body = _parts(path)
    own = "".join(f"local {name} = {lua_literal(constants[name])}\n" for name in declared)
    libs = "".join(ROOM_KEYS if lib == "lib/room" else _text(lib, constants) for lib in uses)
    return libs + own + body


def assemble(path: str, constants: Mapping[str, str | int]) -> str:
    """The step's script: its libraries' text and its own, each preceded by the constants
    its header declares."""
    return _text(path, constants)


@cache
def write_step(source: str, *, wrote: Wrote, post: bool = False) -> str:
    """A write step (`source`, an assembled script) inside its wrappers, which read the
    call's envelope (CALL, the last argument) and its room tail (ROOM) by name; `post`: a
    step taken only in its poster's turn (event_append, message_send), inside the turn
    wrapper too. Cached: the store asks once per step, and Redis knows each result by its
    SHA."""
    step = f"turn(step, wrote_{wrote})" if post else "step"
    return (
        ROOM_KEYS
        + "local CALL = cjson.decode(ARGV[#ARGV])\n"
        + "local TRACE = CALL.trace or ''\n"
        + "".join(_text(path, {}) for path in (*WRAPPERS, *(("wrap/turn",) if post else ())))
        + f"local function step()\n{source}end\n"
        + f"return guard(present(keyed({step}, wrote_{wrote})))()\n"
    )
