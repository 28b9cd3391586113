"""`make run`: the whole service on embedded defaults, in one command.

Checks that HOST:PORT is free (a second `make run` starts nothing and says so), starts the
embedded Redis unless REDIS_URL is set, migrates, creates a demo team key on the first
start when API_KEYS is empty (printed once), then serves the ASGI app with uvicorn on
HOST:PORT. Ctrl-C or SIGTERM stops everything it started. What it writes (the data folder,
its SQLite database, Redis files, secret, schedule, metrics) only its owner can read.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from config.lifecycle import child_of_this_process  # noqa: E402  # needs BASE_DIR on the path

# What the banner's snippets connect with: the everyday workflow's tools (rooms.profiles
# "core"), as the dashboard's Connect page prints them; the key itself keeps every tool.
MCP_PATH = "/mcp?tools=core"
# A stop waits this long for the requests under way, then cuts what is still open: a
# waiting call may wait 10 minutes on the REST door (rooms.refs.LONG_WAIT_MAX_MS), a stream
# longer; their clients ask again (the guard's waiter, an SSE client's reconnection).
GRACEFUL_SHUTDOWN_SECONDS = 10


def _banner(
    host: str,
    port: int,
    secret: str | None,
    room_id: str | None = None,
    sign_in: str = "",
    claim: str = "",
    notice: str = "",
) -> str:
    """What `make run` prints: the endpoints; on a local run the demo room, the operator's
    one-time sign-in link and, while nobody has claimed the demo team, the sign-up link
    that claims it (`claim`: its token is the proof that the person is the one at this
    console); `notice`, when first run gave nobody the demo team (tenants.firstrun)."""
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base = f"http://{shown_host}:{port}"
    url = f"{base}{MCP_PATH}"
    lines = [
        "",
        "Roomservice is running.",
        f"  MCP endpoint : {url}",
        f"  Health       : {base}/health",
    ]
    if room_id:
        lines += [
            f"  Dashboard    : {base}/  (the demo team's room: {base}/rooms/{room_id}/)",
            f'  Demo room    : {room_id}  (tell your agents to use roomId "{room_id}")',
        ]
    if sign_in:
        lines += [
            "",
            "Sign in to the dashboard, as the demo team's local operator (this link works once;",
            "every start prints a new one):",
            f"  {base}{sign_in}",
            "Another link, without a restart:  .venv/bin/python manage.py signin_link",
        ]
    if claim:
        lines += [
            "or create an account there to claim the demo team (open it on this machine, and",
            "keep it to yourself: the first account made through it owns the demo team):",
            f"  {base}{claim}",
        ]
    if notice:
        lines += ["", *textwrap.wrap(notice, 90)]
    if secret:
        config = {
            "mcpServers": {
                "roomservice": {
                    "type": "http",
                    "url": url,
                    "headers": {"Authorization": f"Bearer {secret}"},
                }
            }
        }
        lines += [
            "",
            "A demo team key was created (shown this once; it is stored only as a digest):",
            f"  {secret}",
            "",
            "Claude Code:",
            f'  claude mcp add --transport http roomservice "{url}" \\',
            f'    --header "Authorization: Bearer {secret}"',
            *(
                [f'  then: claude "Join the room {room_id}: heartbeat, then get_my_summary."']
                if room_id
                else []
            ),
            "",
            "Any MCP client (e.g. .cursor/mcp.json):",
            *("  " + line for line in json.dumps(config, indent=2).splitlines()),
        ]
    elif not os.environ.get("API_KEYS"):
        lines += [
            "",
            "The demo key was printed on the first start. Mint another with:",
            "  .venv/bin/python manage.py mint_key demo",
        ]
    return "\n".join(lines) + "\n"


PORT_BUSY = (
    "Port {port} on {host} is already in use{holder}, so nothing was started. Stop that, "
    "or run this one on another port: PORT={other} make run"
)
PORT_REFUSED = "Cannot listen on {host}:{port} ({reason}), so nothing was started."


def _port_refusal(host: str, port: int) -> str | None:
    """Why uvicorn could not listen on host:port, found by binding it as uvicorn will
    (SO_REUSEADDR) before anything is started or printed; None when it can."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return PORT_REFUSED.format(host=host, port=port, reason=exc.strerror)
            return PORT_BUSY.format(
                host=host, port=port, holder=_holder(host, port), other=port + 1
            )
    return None


