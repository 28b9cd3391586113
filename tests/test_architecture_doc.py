"""docs/architecture.md names the write step's wrappers the code has (issue 32, point 6):
its layout lists exactly the files of rooms/lua/wrap/, and every wrapper file the walk
names exists. And its layout has an entry for each product package."""

from __future__ import annotations

import re
from pathlib import Path

from rooms import lua
from tests.test_layout import PRODUCT

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
WRAPPERS = {path.stem for path in (lua.LUA / "wrap").glob("*.lua")}


def _layout_entry() -> str:
    """The layout's `wrap/` entry: its line and the lines that continue it."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("wrap/"))
    indent = len(lines[start + 1]) - len(lines[start + 1].lstrip())
    entry = [lines[start]]
    for line in lines[start + 1 :]:
        if len(line) - len(line.lstrip()) != indent or not line.strip():
            break
        entry.append(line)
    return "\n".join(entry)


def test_the_layout_names_exactly_the_wrappers_that_exist() -> None:
    assert set(re.findall(r"\b(\w+)\.lua\b", _layout_entry())) == WRAPPERS


def test_every_wrapper_the_doc_names_exists_and_the_walk_names_each() -> None:
    text = DOC.read_text()
    named = set(re.findall(r"wrap/(\w+)\.lua", text))
    assert named <= WRAPPERS, named - WRAPPERS
    walk = text[text.index("`run_write`**") :]
    assert {w for w in WRAPPERS if f"`{w}.lua`" in walk} == WRAPPERS
    assert "KEYS[#KEYS" not in text and "_run_write" not in text


def test_the_layout_has_an_entry_for_each_product_package() -> None:
    entries = {line.split()[0] for line in DOC.read_text().splitlines() if line[:1].isalpha()}
    assert {f"{package}/" for package in PRODUCT} <= entries, PRODUCT
