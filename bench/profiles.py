"""`make bench` section "profiles": what each tool profile's tools/list costs (issue 25).

- the size of each profile's tools/list response (/mcp?tools=core, roomd, full), in bytes
  and in estimated tokens (bytes / 4: a rough rule for English and JSON, not a tokenizer);
  a client carries that list in its model's context on every turn;
- tools/list latency per profile, p50 / p99 over sequential calls on one keep-alive
  connection, beside the floor measured in the same rounds: the floor app (bench/floor.py:
  bare ASGI and one Redis GET under the same uvicorn), GET /health, and a warm read_plan.
  The rounds interleave the targets, so whatever else the machine does weighs on all alike.
  The bench's key is a static one (API_KEYS), which an uncharged call (tools/list) admits
  without Redis; the same list with a team key, which adds its budget step's one round
  trip, is measured beside it.

- what core's list weighs, part by part (issue 31, point 5): the tools' descriptions, their
  input schemas, their output schemas (none on core) and the server's instructions (from
  initialize), in bytes of compact JSON; core's descriptions plus input schemas must stay
  within CORE_CARRIED_MAX, or the bench fails.

Each profile must list exactly its tools (rooms.profiles), or the bench fails.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from bench import floor, server, wire
from bench.stats import percentile
from rooms import profiles

CALLS = 500
WARM = 50
# The reference the issue measured against: roomd's whole tools/list.
ROOMD_LIST_KB = 20
# What a core agent may carry of the tools themselves (issue 31: it was ~21 KB).
CORE_CARRIED_MAX = 12 * 1024
# Issue 31's figures before its change, for the report beside today's.
CORE_BEFORE = {"descriptions + input schemas": 20_259, "tools/list": 57 * 1024}
PARTS = ("descriptions", "input schemas", "output schemas", "instructions")


def list_weight(tools: list[dict[str, Any]], instructions: str = "") -> dict[str, int]:
    """Bytes of each part of a tools/list (its tools as sent) and of the instructions, each
    as compact JSON (descriptions as UTF-8 text)."""

    def size(value: Any) -> int:
        return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())

    return {
        "descriptions": sum(len(t.get("description", "").encode()) for t in tools),
        "input schemas": sum(size(t["inputSchema"]) for t in tools),
        "output schemas": sum(size(t["outputSchema"]) for t in tools if "outputSchema" in t),
        "instructions": len(instructions.encode()),
    }


class FailureLog(Protocol):
    def add(self, check: str, detail: str = "", n: int = 1) -> None: ...


@dataclass
class Latency:
    p50_ms: float
    p99_ms: float
    n: int


@dataclass
class ProfileFigures:
    sizes: dict[str, int] = field(default_factory=dict)  # profile -> response bytes
    parts: dict[str, dict[str, int]] = field(default_factory=dict)  # profile -> list_weight
    tools: dict[str, int] = field(default_factory=dict)  # profile -> tools listed
    latency: dict[str, Latency] = field(default_factory=dict)  # target -> p50/p99
    first_ms: dict[str, float] = field(default_factory=dict)  # profile -> its first list
    calls: int = 0


def _latency(seconds: list[float]) -> Latency:
    return Latency(percentile(seconds, 50) * 1000, percentile(seconds, 99) * 1000, len(seconds))


def _list_request(ep: wire.McpEndpoint, query: str) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    return wire.build_request(
        "POST", ep.host, ep.port, ep.path + query, headers=ep.headers(), body=body
    )


async def _team_key(conn: wire.Connection, ep: wire.McpEndpoint) -> str:
    """A key of a new team, minted with the bench's static key (POST /api/v1/teams)."""
    body = json.dumps({"slug": f"bench-profiles-{secrets.token_hex(4)}"}).encode()
    answer = await conn.request(
        wire.build_request(
            "POST", ep.host, ep.port, "/api/v1/teams", headers=ep.headers(), body=body
        )
    )
    if answer.status != 201:
        raise RuntimeError(f"could not make a team: HTTP {answer.status} {answer.body[:200]!r}")
    return str(json.loads(answer.body)["key"]["secret"])


