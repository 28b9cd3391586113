"""The Lua of every atomic step: one file a step, `rooms/lua/<domain>/<step>.lua`, read once
at start and assembled here; rooms/scripts.py names each step after its file.

A file opens with its header, lines that begin `---`: what arrives in KEYS and ARGV and
what comes back, and two kinds of line the loader reads:

- `--- uses: prelude tasks`: the libraries (`lib/<name>.lua`) whose text goes before the
  file's own, in that order (a library may use others the same way);
- `--- constants: SEARCH_FIELD_BYTES SEARCH_DOC_TERMS`: values defined in Python
  (rooms/scripts.py CONSTANTS), declared as Lua locals just before the file's body
  (`local SEARCH_FIELD_BYTES = 4096`). No file holds a placeholder that text replaces.

The rest of the header is documentation and is not sent: a step's text is its libraries'
and its own body, so the script Redis runs (and its SHA, which tests/rooms/test_lua_golden.py
pins) is exactly what the files say. One name is the engine's, not a file's: `WAKE_VERB`
(PUBLISH on one Redis, SPUBLISH on a cluster), declared first by rooms/store/engine.py
`script_source`, and so is `TRACE` ('', the trace context a write records on its events:
`write_step` declares it again for a call that carries one).

A write step runs inside wrappers, which are Lua functions (rooms/lua/wrap/): `guard`,
outermost, refuses a room that is gone or being archived; `present` makes the act of the
agent it names presence, renewing what the agent holds; `keyed` records an idempotencyKey;
`turn` takes a post only in the poster's turn. `write_step` composes them around the step's
own text, `guard(present(keyed(turn(step, wrote_one, 4), wrote_one, 7), 0))()`, where
`wrote_*` (wrap/wrote.lua) says which answers changed the room. A wrapper's header may name
libraries it uses, as a step's does.

No script builds a key name. A step of a room that writes, indexes or is wrapped takes,
after its own keys, the room tail: sixteen keys in a fixed order, so the libraries and
wrappers find them by position from the end (rooms/store/engine.py `room_tail`):

    KEYS[#KEYS-15] claims   KEYS[#KEYS-14] claim_holders   KEYS[#KEYS-13] tasks
    KEYS[#KEYS-12] leases   KEYS[#KEYS-11] lease_expiry   KEYS[#KEYS-10] agent_tags
    KEYS[#KEYS-9] holds   KEYS[#KEYS-8] presence_rest   KEYS[#KEYS-7] presence
    KEYS[#KEYS-6] idempotency   KEYS[#KEYS-5] idempotency_times
    KEYS[#KEYS-4] search_events   KEYS[#KEYS-3] search_docs   KEYS[#KEYS-2] search_vocab
    KEYS[#KEYS-1] owner   KEYS[#KEYS] meta

Keys are added at its front, so a position counted from the end never moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Literal

LUA = Path(__file__).resolve().parent
HEADER = "---"
USES = "--- uses:"
CONSTANTS = "--- constants:"

# Which answers of a write step changed the room (wrap/wrote.lua): {1, ...} for most;
# every answer (heartbeat; release_lock answers either way); any but the quota's -1
# (acquire_lock); a bare 1 (mark_event_read); {1 granted or 2 renewed, ...} (lease_claim).
Wrote = Literal["one", "always", "unless_quota", "mark", "granted"]
TURN_ARGS = 3  # the turn wrapper's arguments, after the keyed wrapper's (wrap/turn.lua)
PRESENT_ARGS = 4  # the present wrapper's, last of all (wrap/present.lua)


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
    return "".join(_text(lib, constants) for lib in uses) + own + body


def assemble(path: str, constants: Mapping[str, str | int]) -> str:
    """The step's script: its libraries' text and its own, each preceded by the constants
    its header declares."""
    return _text(path, constants)


@cache
def write_step(
    source: str, *, wrote: Wrote, keyed: bool, turn: bool, present: bool, traced: bool = False
) -> str:
    """A write step (`source`, an assembled script) inside its wrappers: always `guard`;
    `present` for a call that names its acting agent (its four arguments come last but
    one); `keyed` for a call with an idempotencyKey (its eight arguments follow the step's
    own); `turn` for a post (its three arguments follow those); `traced` for a call that
    carries trace context (rooms.traces: its traceparent is the last argument, and TRACE,
    which lib/prelude.lua `append` records on each event; every other script's TRACE is
    rooms/store/engine.py's ''). Cached: the store asks once per step and kind, and Redis
    knows each result by its SHA."""
    wrappers = ["wrap/wrote", "wrap/guard"]
    step = "step"
    traces = 1 if traced else 0
    after = (PRESENT_ARGS if present else 0) + traces
    if turn:
        wrappers.append("wrap/turn")
        step = f"turn({step}, wrote_{wrote}, {after})"
        after += TURN_ARGS
    if keyed:
        wrappers.append("wrap/keyed")
        step = f"keyed({step}, wrote_{wrote}, {after})"
    if present:
        wrappers.append("wrap/present")
        step = f"present({step}, {traces})"
    return (
        "".join(_text(path, {}) for path in wrappers)
        + ("local TRACE = ARGV[#ARGV]\n" if traced else "")
        + f"local function step()\n{source}end\n"
        + f"return guard({step})()\n"
    )
