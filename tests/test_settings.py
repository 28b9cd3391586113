"""The settings: one module per concern under config/settings/, each reading the environment
through config.env alone; the suite runs on tests/settings.py, the service's settings with
the tests' own limits."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

from config.celery import app as celery_app

ROOT = Path(__file__).resolve().parent.parent


def test_every_settings_module_reads_the_environment_through_config_env() -> None:
    readers = []
    for path in sorted((ROOT / "config" / "settings").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                if {"os", "environ", "getenv"} & set(names):
                    readers.append(f"{path.relative_to(ROOT)}: line {node.lineno}")
    assert not readers, f"read the environment with config.env's functions: {readers}"


def test_the_suite_runs_on_the_test_settings() -> None:
    assert settings.SETTINGS_MODULE == "tests.settings"
    assert settings.RATE_LIMIT_PER_MINUTE == 1_000_000
    assert settings.SIGNUPS_PER_ADDRESS_PER_HOUR == 1_000_000
    assert settings.CELERY_TASK_ALWAYS_EAGER and celery_app.conf.task_always_eager
