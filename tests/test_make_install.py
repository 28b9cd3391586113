"""`make run` installs only what the service runs on, in a .venv made by a Python it
supports (issue 26, point 1): scripts/venv-ensure, driven with stand-in interpreters that
report the version each test needs, and the Makefile's two install targets."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENSURE = ROOT / "scripts" / "venv-ensure"

# A stand-in for a Python of one version: answers venv-ensure's two questions (supported?
# which version?) and makes a "venv" whose bin/python is a copy of itself.
STAND_IN = """#!/bin/sh
VERSION={version}
case "$*" in
  *sys.exit*) case "$VERSION" in 3.11.*|3.12.*|3.13.*) exit 0;; *) exit 1;; esac;;
  *print*) echo "$VERSION";;
  "-m venv "*) mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && echo "$VERSION" > "$3/made-by";;
esac
"""


def _python(folder: Path, name: str, version: str) -> Path:
    path = folder / name
    path.write_text(STAND_IN.format(version=version))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _ensure(
    tmp_path: Path, pythons: dict[str, str], asked: str = ""
) -> subprocess.CompletedProcess[str]:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    # The machine's own Pythons (in /usr/bin) are hidden behind stand-ins that do not run.
    for name in ("python3", "python3.13", "python3.12", "python3.11"):
        (bindir / name).write_text("#!/bin/sh\nexit 127\n")
        (bindir / name).chmod(0o755)
    for name, version in pythons.items():
        _python(bindir, name, version)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run(
        ["sh", str(ENSURE), str(tmp_path / ".venv"), asked],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def _made_by(tmp_path: Path) -> str:
    return (tmp_path / ".venv" / "made-by").read_text().strip()


def test_no_supported_python_says_which_it_wants(tmp_path: Path) -> None:
    done = _ensure(tmp_path, {"python3": "3.10.12"})
    assert done.returncode == 1
    assert "needs Python 3.11, 3.12 or 3.13" in done.stderr
    assert "python3 (3.10.12)" in done.stderr and "PYTHON=" in done.stderr
    assert not (tmp_path / ".venv").exists()


def test_a_supported_python_makes_the_venv_and_a_second_run_keeps_it(tmp_path: Path) -> None:
    assert _ensure(tmp_path, {"python3": "3.10.12", "python3.12": "3.12.3"}).returncode == 0
    assert _made_by(tmp_path) == "3.12.3"
    (tmp_path / ".venv" / "kept").write_text("")
    again = _ensure(tmp_path, {"python3": "3.10.12", "python3.12": "3.12.3"})
    assert again.returncode == 0 and (tmp_path / ".venv" / "kept").exists()


def test_a_venv_of_an_unsupported_python_is_made_again(tmp_path: Path) -> None:
    old = tmp_path / ".venv" / "bin"
    old.mkdir(parents=True)
    _python(old, "python", "3.9.18")
    done = _ensure(tmp_path, {"python3": "3.11.7"})
    assert done.returncode == 0, done.stderr
    assert "made by Python 3.9.18" in done.stdout and _made_by(tmp_path) == "3.11.7"


def test_a_venv_whose_python_no_longer_runs_is_made_again(tmp_path: Path) -> None:
    old = tmp_path / ".venv" / "bin"
    old.mkdir(parents=True)
    os.symlink("/nonexistent/python3.11", old / "python")
    done = _ensure(tmp_path, {"python3": "3.11.7"})
    assert done.returncode == 0 and "no longer runs" in done.stdout
    assert _made_by(tmp_path) == "3.11.7"


def test_a_venv_of_another_python_than_the_one_asked_for_is_made_again(tmp_path: Path) -> None:
    assert _ensure(tmp_path, {"python3": "3.12.3", "python3.11": "3.11.7"}).returncode == 0
    assert _made_by(tmp_path) == "3.12.3"
    done = _ensure(tmp_path, {"python3": "3.12.3", "python3.11": "3.11.7"}, asked="python3.11")
    assert done.returncode == 0 and _made_by(tmp_path) == "3.11.7"
    # Asked for the one it was made by: kept.
    (tmp_path / ".venv" / "kept").write_text("")
    assert _ensure(tmp_path, {"python3.11": "3.11.7"}, asked="python3.11").returncode == 0
    assert (tmp_path / ".venv" / "kept").exists()


@pytest.mark.parametrize(("target", "extra"), [("install", False), ("install-dev", True)])
def test_make_run_installs_the_service_and_make_test_the_tools_too(
    target: str, extra: bool, tmp_path: Path
) -> None:
    """What each target would run on a fresh checkout (make -n, in a copy with no .venv)."""
    for name in ("Makefile", "pyproject.toml"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    planned = subprocess.run(
        ["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, timeout=30
    ).stdout
    assert "pip install" in planned
    assert ("-e '.[dev]'" in planned) is extra
    assert ("-e .\n" in planned or "-e . " in planned) is not extra
    run = subprocess.run(
        ["make", "-n", "run"], cwd=tmp_path, capture_output=True, text=True, timeout=30
    ).stdout
    assert "[dev]" not in run and "config.serve" in run


# What the service's processes load besides its own modules: the worker with its threads
# pool and beat, the broker's Redis transport (kombu's, loaded only when it connects: it
# imports `packaging`, which kombu does not declare), uvicorn's standard extras.
PROCESS_MODULES = (
    "celery.apps.worker",
    "celery.apps.beat",
    "celery.concurrency.thread",
    "kombu.transport.redis",
    "uvicorn.loops.auto",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.lifespan.on",
)
# Loaded when present, not needed (each import is in a try/except ImportError).
OPTIONAL = {
    "greenlet": "celery.utils.threads takes its thread ident from it",
    "pygments": "rest_framework.compat highlights the browsable API with it",
}
LOADED = """
import importlib, json, pkgutil, sys
import django
django.setup()
for package in ("config", "rooms", "tenants", "calls", "dashboard", "mcp_gateway"):
    for found in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        if found.name not in ("config.serve",):
            importlib.import_module(found.name)
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})))
"""


def _run_closure() -> set[str]:
    """The distributions `pip install .` brings (the project's dependencies, without its
    extras, and theirs, with the extras asked for), by canonical name."""
    from importlib.metadata import distribution

    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    seen: set[tuple[str, frozenset[str]]] = set()
    todo: list[tuple[str, frozenset[str]]] = [("roomservice", frozenset())]
    while todo:
        name, extras = todo.pop()
        if (canonicalize_name(name), extras) in seen:
            continue
        seen.add((canonicalize_name(name), extras))
        # The project's own from pyproject.toml (what a fresh clone installs), the rest
        # from what is installed.
        lines = project["dependencies"] if name == "roomservice" else distribution(name).requires
        for line in lines or []:
            req = Requirement(line)
            wanted = not req.marker or any(
                req.marker.evaluate({**default_environment(), "extra": extra})
                for extra in (extras or {""})
            )
            if wanted:
                todo.append((req.name, frozenset(req.extras)))
    return {name for name, _ in seen}


def test_every_package_the_processes_load_is_a_run_dependency() -> None:
    """A fresh `make run` installs only the run dependencies; the suite runs beside the dev
    extra's tools, which bring packages of their own (pytest brought `packaging`, so the
    worker that died at start on a fresh install never did here). Every distribution the
    web, worker, beat and relay modules load must come with `pip install .` alone."""
    from importlib.metadata import packages_distributions

    from packaging.utils import canonicalize_name

    done = subprocess.run(
        [sys.executable, "-c", LOADED, *PROCESS_MODULES],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    owners = packages_distributions()
    closure = _run_closure()
    missing = {
        f"{module} ({dist})"
        for module in json.loads(done.stdout.splitlines()[-1])
        for dist in owners.get(module, [])
        if canonicalize_name(dist) not in {*closure, "roomservice"} and module not in OPTIONAL
    }
    assert not missing, f"loaded, but not a run dependency in pyproject.toml: {sorted(missing)}"
    dev = " ".join(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    for tool in ("pytest", "playwright", "mypy", "ruff"):
        assert tool not in dev, tool


def test_a_folder_that_is_no_venv_is_never_removed(tmp_path: Path) -> None:
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "precious.txt").write_text("mine")
    done = _ensure(tmp_path, {"python3": "3.11.7"})
    assert done.returncode == 1 and "not a virtual environment" in done.stderr
    assert (tmp_path / ".venv" / "precious.txt").read_text() == "mine"


def test_a_python_asked_for_by_a_path_with_spaces_is_one_name(tmp_path: Path) -> None:
    folder = tmp_path / "my pythons"
    folder.mkdir()
    python = _python(folder, "python3.12", "3.12.3")
    done = _ensure(tmp_path, {}, asked=str(python))
    assert done.returncode == 0, done.stderr
    assert _made_by(tmp_path) == "3.12.3"
