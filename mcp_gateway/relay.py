"""The webhook relay: listens to the wake channel of every room that has an active webhook,
and relays that room (creates its deliveries and queues them) each time the room is
written to. The write itself wakes it — the same channel that wakes waiting agents — so no
tool call ever reaches up into the webhooks.

It re-reads which rooms have webhooks when told (a webhooks-changed signal from
registration and disabling) and every RELAY_REFRESH_SECONDS, relaying every hooked room
each time, so a missed signal or a relay that was down delays deliveries, never loses
them (the relay reads from each webhook's own cursor).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from django.conf import settings

from mcp_gateway import tasks
from rooms import clock
from rooms.keys import RoomKeys
from rooms.store import heartbeats as heartbeats_store
from rooms.store import wakeups as wakeups_store
from tenants import webhooks
from tenants.db import db_run

log = logging.getLogger(__name__)


def relay_and_queue(room_id: str) -> int:
    """Relay one room and queue its new deliveries (run inline when Celery is eager)."""
    created = webhooks.webhook_relay(room_id)
    for delivery_id in created:
        tasks.webhook_deliver.delay(delivery_id)
    return len(created)


async def _heartbeats() -> None:
    """The relay's heartbeat (config/health.py), every PROCESS_HEARTBEAT_SECONDS while it
    runs; a store that does not answer is logged and tried again at the next beat."""
    while True:
        try:
            await heartbeats_store.heartbeat_write("relay", clock.now_ms())
        except Exception:
            log.warning("relay: could not write its heartbeat", exc_info=True)
        await asyncio.sleep(float(settings.PROCESS_HEARTBEAT_SECONDS))


class Relay:
    def __init__(self) -> None:
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self._idle: dict[str, asyncio.Event] = {}
        self._refresh = asyncio.Event()

    def rooms(self) -> set[str]:
        return set(self._watchers)

    async def idle(self, room_id: str) -> None:
        """Returns once the room's relay pass in progress (if any) has finished and nothing
        more is pending (what a test waits for before reading the delivery records)."""
        await self._idle.setdefault(room_id, asyncio.Event()).wait()

    async def run(self) -> None:
        await wakeups_store.signal_hub().listen(self._on_signal)
        beating = asyncio.get_running_loop().create_task(_heartbeats())
        try:
            while True:
                await self._sync()
                self._refresh.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._refresh.wait(), float(settings.RELAY_REFRESH_SECONDS)
                    )
        finally:
            beating.cancel()
            for task in self._watchers.values():
                task.cancel()
            for task in self._watchers.values():
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _on_signal(self, channel: str, payload: str) -> None:
        if channel == "" or wakeups_store.is_webhooks_change(channel):
            self._refresh.set()

    async def _sync(self) -> None:
        try:
            wanted = set(await db_run(webhooks.rooms_with_webhooks))
        except Exception:
            log.exception("relay: could not read the rooms with webhooks")
            return
        for room_id in set(self._watchers) - wanted:
            self._watchers.pop(room_id).cancel()
        for room_id in wanted:
            task = self._watchers.get(room_id)
            if task is None or task.done():
                self._watchers[room_id] = asyncio.get_running_loop().create_task(
                    self._watch(room_id)
                )

    async def _watch(self, room_id: str) -> None:
        keys = RoomKeys(room_id)
        idle = self._idle.setdefault(room_id, asyncio.Event())
        try:
            while True:
                # Registered before the relay reads, so a write during the pass wakes us again.
                async with wakeups_store.room_watch(keys) as woken:
                    idle.clear()
                    await self._pass(room_id)
                    if not woken.is_set():
                        idle.set()
                    await woken.wait()
        finally:
            # No longer watched (its last webhook was disabled or deleted): nothing is
            # pending for the room any more.
            idle.set()

    async def _pass(self, room_id: str) -> None:
        """One relay pass, in a worker thread. Stopping the relay waits for a pass under
        way to end (its thread cannot be interrupted, and holds database rows)."""
        work = asyncio.ensure_future(db_run(relay_and_queue, room_id))
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await work
            raise
        except Exception:
            log.exception("relay of %s failed; retrying at its next write", room_id)
