"""`make run` installs only what the service runs on, in a .venv made by a Python it
supports (issue 26, point 1): scripts/venv-ensure, driven with stand-in interpreters that
report the version each test needs, and the Makefile's two install targets."""

from __future__ import annotations

import os
import stat
import subprocess
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


def test_the_service_needs_nothing_from_the_dev_extra() -> None:
    """Every package the product imports is a runtime dependency (httpx: the webhooks)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = " ".join(project["dependencies"])
    for needed in ("httpx", "django", "mcp", "uvicorn", "celery", "redis", "psycopg"):
        assert needed in runtime, needed
    dev = " ".join(project["optional-dependencies"]["dev"])
    for tool in ("pytest", "playwright", "mypy", "ruff"):
        assert tool in dev and tool not in runtime, tool


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
