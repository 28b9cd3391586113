"""idempotencyKey: a write retried with the same key changes nothing and answers what the
first call answered (docs/protocol.md "Claims and safe retries").

The record is written by the write's own script, in the same atomic step as the write
(rooms/store/engine.py `run_write`), so there is no moment at which the write has happened
and its key is not yet known — not even for two calls with one key arriving at once on two
processes: Redis runs one script at a time, and the second finds the first's record.

What a replay must reproduce is the first call's result. A write service's result is a
function of three things only: its arguments (in the fingerprint), what its script
returned (in the record) and what the service decided before the write step — the ids it
minted, the time it read, the warnings it found. Those go through `minted()`: they travel
with the write into the record, and a replay hands back the first call's.

The call is an argument, never a context variable: the door makes it (`keyed_call`) and
hands it to the room the tool runs in (`RoomRef.call`); every write step of rooms/store
takes it as `keyed`, so a step called without it visibly records nothing.
"""

from __future__ import annotations

import hashlib
import json
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


def fingerprint(tool: str, arguments: dict[str, Any]) -> str:
    """The same tool with the same arguments (the key itself aside), whatever their order."""
    body = json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def keyed_call(key: str | None, tool: str, arguments: dict[str, Any]) -> KeyedCall | None:
    """The call keyed `key` (None without a key): the door hands it to the room it runs in
    (RoomRef.call), and every write step takes it as its `keyed` argument."""
    if key is None:
        return None
    return KeyedCall(key=key, fingerprint=fingerprint(tool, arguments), tool=tool)


def minted(call: KeyedCall | None, values: dict[str, Any]) -> dict[str, Any]:
    """`values` (what the service decided before its write step), remembered for the
    record of a keyed call. After the write step, `minted_final` gives what the result must
    be built from."""
    if call is not None:
        call.minted = dict(values)
    return values


def minted_final(call: KeyedCall | None, values: dict[str, Any]) -> dict[str, Any]:
    """The first call's minted values on a replay, else `values`."""
    if call is not None and call.replayed:
        return {**values, **call.minted}
    return values