async def _instructions(conn: wire.Connection, ep: wire.McpEndpoint, profile: str) -> str:
    """The instructions an initialize of `profile` answers."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        }
    ).encode()
    answer = await conn.request(
        wire.build_request(
            "POST", ep.host, ep.port, f"{ep.path}?tools={profile}", headers=ep.headers(), body=body
        )
    )
    return str(json.loads(answer.body)["result"].get("instructions", ""))


async def measure(
    srv: server.BenchServer, ep: wire.McpEndpoint, fails: FailureLog, calls: int = CALLS
) -> ProfileFigures:
    fig = ProfileFigures(calls=calls)
    room = f"bench-profiles-{secrets.token_hex(4)}"
    targets: dict[str, bytes] = {
        f"tools/list ?tools={p}": _list_request(ep, f"?tools={p}") for p in profiles.PROFILES
    }
    targets["tools/list (no ?tools=)"] = _list_request(ep, "")
    targets["read_plan (a warm tool call)"] = ep.raw_call("read_plan", {"roomId": room})
    targets["GET /health"] = wire.build_request("GET", ep.host, ep.port, "/health")

    conn = ep.connection()
    team_ep = wire.McpEndpoint(ep.host, ep.port, await _team_key(conn, ep))
    targets["tools/list ?tools=core, a team key"] = _list_request(team_ep, "?tools=core")
    for profile in profiles.PROFILES:
        t0 = time.perf_counter()
        answer = await conn.request(targets[f"tools/list ?tools={profile}"])
        fig.first_ms[profile] = (time.perf_counter() - t0) * 1000
        tools = json.loads(answer.body)["result"]["tools"]
        listed = [t["name"] for t in tools]
        fig.sizes[profile] = len(answer.body)
        fig.tools[profile] = len(listed)
        fig.parts[profile] = list_weight(tools, await _instructions(conn, ep, profile))
        if answer.status != 200 or listed != list(profiles.TOOLS[profile]):
            fails.add(
                f"profiles: tools/list ?tools={profile}",
                f"HTTP {answer.status}, {len(listed)} tools, expected {profiles.TOOLS[profile]}",
            )

    carried = fig.parts["core"]["descriptions"] + fig.parts["core"]["input schemas"]
    if carried > CORE_CARRIED_MAX:
        fails.add(
            "profiles: core's descriptions + input schemas",
            f"{carried:,d} bytes, over {CORE_CARRIED_MAX:,d}",
        )

    port = server.free_port()
    floor_proc = floor.start(port, srv.redis_url)
    floor_conn = wire.Connection("127.0.0.1", port)
    floor_request = wire.build_request(
        "POST", "127.0.0.1", port, "/", headers=ep.headers(), body=b"{}"
    )
    times: dict[str, list[float]] = {"floor (bare ASGI + one Redis GET)": []}
    times.update({name: [] for name in targets})
    try:
        for i in range(calls + WARM):
            for name, raw in (
                ("floor (bare ASGI + one Redis GET)", floor_request),
                *targets.items(),
            ):
                c = floor_conn if raw is floor_request else conn
                t0 = time.perf_counter()
                answer = await c.request(raw)
                dt = time.perf_counter() - t0
                if answer.status != 200:
                    fails.add(f"profiles: {name}", f"HTTP {answer.status} {answer.body[:200]!r}")
                elif i >= WARM:
                    times[name].append(dt)
    finally:
        await conn.close()
        await floor_conn.close()
        floor_proc.terminate()
        floor_proc.wait(10)
    fig.latency = {name: _latency(t) for name, t in times.items() if t}
    return fig


def section(fig: ProfileFigures) -> list[str]:
    lines = ["Tool profiles (section profiles)"]
    lines.append(
        "  tools/list per profile: response bytes, and tokens estimated as bytes / 4 (a rough "
        "rule, not a tokenizer);"
    )
    lines.append(f"  roomd's own list was ~{ROOMD_LIST_KB} KB when issue 25 measured it:")
    full = fig.sizes.get("full", 0)
    for profile in profiles.PROFILES:
        size = fig.sizes.get(profile, 0)
        share = f"{100 * size / full:5.1f} % of full" if full else ""
        lines.append(
            f"    {profile:<6} {fig.tools.get(profile, 0):3d} tools  {size:9,d} bytes "
            f"({size / 1024:6.1f} KB)  ~{size // 4:7,d} tokens  {share}"
        )
    lines.append(
        "  what each list weighs, bytes of compact JSON (what an agent carries every turn):"
    )
    lines.append(
        f"    {'':<6} {'descriptions':>12} {'input schemas':>13} {'output schemas':>14} "
        f"{'instructions':>12}  descriptions + input schemas"
    )
    for profile, parts in fig.parts.items():
        carried = parts["descriptions"] + parts["input schemas"]
        bound = f" (at most {CORE_CARRIED_MAX / 1024:.0f} KB)" if profile == "core" else ""
        lines.append(
            f"    {profile:<6} {parts['descriptions']:12,d} {parts['input schemas']:13,d} "
            f"{parts['output schemas']:14,d} {parts['instructions']:12,d}  "
            f"{carried:,d} ({carried / 1024:.1f} KB){bound}"
        )
    before = CORE_BEFORE
    lines.append(
        f"    core before issue 31: descriptions + input schemas "
        f"{before['descriptions + input schemas']:,d} bytes "
        f"({before['descriptions + input schemas'] / 1024:.1f} KB), tools/list "
        f"~{before['tools/list'] / 1024:.0f} KB"
    )
    lines.append(
        f"  latency, p50 / p99 ms over {fig.calls} sequential calls each on one keep-alive "
        "connection, rounds interleaved:"
    )
    floor_p50 = fig.latency.get("floor (bare ASGI + one Redis GET)")
    for name, lat in fig.latency.items():
        versus = f"  {lat.p50_ms / floor_p50.p50_ms:4.2f}x the floor" if floor_p50 else ""
        tail = f"  p99 {lat.p99_ms / lat.p50_ms:4.2f}x p50" if name.startswith("tools/") else ""
        lines.append(f"    {name:<34} {lat.p50_ms:6.3f} / {lat.p99_ms:6.3f}{versus}{tail}")
    lines.append(
        "  the first tools/list of each profile the server answered (its lists are built at "
        "startup; built on the first request, that one took 10-116 ms): "
        + ", ".join(f"{p} {ms:.2f} ms" for p, ms in fig.first_ms.items())
    )
    lines.append("")
    return lines
