"""Ids the server mints for what agents add (tasks, context entries, reviews, leases,
messages, handoffs): short, random, and unguessable enough that two agents adding at once
never collide and no agent can predict another's."""

from __future__ import annotations

import secrets
import string

_ID_ALPHABET = string.ascii_letters + string.digits


def new_id(prefix: str) -> str:
    """A short random id (`t_` + 12 chars for tasks, `c_` for context), unguessable enough
    that two agents adding at once never collide."""
    return prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))
