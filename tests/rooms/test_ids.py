"""rooms.ids: a task's id is unguessable; the server's own bookkeeping ids (a rate window's
entry) are unique across calls and processes without a system call."""

from __future__ import annotations

import os

from rooms import ids


def test_bookkeeping_ids_never_repeat_in_a_process() -> None:
    made = [ids.process_unique() for _ in range(20_000)]
    assert len(set(made)) == len(made)


def test_a_forked_child_draws_a_prefix_of_its_own() -> None:
    """Two web workers forked from one parent would otherwise count the same entries: one
    team's calls in the same millisecond would collapse into one in its rate window."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave at once
        os.write(write, ids.process_unique().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 100).decode()
    os.waitpid(pid, 0)
    os.close(read)
    mine = ids.process_unique()
    assert child and child[:16] != mine[:16]


def test_minted_ids_are_random() -> None:
    assert len({ids.new_id("t_") for _ in range(1000)}) == 1000
