"""The store's grid (issue 23, point 1): rooms/store/<domain>.py holds one typed function
per atomic step, engine.py is the one module that sends a script to Redis; callers import
the module whose step they use (issue 32: no re-export package). (Every product module's
length is held by tests/test_layout.py.)"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import typing
from pathlib import Path

import rooms.store

STORE = Path(rooms.store.__file__).parent
# The commands that run a script on Redis or load one (client methods, or the first word of
# an execute_command).
SCRIPT_COMMANDS = {
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "script",
    "script_load",
    "fcall",
    "fcall_ro",
}
# What a domain module hands a script to: the engine's runners.
ENGINE_RUNNERS = {"run", "run_write", "run_on"}
# Not a domain: the package itself, the engine, the connections and the wake-ups.
PLUMBING = {"__init__", "engine", "connections", "wakeups"}


def _members() -> list[tuple[str, str, object]]:
    """(module, name, value) of every public name a store module defines."""
    found = []
    for path in sorted(STORE.glob("*.py")):
        module = importlib.import_module(f"rooms.store.{path.stem}")
        for name, value in vars(module).items():
            if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__:
                found.append((path.stem, name, value))
    return found


def _trees() -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text()) for path in sorted(STORE.glob("*.py"))}


def _public(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_") and n != "T"]


def test_only_the_engine_sends_a_script_to_redis() -> None:
    sending: dict[str, list[str]] = {}
    for name, tree in _trees().items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            command = node.func.attr
            if command == "execute_command" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    command = first.value.split()[0].lower()
            if command in SCRIPT_COMMANDS:
                sending.setdefault(name, []).append(command)
    assert set(sending) == {"engine"}, sending
    assert {"eval", "evalsha"} <= set(sending["engine"])


def test_a_domain_module_hands_every_script_to_the_engine() -> None:
    """Every `scripts.<X>_SCRIPT` a domain module names is an argument of the engine's
    runners (`run`, `run_write`, `run_on`): none is run, or changed, on the side."""
    strays = []
    for name, tree in _trees().items():
        if name in PLUMBING:
            continue
        handed: set[int] = set()
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ENGINE_RUNNERS
            ):
                handed |= {id(arg) for arg in node.args}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "scripts"
                and node.attr.endswith("_SCRIPT")
                and id(node) not in handed
            ):
                strays.append(f"{name}.py:{node.lineno} {node.attr}")
    assert not strays, strays


def test_every_step_outcome_is_a_literal() -> None:
    """A misspelt `step.outcome == "..."` is then a mypy error (strict_equality)."""
    steps, loose = [], []
    for _module, name, found in _members():
        if isinstance(found, type) and dataclasses.is_dataclass(found):
            hints = typing.get_type_hints(found)
            if "outcome" in hints:
                steps.append(name)
                if typing.get_origin(hints["outcome"]) is not typing.Literal:
                    loose.append(name)
    assert not loose, loose
    assert len(steps) >= 7, steps
