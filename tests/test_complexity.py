"""Issue 32, point 5: the access checks stay readable, and `tenants/` stays free of HTTP.

- Every function in tenants/access.py has a cyclomatic complexity of at most 10, as ruff's
  mccabe rule (C901) measures it: `room_access`, the check on every tool call's path, was 18
  there (38 by radon, which also counts each `and`/`or`) before it was split into the parts
  that each decide one thing.
- No module of `tenants/` imports `django.http` or DRF (`rest_framework`, `drf_spectacular`):
  who is asking, from where and over which transport is the doors' to read (dashboard,
  mcp_gateway, whose `apis/` is the account API), and `tenants/` decides from plain values.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_COMPLEXITY = 10
MEASURED = ("tenants/access.py",)

# Django's own interfaces take the request by contract: a ModelAdmin's hooks
# (tenants/admin.py) and an authentication backend's authenticate(request, ...)
# (tenants/backends.py).
HTTP_BY_CONTRACT = {"tenants/admin.py", "tenants/backends.py"}
DRF = ("rest_framework", "drf_spectacular")


def test_access_functions_are_at_most_complexity_10() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--select",
            "C901",
            "--config",
            f"lint.mccabe.max-complexity={MAX_COMPLEXITY}",
            "--output-format",
            "json",
            *MEASURED,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr
    too_complex = [
        f"{Path(found['filename']).relative_to(ROOT)}:{found['location']['row']}: "
        f"{found['message']}"
        for found in json.loads(run.stdout)
    ]
    assert not too_complex, "split into functions that each decide one thing:\n" + "\n".join(
        too_complex
    )


def _imports_http(tree: ast.Module, modules: tuple[str, ...]) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        if any(name == m or name.startswith(f"{m}.") for name in names for m in modules):
            return True
    return False


def test_tenants_modules_import_neither_django_http_nor_drf() -> None:
    importing = []
    for path in sorted((ROOT / "tenants").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        # Django's interfaces in admin.py and backends.py take its request; none takes DRF's.
        modules = DRF if name in HTTP_BY_CONTRACT else ("django.http", *DRF)
        if _imports_http(ast.parse(path.read_text(), filename=name), modules):
            importing.append(name)
    assert not importing, "read the request in the door and pass plain values in:\n" + "\n".join(
        importing
    )
