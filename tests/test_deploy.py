"""docker-compose.yml describes the production layout `make prod-check` runs (issue 26,
point 3): Caddy with automatic certificates in front of web replicas, a worker, beat and
the relay, Postgres, Redis with AOF on, migrations before the web starts, healthchecks,
pinned images, a non-root image, and a .env.example that holds every setting Compose
requires; the Compose tool accepts it where one is installed, and refuses it without one
of those settings."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from tests.test_production import settings_of

ROOT = Path(__file__).resolve().parents[1]


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


def test_compose_describes_the_production_layout() -> None:
    services = compose()["services"]
    assert services["web"]["deploy"]["replicas"] >= 2
    assert "ports" not in services["web"]  # replicas are reached through Caddy only
    caddy = services["caddy"]
    assert "443:443" in caddy["ports"] and "80:80" in caddy["ports"]  # ACME's challenge too
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in caddy["volumes"]
    assert caddy["environment"]["UPSTREAMS"] == "web:8000"
    assert any(v.startswith("caddy_data:") for v in caddy["volumes"])  # certificates kept
    assert services["web"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["migrate"]["command"][-2:] == ["migrate", "--noinput"]
    for name in ("worker", "beat", "relay"):  # none starts on a database not yet migrated
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        ), name
    assert "worker" in services["worker"]["command"]
    assert "beat" in services["beat"]["command"]
    assert services["relay"]["command"][-1] == "relay_webhooks"
    redis_cmd = services["redis"]["command"]
    assert redis_cmd[redis_cmd.index("--appendonly") + 1] == "yes"
    for name in ("web", "postgres", "redis", "worker"):
        assert services[name]["healthcheck"]["test"], name
    env = services["web"]["environment"]
    assert env["PRODUCTION"] == "1" and env["METRICS_ACCESS"] == "token"
    assert env["DATABASE_URL"].startswith("postgres://") and env["REDIS_URL"].startswith("redis://")
    assert env["PROMETHEUS_MULTIPROC_DIR"] and services["web"]["tmpfs"]
    assert "./backups:/backups" in services["web"]["volumes"]  # manage.py backup's place


def test_every_image_is_pinned_and_ours_runs_as_no_root() -> None:
    for name, service in compose()["services"].items():
        image = service["image"]
        if image.startswith("roomservice:"):
            continue
        assert re.search(r":\d+\.\d+(\.\d+)?(-[a-z]+)?$", image), f"{name}: {image} not pinned"
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1[1-3]\.\d+-slim", dockerfile, re.M)
    user = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert user and not user[-1].startswith(("root", "0"))
    assert "pip install --no-cache-dir ." in dockerfile  # the service's packages, no dev extra


def test_env_example_holds_every_setting_compose_requires() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    required = set(re.findall(r"\$\{([A-Z_]+):\?", text))
    example = dict(
        line.split("=", 1)
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert required == {
        "POSTGRES_PASSWORD",
        "SECRET_KEY",
        "ROOM_EXPORT_SIGNING_KEY",
        "SITE_ADDRESS",
        "METRICS_TOKEN",
    }
    assert required <= set(example), required - set(example)


def _client_seen(trusted: str, peer: str, forwarded_for: str) -> str:
    """The client address the service sees behind uvicorn's proxy-header handling, trusting
    `trusted` (its --forwarded-allow-ips), for a request from `peer` carrying X-Forwarded-For."""
    seen: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope["client"][0])

    scope = {
        "type": "http",
        "scheme": "http",
        "client": (peer, 40000),
        "headers": [(b"x-forwarded-for", forwarded_for.encode())],
    }
    asyncio.run(ProxyHeadersMiddleware(app, trusted_hosts=trusted)(scope, None, None))  # type: ignore[arg-type]
    return seen[0]


def test_the_web_replicas_believe_forwarded_addresses_from_caddy_alone() -> None:
    """The reviewer's finding (issue 31, I1): web trusted X-Forwarded-For from any peer, so
    any other container on its network could write a client address of its choosing (and
    rotate past every per-address throttle). Now only Caddy's fixed address is trusted."""
    services, networks = compose()["services"], compose()["networks"]
    command = services["web"]["command"]
    trusted = command[command.index("--forwarded-allow-ips") + 1]
    caddy_address = services["caddy"]["networks"]["edge"]["ipv4_address"]
    assert trusted == caddy_address
    subnet = networks["edge"]["ipam"]["config"][0]["subnet"]
    assert ipaddress.ip_address(caddy_address) in ipaddress.ip_network(subnet)
    assert "edge" in services["web"]["networks"]
    assert [name for name, s in services.items() if "edge" in (s.get("networks") or [])] == [
        "web",
        "caddy",
    ]
    # The attack: another container of the network (say the worker, or one an attacker got
    # into) sends a made-up address. Ignored; Caddy's is believed.
    assert _client_seen(trusted, "172.30.253.7", "203.0.113.9") == "172.30.253.7"
    assert _client_seen(trusted, caddy_address, "203.0.113.9") == "203.0.113.9"
    # The image alone (docker run, no Compose) trusts only what FORWARDED_ALLOW_IPS names.
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "--forwarded-allow-ips" not in dockerfile and '"*"' not in dockerfile
    assert "*" not in str(command)


