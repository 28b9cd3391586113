"""The product's import graph, read from its source with `ast` (issue 32, point 3): no import
circles, and the store's engine is reached only through its public names.

An edge is an import that runs when its module runs: the module's top-level imports, and
those inside its functions (an import put in a function to dodge a circle is still the
circle, only hidden until the function is called). Imports under `if TYPE_CHECKING:` never
run and are left out. `from a.b import c` is an edge to `a.b.c` when that is a module, else
to `a.b`; a package's own `__init__` running before its submodule is not an edge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rooms", "tenants", "calls", "mcp_gateway", "dashboard", "config")
ENGINE = "rooms.store.engine"

# Circles that exist today outside rooms/store and rooms/lua (helper F's files), each a
# sorted tuple of its modules: listed so the owners of those modules can remove them (and
# this set with them). A new circle fails; so does one listed here that is gone.
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _tree(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_text(), str(path))
    except FileNotFoundError:  # a scratch file removed since the listing
        return ast.Module(body=[], type_ignores=[])


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import that can run: anywhere but under `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for other in node.orelse:
                yield from _imports(other)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def _base(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = package[: len(package) - node.level + 1]
    return ".".join([*package, *([node.module] if node.module else [])])


def graph() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _imports(_tree(path)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _base(name, path, node)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            edges[name] |= {t for t in targets if t in modules and t != name}
    return edges


def cycles(edges: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Each strongly connected component of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[tuple[str, ...]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(tuple(sorted(component)))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_product_has_no_import_circle() -> None:
    found = cycles(graph())
    assert found - KNOWN_CYCLES == set(), sorted(found - KNOWN_CYCLES)
    assert KNOWN_CYCLES - found == set(), f"gone, drop from KNOWN_CYCLES: {KNOWN_CYCLES - found}"


def test_the_graph_sees_a_circle_and_a_function_level_import() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}
    tree = ast.parse("def f():\n    import x\nif TYPE_CHECKING:\n    import y\n")
    assert [alias.name for node in _imports(tree) for alias in node.names] == ["x"]
    edges = graph()
    assert "rooms.store.connections" in edges[ENGINE]  # a module-level edge
    assert "rooms.store.engine" in edges["rooms.store.plan"]


def test_nothing_imports_an_underscored_name_of_the_engine() -> None:
    """What the engine offers the other store modules (and bench/) is its public API."""
    reaching = []
    for name, path in _modules().items():
        for node in _imports(_tree(path)):
            if isinstance(node, ast.ImportFrom) and _base(name, path, node) == ENGINE:
                reaching += [f"{name}: {a.name}" for a in node.names if a.name.startswith("_")]
    for path in (ROOT / "bench").rglob("*.py"):
        for node in _imports(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module == ENGINE:
                reaching += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert not reaching, reaching
