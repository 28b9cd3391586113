"""What ships is what runs: no module of a package pyproject.toml installs imports a
development tool (its `dev` extra: pytest, Playwright, ...). Tools that drive a browser or
check a deployment live outside those packages (ops/, scripts/, bench/)."""

from __future__ import annotations

import ast
import re
import tomllib
from fnmatch import fnmatch
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _shipped_modules() -> list[Path]:
    patterns = PROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = [
        p
        for p in sorted(ROOT.iterdir())
        if (p / "__init__.py").exists() and any(fnmatch(p.name, pattern) for pattern in patterns)
    ]
    assert {p.name for p in packages} >= {"config", "rooms", "tenants"}, packages
    return [path for package in packages for path in sorted(package.rglob("*.py"))]


def _dev_imports() -> set[str]:
    """The top-level names the dev extra's distributions can be imported as."""
    dev = {
        _normal(re.match(r"[A-Za-z0-9_.-]+", requirement).group())  # type: ignore[union-attr]
        for requirement in PROJECT["project"]["optional-dependencies"]["dev"]
    }
    names = {name.replace("-", "_") for name in dev}
    for module, distributions in packages_distributions().items():
        if any(_normal(d) in dev for d in distributions):
            names.add(module)
    return names


def test_no_shipped_module_imports_a_development_tool() -> None:
    banned = _dev_imports()
    assert {"pytest", "playwright", "yaml", "hypothesis"} <= banned, banned
    found = []
    for path in _shipped_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in banned]
    assert not found, f"a shipped module imports a development tool: {found}"
