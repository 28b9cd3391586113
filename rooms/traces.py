"""OpenTelemetry trace context a call carries (MCP 2026-07-28, SEP-414: `params._meta.traceparent`).

The door that serves the call sets it; the call's log lines show it (config.telemetry) and
every event the call writes records it (rooms/lua/lib/prelude.lua `append`), so each
webhook delivery an event causes sends it on in its `traceparent` header. A context
variable, like the request id, because it changes nothing the call does: it labels what the
call leaves behind. Malformed trace context is dropped, never an error (W3C Trace Context
says a receiver ignores a traceparent it cannot parse).
"""

from __future__ import annotations

import contextvars
import re

# The traceparent of the call being served ("" when it carries none).
TRACEPARENT: contextvars.ContextVar[str] = contextvars.ContextVar("traceparent", default="")
TRACEPARENT_LENGTH = 55  # version 00: 2 + 1 + 32 + 1 + 16 + 1 + 2
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def traceparent_valid(value: object) -> str:
    """The traceparent to carry for `value`: itself when it is a W3C traceparent (its
    version-00 part when a later version adds fields after it), else ""."""
    if not isinstance(value, str) or len(value) > 512:
        return ""
    head = value[:TRACEPARENT_LENGTH]
    found = _TRACEPARENT.match(head)
    if found is None:
        return ""
    version, trace_id, parent_id, _flags = found.groups()
    if version == "ff" or trace_id == "0" * 32 or parent_id == "0" * 16:
        return ""
    if len(value) > TRACEPARENT_LENGTH and (version == "00" or value[TRACEPARENT_LENGTH] != "-"):
        return ""
    return head


def trace_id(traceparent: str) -> str:
    """The trace's id, what a trace viewer is searched by."""
    return traceparent[3:35]
