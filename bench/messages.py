"""`make bench` section "messages": one message to 100 recipients, round after round.

100 agents heartbeat into a fresh room; each round, all 100 wait (wait_for_events with
addressedOnly, each on its own connection) while a sender sends one message to "*". Every
recipient's waiter must return that message, once; then every recipient reads its inbox at
once and must find it there exactly once, and the sender's sent_messages must show all 100
deliveries read. Figures: send_message's latency (the fan-out write: 100 deliveries in one
step), the time from the send to each waiter's return, and inbox latency under 100 readers.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
import time
from dataclasses import dataclass, field
from typing import Protocol

from bench import wire
from bench.stats import percentile

RECIPIENTS = 100
ROUNDS = 10


class Fails(Protocol):
    def add(self, check: str, detail: str = "", n: int = 1) -> None: ...


@dataclass
class FanOutFigures:
    recipients: int = RECIPIENTS
    rounds: int = 0
    delivered: int = 0  # (recipient, message) pairs found in an inbox exactly once
    woken: int = 0  # waiters that returned the message
    all_read: int = 0  # rounds whose sent_messages showed every delivery read
    send_ms: list[float] = field(default_factory=list)
    wake_ms: list[float] = field(default_factory=list)
    inbox_ms: list[float] = field(default_factory=list)


async def _round(
    ep: wire.McpEndpoint,
    room: str,
    sender: wire.Connection,
    conns: list[wire.Connection],
    fig: FanOutFigures,
    fails: Fails,
) -> None:
    agents = [f"r{i:03d}" for i in range(len(conns))]

    async def wait(i: int) -> tuple[bool, float]:
        args = {"roomId": room, "agentId": agents[i], "timeoutMs": 20_000, "addressedOnly": True}
        res = await wire.call_tool(conns[i], ep, "wait_for_events", args)
        done = time.perf_counter()
        if not res.ok:
            fails.add("messages: wait_for_events", res.describe())
            return False, 0.0
        types = [e["type"] for e in res.value["events"]]
        return types == ["message"], done

    waiters = [asyncio.create_task(wait(i)) for i in range(len(conns))]
    await asyncio.sleep(0.5)  # every waiter registered
    body = {"roomId": room, "from": "sender", "to": "*", "body": f"round {fig.rounds}"}
    t0 = time.perf_counter()
    sent = await wire.call_tool(sender, ep, "send_message", body)
    if not sent.ok or sent.value["count"] != len(conns):
        fails.add("messages: send_message did not reach every agent", sent.describe())
        for w in waiters:
            w.cancel()
        return
    fig.send_ms.append(1000 * sent.seconds)
    for ok, done in await asyncio.gather(*waiters):
        if ok:
            fig.woken += 1
            fig.wake_ms.append(1000 * (done - t0))
        else:
            fails.add("messages: a waiter did not get exactly the message")

    async def read(i: int) -> None:
        res = await wire.call_tool(conns[i], ep, "inbox", {"roomId": room, "agentId": agents[i]})
        if not res.ok:
            fails.add("messages: inbox", res.describe())
            return
        fig.inbox_ms.append(1000 * res.seconds)
        ids = [m["messageId"] for m in res.value["messages"]]
        if ids == [sent.value["messageId"]]:
            fig.delivered += 1
        else:
            fails.add("messages: an inbox did not hold the message exactly once", str(ids)[:200])

    await asyncio.gather(*(read(i) for i in range(len(conns))))
    mine = await wire.call_tool(
        sender, ep, "sent_messages", {"roomId": room, "agentId": "sender", "limit": 1}
    )
    if mine.ok and {d["state"] for d in mine.value["messages"][0]["recipients"]} == {"read"}:
        fig.all_read += 1
    else:
        fails.add("messages: sent_messages did not show every delivery read", mine.describe())
    fig.rounds += 1


async def fan_out(ep: wire.McpEndpoint, fails: Fails) -> FanOutFigures:
    fig = FanOutFigures()
    room = f"bench-messages-{secrets.token_hex(4)}"
    sender = ep.connection()
    conns = [ep.connection() for _ in range(RECIPIENTS)]
    try:
        await sender.open()
        for conn in conns:
            await conn.open()
        for i, conn in enumerate(conns):
            await wire.call_tool(conn, ep, "heartbeat", {"roomId": room, "agentId": f"r{i:03d}"})
            # Past the heartbeats' own events (none) and any earlier round's: start clean.
            await wire.call_tool(
                conn, ep, "get_unread_events", {"roomId": room, "agentId": f"r{i:03d}"}
            )
        for _ in range(ROUNDS):
            await _round(ep, room, sender, conns, fig, fails)
    finally:
        await sender.close()
        for conn in conns:
            await conn.close()
    return fig


def section(fig: FanOutFigures) -> list[str]:
    median = statistics.median
    return [
        f"Message fan-out (section messages): one message to {fig.recipients} recipients, "
        f"{fig.rounds} rounds",
        f"  Every recipient waiting (wait_for_events, addressedOnly), then all reading inbox at "
        f"once. Woken {fig.woken}/{fig.rounds * fig.recipients}, in an inbox exactly once "
        f"{fig.delivered}/{fig.rounds * fig.recipients}, sent_messages all read in "
        f"{fig.all_read}/{fig.rounds} rounds.",
        f"  send_message ({fig.recipients} deliveries in one step) p50 "
        f"{median(fig.send_ms) if fig.send_ms else 0:.2f} ms / p99 "
        f"{percentile(fig.send_ms, 99):.2f}; "
        f"send -> waiter returned p50 {median(fig.wake_ms) if fig.wake_ms else 0:.2f} / max "
        f"{max(fig.wake_ms, default=0):.2f} ms; inbox under {fig.recipients} readers p50 "
        f"{median(fig.inbox_ms) if fig.inbox_ms else 0:.2f} / p99 "
        f"{percentile(fig.inbox_ms, 99):.2f} ms",
        "",
    ]
