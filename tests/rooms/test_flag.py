"""rooms.flag.Flag, the wake and the loss every waiting call holds, and calls.runner's
until_lost built on it: each waiter hears a set, a timeout is its own, a waiter that goes
away leaves the others waiting, and a lost credential ends the work while a caller that
goes away ends it too, as itself."""

from __future__ import annotations

import asyncio

import pytest

from calls.runner import until_lost
from rooms import errors
from rooms.flag import Flag

BOUND = 5.0  # seconds: the bound on every wait in this file


@pytest.mark.anyio
async def test_a_set_wakes_every_waiter_and_a_timeout_is_each_ones_own() -> None:
    flag = Flag()
    assert await flag.wait(0.01) is False  # timed out: not set
    waiters = [asyncio.ensure_future(flag.wait(BOUND)) for _ in range(3)]
    short = asyncio.ensure_future(flag.wait(0.01))
    assert await short is False
    assert not any(w.done() for w in waiters)  # the short one's timeout was its own
    flag.set()
    async with asyncio.timeout(BOUND):
        assert await asyncio.gather(*waiters) == [True, True, True]
    assert flag.is_set() and await flag.wait() is True  # set: at once
    flag.clear()
    assert not flag.is_set() and await flag.wait(0.01) is False


@pytest.mark.anyio
async def test_a_waiter_that_goes_away_leaves_the_others_waiting() -> None:
    flag = Flag()
    gone = asyncio.ensure_future(flag.wait())
    kept = asyncio.ensure_future(flag.wait())
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert not kept.done()
    flag.set()
    async with asyncio.timeout(BOUND):
        assert await kept is True
    assert flag._waiters == []  # each waiter took itself off


async def waiting(ended: asyncio.Event) -> None:
    """Work that waits past every bound here, and says when it ended (cancelled)."""
    try:
        await asyncio.sleep(BOUND * 2)
    finally:
        ended.set()


@pytest.mark.anyio
async def test_until_lost_answers_the_work_and_refuses_once_the_credential_is_gone() -> None:
    lost = Flag()
    assert await until_lost(asyncio.sleep(0, result="done"), lost) == "done"
    lost.set()
    with pytest.raises(errors.CredentialLostError):  # already lost: refused at once
        await until_lost(asyncio.sleep(BOUND * 2), lost)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("how", "raised"),
    [("credential lost", errors.CredentialLostError), ("caller gone", asyncio.CancelledError)],
)
async def test_the_work_is_cancelled_when_its_credential_or_its_caller_goes(
    how: str, raised: type[BaseException]
) -> None:
    """A lost credential refuses the call; a caller that goes away is not taken for a loss.
    Either way the work is cancelled, not left behind."""
    lost = Flag()
    ended = asyncio.Event()
    call = asyncio.ensure_future(until_lost(waiting(ended), lost))
    await asyncio.sleep(0.01)
    if how == "credential lost":
        lost.set()
    else:
        call.cancel()
    async with asyncio.timeout(BOUND):
        with pytest.raises(raised):
            await call
    assert ended.is_set() and lost._waiters == []


@pytest.mark.anyio
async def test_the_work_runs_in_the_callers_own_task_and_a_later_loss_leaves_it_alone() -> None:
    """A waiting call holds no task for its work; a credential lost after the work ended
    does not cancel the caller, which goes on with what it was answered."""
    here = asyncio.current_task()
    lost = Flag()

    async def work() -> asyncio.Task[object] | None:
        return asyncio.current_task()

    assert await until_lost(work(), lost) is here
    lost.set()
    await asyncio.sleep(0.01)
    assert here is not None and here.cancelling() == 0


@pytest.mark.anyio
async def test_a_caller_cancelled_as_its_credential_goes_is_cancelled_not_refused() -> None:
    lost = Flag()
    ended = asyncio.Event()
    call = asyncio.ensure_future(until_lost(waiting(ended), lost))
    await asyncio.sleep(0.01)
    lost.set()
    call.cancel()
    async with asyncio.timeout(BOUND):
        with pytest.raises(asyncio.CancelledError):
            await call
    assert ended.is_set()
