"""The grid (docs/architecture.md, "Where things live"): a feature is one word, the same
stem in each layer of rooms/, and no product module grows past ~600 lines without saying
why at its top. These fail when a change puts a tool, a service or a step somewhere a
newcomer would not look."""

from __future__ import annotations

import ast
from pathlib import Path

from rooms import registry
from rooms.tools import rows

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("rooms", "tenants", "calls", "mcp_gateway", "dashboard", "config")
MOST_LINES = 600
REASON = "One module on purpose:"


def _modules() -> list[Path]:
    return [
        path
        for package in PRODUCT
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def test_no_product_module_is_long_without_a_reason_at_its_top() -> None:
    long = []
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= MOST_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if REASON not in doc:
            long.append(f"{path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert not long, f"split these, or say why at the top ({REASON!r}): {long}"


def test_each_tool_lives_in_its_domain_module_with_its_description_as_its_docstring() -> None:
    tools_dir = ROOT / "rooms" / "tools"
    for tool in registry.TOOLS:
        module = tool.run.__module__
        assert module.startswith("rooms.tools."), (tool.name, module)
        assert (tools_dir / f"{module.rsplit('.', 1)[1]}.py").exists(), module
        assert tool.description == " ".join((tool.run.__doc__ or "").split()), tool.name
    assert rows.__name__ == "rooms.tools.rows"


def test_the_layers_share_their_stems() -> None:
    """Every domain of rooms/services and rooms/selectors has its tools in rooms/tools under
    the same name (a service no tool reaches has no business in the grid); the store and
    the Lua use the same words."""
    stems = {
        layer: {p.stem for p in (ROOT / "rooms" / layer).glob("*.py") if p.stem != "__init__"}
        for layer in ("tools", "services", "selectors", "store")
    }
    lua = {p.name for p in (ROOT / "rooms" / "lua").iterdir() if p.is_dir()}
    assert stems["services"] - stems["tools"] <= {"keyed", "lifecycle"}, stems["services"]
    assert stems["selectors"] - stems["tools"] <= {"room"}, stems["selectors"]
    for domain in ("plan", "context", "events", "presence", "locks", "vars", "reviews"):
        assert {domain} <= stems["tools"] & stems["store"] & lua, domain
    for domain in ("leases", "messages", "handoffs"):
        assert {domain} <= stems["tools"] & stems["services"] & stems["store"] & lua, domain


def test_no_door_is_imported_by_the_protocol_or_the_tenancy() -> None:
    """rooms/ imports neither tenants, operations nor a door; tenants/ imports neither
    operations (above it) nor a door; calls/ imports no door; the dashboard calls
    calls.runner, never mcp_gateway (a door calling another door)."""
    rules = {
        "rooms": ("tenants", "calls", "mcp_gateway", "dashboard", "config"),
        "tenants": ("calls", "mcp_gateway", "dashboard"),
        "calls": ("mcp_gateway", "dashboard"),
        "dashboard": ("mcp_gateway",),
    }
    broken = []
    for package, banned in rules.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                for name in names:
                    if name.split(".")[0] in banned:
                        broken.append(f"{path.relative_to(ROOT)}: {name}")
    assert not broken, broken
