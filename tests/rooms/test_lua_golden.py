"""The Lua moved from Python strings to rooms/lua/*.lua (issue 23, point 2) without a byte
changing: every step's assembled script, each library and each wrapper has the SHA-1 it had
before the move (tests/rooms/lua_golden.json). A change to a script changes its pin in the
same commit, on purpose."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rooms import lua, scripts

GOLDEN = json.loads((Path(__file__).parent / "lua_golden.json").read_text())["scripts"]


def test_every_script_is_assembled_exactly_as_pinned() -> None:
    changed = []
    for name, pin in GOLDEN.items():
        text = getattr(scripts, name, None) or lua.assemble(pin["file"], scripts.FILL)
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
