"""A tool is written once (issue 32): its name in rooms/registry.py's TOOLS_ORDER, the one
ordered list, and everything else about it (its domain, its docs/protocol.md section, the
profiles that list it) on its row in rooms/tools/<domain>.py. Nothing else in the product
writes the list again: a tuple, list or set of five or more tool names, or a dict keyed by
them, outside TOOLS_ORDER fails here, naming the place. Derive it from the rows instead
(`[t.name for t in registry.TOOLS if ...]`, `profiles.TOOLS[...]`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ops import tooldocs
from rooms import profiles, registry

ROOT = Path(__file__).resolve().parents[1]
# Fewer than this many tool names together is a few tools a piece of code is about, not a
# list of tools.
MOST_NAMES = 4
# Not product code: the tests pin the lists (tests/rooms/test_registry.py pins tools/list's
# order, tests/rooms/test_profiles.py core's); the rest holds no Python of ours.
NOT_PRODUCT = {"tests", "var", "test-output", "node_modules", "static", "templates", "docs"}
# Lists written on purpose, each with why and what holds it to the rows.
ALLOWED = {
    # The one list.
    ("rooms/registry.py", "TOOLS_ORDER"),
    # The conformance kit runs against other servers and imports nothing of ours, so it
    # says roomd's tools itself; tests/rooms/test_profiles.py holds it to the rows' roomd=True.
    ("conformance/runner.py", "ROOMD_TOOLS"),
    # A workload, not a list of the tools: the five calls the load bench mixes (bench/run.py
    # times the same five).
    ("bench/loads.py", "MIX"),
}
TOOL_NAMES = frozenset(registry.TOOLS_BY_NAME)


def _product_files() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not (set(path.relative_to(ROOT).parts[:-1]) & NOT_PRODUCT)
        and not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
        and "egg-info" not in str(path)
    )


def _named(nodes: list[ast.expr | None]) -> int:
    return sum(
        1
        for node in nodes
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in TOOL_NAMES
    )


def _lists_of_tools(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, the name it is assigned to, or "") of every literal naming > MOST_NAMES tools."""
    targets: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            name = target.id if isinstance(target, ast.Name) else ast.unparse(target)
            for inner in ast.walk(node.value):
                targets.setdefault(id(inner), name)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            count = _named(list(node.elts))
        elif isinstance(node, ast.Dict):
            count = _named(list(node.keys))
        else:
            continue
        if count > MOST_NAMES:
            found.append((node.lineno, targets.get(id(node), "")))
    return found


def test_no_product_code_writes_the_list_of_tools_again() -> None:
    places = []
    for path in _product_files():
        where = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, name in _lists_of_tools(tree):
            if (where, name) not in ALLOWED:
                places.append(f"{where}:{line} {name or '(a literal)'}")
    assert not places, (
        "a list of tool names written again (derive it from registry.TOOLS, or say why in "
        f"ALLOWED): {places}"
    )


def test_the_check_sees_a_list_of_tools_written_again() -> None:
    names = ", ".join(repr(n) for n in registry.TOOLS_ORDER[:5])
    tree = ast.parse(f"CORE = frozenset({{{names}}})\nFEW = ({names.rsplit(',', 1)[0]})\n")
    assert _lists_of_tools(tree) == [(1, "CORE")]


def test_the_one_list_and_the_rows_agree() -> None:
    """Every row is in TOOLS_ORDER once, in the order tools/list lists them, and what the
    profiles and the docs read from a row is on the row."""
    assert [t.name for t in registry.TOOLS] == list(registry.TOOLS_ORDER)
    assert len(set(registry.TOOLS_ORDER)) == len(registry.TOOLS_ORDER)
    for tool in registry.TOOLS:
        assert tool.run.__module__.startswith("rooms.tools."), tool.name
        assert tooldocs.PROTOCOL_SECTIONS[tool.name] == tool.section != ""
        assert (tool.name in profiles.TOOLS["core"]) == tool.core
        assert (tool.name in profiles.TOOLS["roomd"]) == tool.roomd


def test_what_the_docs_say_core_and_roomd_hold_is_what_the_rows_say() -> None:
    """A count of a profile's tools in prose (README.md, docs/) is the rows' count; a count
    of every tool is not written (docs/protocol.md's table says `all`)."""
    said = {
        "core": r"(\d+) tools of the everyday workflow",
        "roomd": r"roomd's (\d+) tools|roomd lists its (\d+) tools|roomd's (\d+) and ours",
    }
    wrong = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for profile, pattern in said.items():
            for found in re.finditer(pattern, text):
                count = int(next(g for g in found.groups() if g))
                if count != len(profiles.TOOLS[profile]):  # type: ignore[index]
                    wrong.append(f"{path.relative_to(ROOT)}: {found.group(0)!r}")
    assert not wrong, wrong
