"""idempotencyKey: a write retried with the same key changes nothing and answers what the
first call answered (docs/protocol.md "Claims and safe retries").

The record is written by the write's own script, in the same atomic step as the write
(rooms/store: `_run_write`), so there is no moment at which the write has happened and its
key is not yet known — not even for two calls with one key arriving at once on two
processes: Redis runs one script at a time, and the second finds the first's record.

What a replay must reproduce is the first call's result. A write service's result is a
function of three things only: its arguments (in the fingerprint), what its script
returned (in the record) and what the service decided before the write step — the ids it
minted, the time it read, the warnings it found. Those go through `minted()`: they travel
with the write into the record, and a replay hands back the first call's.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class KeyedCall:
    """One tool call that carries an idempotencyKey, while it runs."""

    key: str
    fingerprint: str
    tool: str
    minted: dict[str, Any] = field(default_factory=dict)
    replayed: bool = False
    written: bool = False  # the call's one write step has run (there is only one)


_current: contextvars.ContextVar[KeyedCall | None] = contextvars.ContextVar(
    "idempotency_call", default=None
)


def fingerprint(tool: str, arguments: dict[str, Any]) -> str:
    """The same tool with the same arguments (the key itself aside), whatever their order."""
    body = json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode()).hexdigest()


@contextlib.contextmanager
def keyed(key: str | None, tool: str, arguments: dict[str, Any]) -> Iterator[KeyedCall | None]:
    """Run the block as the call keyed `key` (nothing happens without a key)."""
    if key is None:
        yield None
        return
    call = KeyedCall(key=key, fingerprint=fingerprint(tool, arguments), tool=tool)
    token = _current.set(call)
    try:
        yield call
    finally:
        _current.reset(token)


def current() -> KeyedCall | None:
    return _current.get()


def minted(values: dict[str, Any]) -> dict[str, Any]:
    """`values` (what the service decided before its write step), remembered for the
    record of a keyed call. After the write step, `minted_final` gives what the result must
    be built from."""
    call = _current.get()
    if call is not None:
        call.minted = dict(values)
    return values


def minted_final(values: dict[str, Any]) -> dict[str, Any]:
    """The first call's minted values on a replay, else `values`."""
    call = _current.get()
    if call is not None and call.replayed:
        return {**values, **call.minted}
    return values
