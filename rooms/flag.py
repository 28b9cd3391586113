"""`Flag`: what an `asyncio.Event` does for a waiting call, in a tenth of its memory;
`Wake`: the Flag a wake hub (rooms.store.wakeups) sets for one waiter of one room.

Every waiting call holds two (its room's wake, its credential's loss) for as long as it
waits, and a web process holds thousands of waiting calls. An `asyncio.Event` allocates a
deque of 64 slots (about 640 bytes) at birth and `asyncio.wait_for` on it adds a task; a
`Flag` allocates nothing until someone waits, and a timed wait is one future and one timer.
"""

from __future__ import annotations

import asyncio


def _settle(waiter: asyncio.Future[bool], value: bool) -> None:
    if not waiter.done():
        waiter.set_result(value)


class Flag:
    """Set once (until cleared); any number may wait on it, each with its own timeout."""

    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future[bool]] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        for waiter in self._waiters or ():
            _settle(waiter, True)

    def clear(self) -> None:
        self._set = False

    def future(self) -> asyncio.Future[bool]:
        """A future that resolves True once the flag is set; `forget` it when done."""
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self._set:
            waiter.set_result(True)
        elif self._waiters is None:
            self._waiters = [waiter]
        else:
            self._waiters.append(waiter)
        return waiter

    def forget(self, waiter: asyncio.Future[bool]) -> None:
        if self._waiters is not None and waiter in self._waiters:
            self._waiters.remove(waiter)

    async def wait(self, timeout: float | None = None) -> bool:
        """True once set; False when `timeout` seconds pass first."""
        if self._set:
            return True
        waiter = self.future()
        timer = (
            None
            if timeout is None
            else asyncio.get_running_loop().call_later(timeout, _settle, waiter, False)
        )
        try:
            return await waiter
        finally:
            if timer is not None:
                timer.cancel()
            self.forget(waiter)


class Wake(Flag):
    """One waiter's wake for one room, kept for the whole wait and cleared before each
    read. `rewatch`: the hub lost the room's subscription or could not make it (Redis away,
    a cluster node failed over, the slot moved), so after this wake the waiter watches
    again, which subscribes anew, instead of sleeping on this one; such a wake stays set.
    Each watch is followed by a read whatever it says, so a waiter still reads (and hears
    of an outage) while every new watch lapses."""

    __slots__ = ("rewatch",)

    def __init__(self) -> None:
        super().__init__()
        self.rewatch = False

    def lapse(self) -> None:
        self.rewatch = True
        self.set()

    def clear(self) -> None:
        if not self.rewatch:
            super().clear()