def _required_placeholders() -> dict[str, str]:
    """The settings .env.example marks required, with the placeholder it holds for each."""
    found: dict[str, str] = {}
    required = False
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.startswith("# Required."):
            required = True
        elif line and not line.startswith("#"):
            if required:
                name, value = line.split("=", 1)
                found[name] = value
            required = False
    return found


def test_production_refuses_every_placeholder_of_the_env_example() -> None:
    """What the reviewer did (issue 31, P5): `.env.example` copied as it is, with PRODUCTION=1,
    one placeholder at a time; each is refused, naming it, and filled-in values start."""
    placeholders = _required_placeholders()
    assert set(placeholders) == {
        "SITE_ADDRESS",
        "SECRET_KEY",
        "ROOM_EXPORT_SIGNING_KEY",
        "POSTGRES_PASSWORD",
        "METRICS_TOKEN",
    }
    filled = {
        "PRODUCTION": "1",
        "SITE_ADDRESS": "rooms.example.net",
        "ALLOWED_HOSTS": "rooms.example.net",
        "SECRET_KEY": "k" * 50,
        "ROOM_EXPORT_SIGNING_KEY": "e" * 50,
        "POSTGRES_PASSWORD": "p" * 30,
        "METRICS_TOKEN": "m" * 30,
        "METRICS_ACCESS": "token",
    }
    assert settings_of(filled).returncode == 0, settings_of(filled).stderr
    for name, placeholder in placeholders.items():
        refused = settings_of({**filled, name: placeholder})
        assert refused.returncode != 0, name
        assert f"{name}: still .env.example's placeholder" in refused.stderr, refused.stderr
    # As Compose passes them on: the site's name as ALLOWED_HOSTS, the password in the URL.
    site = settings_of({**filled, "ALLOWED_HOSTS": placeholders["SITE_ADDRESS"]})
    assert "ALLOWED_HOSTS: still" in site.stderr
    url = f"postgres://roomservice:{placeholders['POSTGRES_PASSWORD']}@postgres:5432/roomservice"
    assert "DATABASE_URL: still" in settings_of({**filled, "DATABASE_URL": url}).stderr
    short = settings_of({**filled, "SECRET_KEY": "short"})
    assert short.returncode != 0 and "SECRET_KEY is shorter than 32" in short.stderr


def _compose_tool() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if (
        shutil.which("docker")
        and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    ):
        return ["docker", "compose"]
    pytest.skip("no Compose tool on this machine (apt-get install docker-compose)")


def test_compose_config_is_accepted_with_the_example_env_and_refused_without(
    tmp_path: Path,
) -> None:
    tool = _compose_tool()
    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")
    ok = subprocess.run([*tool, "config", "-q"], cwd=tmp_path, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    env = (tmp_path / ".env").read_text()
    (tmp_path / ".env").write_text(re.sub(r"(?m)^SECRET_KEY=.*$", "SECRET_KEY=", env))
    refused = subprocess.run([*tool, "config", "-q"], cwd=tmp_path, capture_output=True, text=True)
    assert refused.returncode != 0 and "SECRET_KEY" in refused.stderr


def test_the_caddyfile_is_valid_for_the_compose_layout(tmp_path: Path) -> None:
    if shutil.which("caddy") is None:
        pytest.skip("no caddy (apt-get install caddy; make test installs it when it can)")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path),
        "SITE_ADDRESS": "rooms.example.com",
        "UPSTREAMS": "web:8000",
    }
    done = subprocess.run(
        [
            "caddy",
            "validate",
            "--config",
            str(ROOT / "deploy" / "Caddyfile"),
            "--adapter",
            "caddyfile",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
