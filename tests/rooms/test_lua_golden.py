"""Every step's assembled script, each library and each wrapper is pinned by its SHA-1
(tests/rooms/lua_golden.json). The Lua moved from Python strings to rooms/lua/*.lua (issue
23, point 2) without a byte changing; then, in a commit of its own, the wrappers became Lua
functions and the placeholders Lua locals, which changed 40 pins. A change to a script
changes its pin in the same commit, on purpose."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rooms import lua, scripts

GOLDEN = json.loads((Path(__file__).parent / "lua_golden.json").read_text())["scripts"]


def test_every_script_is_assembled_exactly_as_pinned() -> None:
    changed = []
    for name, pin in GOLDEN.items():
        text = getattr(scripts, name, None) or lua.assemble(pin["file"], scripts.CONSTANTS)
        if hashlib.sha1(text.encode()).hexdigest() != pin["sha1"]:
            changed.append(f"{name} ({pin['file']}.lua)")
    assert not changed, changed


def test_every_lua_file_is_pinned_and_every_script_constant_has_its_file() -> None:
    files = {str(p.relative_to(lua.LUA).with_suffix("")) for p in lua.LUA.rglob("*.lua")}
    assert files == {pin["file"] for pin in GOLDEN.values()}
    constants = {n for n in dir(scripts) if n.endswith(("_SCRIPT", "_WRAP"))}
    assert constants <= set(GOLDEN), constants - set(GOLDEN)


def test_a_header_documents_keys_and_is_never_sent() -> None:
    claim = (lua.LUA / "leases" / "lease_claim.lua").read_text()
    assert claim.startswith("--- KEYS[1] leases")
    assert "--- uses: prelude leases" in claim
    assert "KEYS[1] leases, KEYS[2] lease_expiry" not in scripts.LEASE_CLAIM_SCRIPT


def test_no_file_holds_a_placeholder_and_wrappers_are_functions() -> None:
    """Issue 23, point 2: nothing is spliced into a script's text. A file's constants are
    Lua locals the loader declares from its header; a wrapper is a function of the step."""
    import re

    for path in lua.LUA.rglob("*.lua"):
        body = "".join(
            line for line in path.read_text().splitlines(True) if not line.startswith("---")
        )
        assert not re.search(r"__[A-Z][A-Z_]*__", body), path
    for wrapper in ("guard", "keyed", "turn", "present"):
        assert f"local function {wrapper}(step" in (lua.LUA / "wrap" / f"{wrapper}.lua").read_text()
    search = lua.assemble("lib/search", scripts.CONSTANTS)
    assert f"local SEARCH_FIELD_BYTES = {scripts.SEARCH_FIELD_BYTES}\n" in search


def test_a_write_step_is_composed_of_its_wrappers_around_its_own_text() -> None:
    """Issue 32, point 4: one script a step, whatever the call carries; its wrappers read
    the call's envelope (CALL) and the room tail (ROOM) by name, never by position."""
    source = scripts.POST_EVENT_SCRIPT
    step = lua.write_step(source, wrote="ok")
    assert step.startswith(lua.ROOM_KEYS + "local CALL = cjson.decode(ARGV[#ARGV])\n")
    assert step.endswith(
        f"local function step()\n{source}end\nreturn guard(present(keyed(step, wrote_ok)))()\n"
    )
    assert "local function iso_from_ms(ms)" in step  # the present wrapper's library
    assert "local function turn(" not in step
    post = lua.write_step(source, wrote="ok", post=True)
    assert post.endswith("return guard(present(keyed(turn(step, wrote_ok), wrote_ok)))()\n")
    assert lua.write_step(source, wrote="ok") is step
    for path in lua.LUA.rglob("*.lua"):
        body = "".join(
            line for line in path.read_text().splitlines(True) if not line.startswith("---")
        )
        assert "KEYS[#KEYS" not in body and "ARGV[#ARGV -" not in body, path


def test_the_room_tail_is_read_by_name_in_the_order_the_store_sends_it(settings: Any) -> None:
    """...and is built once per room and key prefix, always under the prefix of the moment."""
    from rooms.keys import ROOM_TAIL, RoomKeys, room_tail

    room = RoomKeys("r")
    assert room_tail(room) == tuple(getattr(room, name) for name in ROOM_TAIL)
    assert room_tail(room) is room_tail(RoomKeys("r"))
    settings.REDIS_KEY_PREFIX = "another"
    assert room_tail(room) == tuple(getattr(room, name) for name in ROOM_TAIL)
    assert room_tail(room)[0] == "another:{r}:claims"
    assert f"KEYS[#KEYS - {len(ROOM_TAIL)} + i]" in lua.ROOM_KEYS
    assert all(f"'{name}'" in lua.ROOM_KEYS for name in ROOM_TAIL)
