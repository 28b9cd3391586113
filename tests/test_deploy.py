"""docker-compose.yml describes production: web replicas behind one port, a worker,
Postgres, Redis with AOF on — and the Compose tool accepts it where one is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


def test_compose_describes_the_production_shape() -> None:
    services = compose()["services"]
    assert services["web"]["deploy"]["replicas"] >= 2
    assert "ports" not in services["web"]  # replicas share one port, through the balancer
    assert services["lb"]["ports"]
    assert "worker" in services["worker"]["command"]
    assert "beat" in services["beat"]["command"]
    assert services["relay"]["command"][-1] == "relay_webhooks"
    assert services["postgres"]["image"].startswith("postgres")
    redis_cmd = services["redis"]["command"]
    assert redis_cmd[redis_cmd.index("--appendonly") + 1] == "yes"
    env = services["web"]["environment"]
    assert env["DATABASE_URL"].startswith("postgres://") and env["REDIS_URL"].startswith("redis://")


def test_compose_config_is_accepted_by_the_compose_tool() -> None:
    if shutil.which("docker-compose"):
        cmd = ["docker-compose", "-f", "docker-compose.yml", "config", "-q"]
    elif (
        shutil.which("docker")
        and subprocess.run(
            ["docker", "compose", "version"], capture_output=True, check=False
        ).returncode
        == 0
    ):
        cmd = ["docker", "compose", "-f", "docker-compose.yml", "config", "-q"]
    else:
        pytest.skip("no Compose tool on this machine (apt-get install docker-compose)")
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
