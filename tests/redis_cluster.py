"""A real Redis Cluster on loopback, for the tests: 3 masters and 3 replicas, each a
redis-server 7 process of its own (Debian's; `.ci/run` installs it when missing).

Why real processes: sharded pub/sub, MOVED redirections and failover are the cluster's
behaviour, not a client's; a mock or one node would prove none of them. Short node
timeouts make a failover take a couple of seconds instead of fifteen.

`python -m tests.redis_cluster` starts one in the foreground and prints its seed URL, for
trying the service on a cluster by hand (`REDIS_CLUSTER=true REDIS_URL=… make run`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

NODE_TIMEOUT_MS = 1000
START_TIMEOUT = 30.0
# Managed Redis as it is sold (ElastiCache Serverless): CONFIG is refused, and keyspace
# notifications are off for good. Every node runs that way, so nothing the service or its
# tests do can come to rely on either; only the harness knows CONFIG's new name.
CONFIG_COMMAND = f"CONFIG-{secrets.token_hex(8)}"


def server_binary() -> str | None:
    """A redis-server of version 7 or later (sharded pub/sub), or None."""
    for path in (os.environ.get("REDIS_CLUSTER_SERVER", ""), shutil.which("redis-server")):
        if not path:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
        except OSError:
            continue
        version = out.stdout.partition("v=")[2].split(" ")[0]
        if version and int(version.split(".")[0]) >= 7:
            return path
    return None


def _free_ports(n: int) -> list[int]:
    """n ports free now, each with its cluster bus port (+10000) free too."""
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + 10000 > 65535 or port in ports:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


@dataclass
class LocalCluster:
    masters: int = 3
    replicas_per_master: int = 1
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rs-cluster-")))
    ports: list[int] = field(default_factory=list)
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """A seed node (any node will do: the client learns the rest from it)."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self) -> str:
        binary = server_binary()
        if binary is None:
            raise RuntimeError("no redis-server 7 on this machine (apt-get install redis-server)")
        self.ports = _free_ports(self.masters * (1 + self.replicas_per_master))
        for port in self.ports:
            self._spawn(binary, port)
        for port in self.ports:
            self._wait_answering(port)
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        cli = shutil.which("redis-cli") or str(Path(binary).with_name("redis-cli"))
        replicas = str(self.replicas_per_master)
        subprocess.run(
            [cli, "--cluster", "create", *nodes, "--cluster-replicas", replicas, "--cluster-yes"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        self.wait_healthy()
        return self.url

    def _spawn(self, binary: str, port: int) -> None:
        folder = self.folder / str(port)
        folder.mkdir(parents=True, exist_ok=True)
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder)]
        args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        args += ["--cluster-node-timeout", str(NODE_TIMEOUT_MS)]
        # A replica takes over however long ago it last heard its master (0: no age limit),
        # and masters ping replicas every second: failover within a few seconds, always.
        args += ["--cluster-replica-validity-factor", "0", "--repl-ping-replica-period", "1"]
        args += ["--save", "", "--appendonly", "no", "--logfile", str(folder / "redis.log")]
        # A replica's first full sync starts at once (Redis waits 5 s by default for more
        # replicas to join it).
        args += ["--repl-diskless-sync-delay", "0"]
        args += ["--notify-keyspace-events", "", "--rename-command", "CONFIG", CONFIG_COMMAND]
        from config.lifecycle import child_of_this_process

        self.processes[port] = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_of_this_process(),  # dies with us, however we die
        )

    @staticmethod
    def _wait_answering(port: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError):
                if redis.Redis(port=port, socket_timeout=1).ping():
                    return
            time.sleep(0.05)
        raise RuntimeError(f"redis-server on port {port} did not answer")

    def info(self, port: int) -> dict[str, str]:
        raw = redis.Redis(port=port, socket_timeout=2, decode_responses=True).execute_command(
            "CLUSTER", "INFO"
        )
        text = raw if isinstance(raw, str) else raw.decode()
        return dict(line.split(":", 1) for line in text.split() if ":" in line)

    def alive_ports(self) -> list[int]:
        return [p for p, proc in self.processes.items() if proc.poll() is None]

    def wait_healthy(self, timeout: float = START_TIMEOUT) -> None:
        """Every live node says the cluster is ok and every slot is served, and every
        replica is in sync with its master (else a failover would lose everything written
        since it started: a replica still waiting for its first full sync has nothing)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                ports = self.alive_ports()
                states = [self.info(p) for p in ports]
                if all(
                    s.get("cluster_state") == "ok" and s.get("cluster_slots_ok") == "16384"
                    for s in states
                ) and all(self._replica_synced(p) for p in ports):
                    return
            except redis.RedisError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the cluster did not become healthy within {timeout:.0f} s")

    def _replica_synced(self, port: int) -> bool:
        r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
        try:
            info = r.info("replication")
        finally:
            r.close()
        if info.get("role") != "slave":
            return True
        return bool(
            info.get("master_link_status") == "up" and not info.get("master_sync_in_progress")
        )

    def master_of(self, key: str) -> int:
        """The port of the master serving `key`'s slot now."""
        r = redis.RedisCluster(host="127.0.0.1", port=self.alive_ports()[0])
        try:
            node = r.get_node_from_key(key)
            return int(node.port)
        finally:
            r.close()

    def masters_now(self) -> list[int]:
        return [p for p in self.alive_ports() if self.role(p) == "master"]

    def slot_move(self, slot: int, to_port: int) -> None:
        """Move one slot, its keys included, to the master on `to_port` (what resharding
        does, one slot at a time)."""
        nodes = {p: redis.Redis(port=p, socket_timeout=5) for p in self.masters_now()}
        try:
            ids = {p: str(r.execute_command("CLUSTER", "MYID"), "utf-8") for p, r in nodes.items()}
            source = next(
                p
                for p, r in nodes.items()
                if any(lo <= slot <= hi for lo, hi, *_ in _own_slots(r, ids[p]))
            )
            if source == to_port:
                return
            nodes[to_port].execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source])
            nodes[source].execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to_port])
            while True:
                keys = nodes[source].execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
                if not keys:
                    break
                nodes[source].execute_command(
                    "MIGRATE", "127.0.0.1", to_port, "", 0, 5000, "KEYS", *keys
                )
            for r in nodes.values():
                r.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[to_port])
        finally:
            for r in nodes.values():
                r.close()

    def config_get(self, port: int, name: str) -> str:
        """One setting of one node, read through CONFIG's secret name."""
        r = redis.Redis(port=port, socket_timeout=2, decode_responses=True)
        try:
            reply = r.execute_command(CONFIG_COMMAND, "GET", name)
        finally:
            r.close()
        found = (
            reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))
        )
        return str(found[name])

    def config_set(self, port: int, name: str, value: str) -> None:
        r = redis.Redis(port=port, socket_timeout=2)
        try:
            r.execute_command(CONFIG_COMMAND, "SET", name, value)
        finally:
            r.close()

    def role(self, port: int) -> str:
        r = redis.Redis(port=port, socket_timeout=2, decode_responses=True)
        return str(r.execute_command("ROLE")[0])

    def kill(self, port: int) -> None:
        """SIGKILL one node: what a crashed machine looks like to the others."""
        proc = self.processes[port]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

    def restart(self, port: int) -> None:
        """Start a killed node again: it rejoins (as a replica of whoever took over)."""
        binary = server_binary()
        assert binary is not None
        self._spawn(binary, port)
        self._wait_answering(port)
        self.wait_healthy()

    def stop(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.processes.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.processes.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def _own_slots(r: redis.Redis, node_id: str) -> list[tuple[int, int]]:
    """The slot ranges the node `node_id` serves, as CLUSTER SLOTS tells."""
    ranges = []
    for entry in r.execute_command("CLUSTER", "SLOTS"):
        lo, hi, master = int(entry[0]), int(entry[1]), entry[2]
        if str(master[2], "utf-8") == node_id:
            ranges.append((lo, hi))
    return ranges


if __name__ == "__main__":
    cluster = LocalCluster()
    print(cluster.start(), flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
