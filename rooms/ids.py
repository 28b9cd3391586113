"""Ids the server mints for what agents add (tasks, context entries, reviews, leases,
messages, handoffs): short, random, and unguessable enough that two agents adding at once
never collide and no agent can predict another's."""

from __future__ import annotations

import itertools
import os
import secrets
import string

_ID_ALPHABET = string.ascii_letters + string.digits


def new_id(prefix: str) -> str:
    """A short random id (`t_` + 12 chars for tasks, `c_` for context), unguessable enough
    that two agents adding at once never collide."""
    return prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))


def _minted_reset() -> None:
    global _minted_prefix, _minted
    _minted_prefix = secrets.token_hex(8)
    _minted = itertools.count()


_minted_prefix = ""
_minted = itertools.count()
_minted_reset()
os.register_at_fork(after_in_child=_minted_reset)


def process_unique() -> str:
    """An id no other call of any process makes (a random prefix per process, drawn again
    in a forked child, then a counter), for the server's own bookkeeping that no caller
    ever sees (a rate window's entry): unguessability is not needed there, and a counter
    costs no system call where `secrets` costs one per id on every call. An id a client
    sees (a stream's, a waiter's slot) stays random: a counter would tell every tenant how
    busy the process is."""
    return f"{_minted_prefix}{next(_minted):x}"