def _holder(host: str, port: int) -> str:
    """Who listens there, when it is cheaply known: another Roomservice answers /health (with
    200, or 503 while something it needs is down)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base = f"http://{shown}:{port}"
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=2) as answer:
            body = answer.read()
    except urllib.error.HTTPError as refused:
        body = refused.read()
    except OSError:
        return " by another program"
    try:
        ours = isinstance(found := json.loads(body), dict) and "checks" in found
    except ValueError:
        ours = False
    return f" by another Roomservice ({base}/)" if ours else " by another program"


def _metrics_folder(folder: Path) -> None:
    """Every process this starts (web workers, the Celery worker, the relay) writes its
    metrics here, and /metrics sums them (config.telemetry); a run starts it empty."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(BASE_DIR))
    from config.embedded_redis import ensure_redis_url

    # Not from config.settings: Django must read REDIS_URL only after we have set it.
    var_dir = Path(os.environ.get("ROOMSERVICE_VAR_DIR", BASE_DIR / "var"))

    host = os.environ.get("HOST", "127.0.0.1")
    port = int(os.environ.get("PORT", "8000"))
    workers = int(os.environ.get("WEB_CONCURRENCY", "1"))
    # Ctrl-C and SIGTERM stop this run in order (below) even when whatever launched it
    # blocked them; its children reset the rest of what they inherit (config.lifecycle).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGTERM, signal.SIGINT))
    refused = _port_refusal(host, port)
    if refused:
        print(refused, file=sys.stderr, flush=True)
        return 1
    # Every file and folder this run and its children make is its owner's alone (the
    # database, the embedded Redis's socket and files, the secret, the schedule, metrics).
    os.umask(0o077)
    var_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    var_dir.chmod(0o700)  # one made before this rule, too
    _metrics_folder(var_dir / "metrics")
    embedded = ensure_redis_url(var_dir / "redis")
    worker = relay = None
    try:
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", interactive=False, verbosity=0)
        from tenants.auth import static_teams_ensure

        static_teams_ensure()
        secret = None
        room_id, sign_in, claim, notice = None, "", "", ""
        if not os.environ.get("API_KEYS"):
            from django.conf import settings

            from tenants.firstrun import first_run_prepare
            from tenants.services import demo_key_ensure

            minted = demo_key_ensure()
            secret = minted.secret if minted else None
            if not settings.PRODUCTION:
                first = first_run_prepare()
                room_id, sign_in = first.room_id, first.sign_in_path
                claim, notice = first.claim_path, first.notice
        print(_banner(host, port, secret, room_id, sign_in, claim, notice), flush=True)
        worker = _start_worker()
        relay = _start_relay()

        import uvicorn

        # uvicorn shuts down gracefully on SIGINT/SIGTERM and then re-raises the signal to
        # the handler that was there before it: make that handler end us through `finally`,
        # so the embedded Redis is stopped too.
        signal.signal(signal.SIGTERM, _exit_quietly)
        signal.signal(signal.SIGINT, _exit_quietly)
        # Worker processes (WEB_CONCURRENCY > 1) die with us too (config/asgi.py's lifespan).
        os.environ["ROOMSERVICE_PARENT_PID"] = str(os.getpid())
        # Client addresses from X-Forwarded-For only from the proxies named here (a TLS
        # proxy in front, e.g. Caddy); with none named, the socket's peer is the client.
        trusted = os.environ.get("FORWARDED_ALLOW_IPS", "")
        uvicorn.run(
            "config.asgi:application",
            host=host,
            port=port,
            workers=workers,
            log_level=os.environ.get("UVICORN_LOG_LEVEL", "warning"),
            access_log=False,
            lifespan="on",
            proxy_headers=bool(trusted),
            forwarded_allow_ips=trusted or None,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        )
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        if relay is not None:
            _stop(relay)
        if worker is not None:
            _stop(worker)
        if embedded is not None:
            embedded.stop()
    return 0


def _start_worker() -> subprocess.Popen[bytes] | None:
    """The Celery worker (webhook deliveries) with its beat (periodic tasks), unless tasks
    run in-process (eager) or RUN_WORKER=0 (production runs its workers separately)."""
    from django.conf import settings

    if settings.CELERY_TASK_ALWAYS_EAGER or os.environ.get("RUN_WORKER", "1") == "0":
        return None
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config.celery",
            "worker",
            "--beat",
            "--schedule",
            str(Path(os.environ.get("ROOMSERVICE_VAR_DIR", BASE_DIR / "var")) / "celerybeat"),
            # Threads: a slow receiver holds one of them, not the whole worker (each team
            # gets at most WEBHOOK_TEAM_CONCURRENCY of them at once).
            "--pool=threads",
            f"--concurrency={os.environ.get('WORKER_CONCURRENCY', '8')}",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        start_new_session=True,
        # Its beat process dies with it in turn (config/celery.py).
        preexec_fn=child_of_this_process(),
    )


def _start_relay() -> subprocess.Popen[bytes] | None:
    """The webhook relay (mcp_gateway/relay.py), unless RUN_RELAY=0."""
    if os.environ.get("RUN_RELAY", "1") == "0":
        return None
    return subprocess.Popen(
        [sys.executable, "manage.py", "relay_webhooks"],
        cwd=BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        start_new_session=True,
        preexec_fn=child_of_this_process(),
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _exit_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    raise SystemExit(main())
