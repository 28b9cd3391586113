"""A write tool's idempotencyKey: a repeat answers what the first call did and changes nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from django.conf import settings

from rooms import errors, idempotency, store
from rooms.schemas import ToolInput

T = TypeVar("T")


async def tool_keyed(
    tool: str, arguments: ToolInput, work: Callable[[idempotency.KeyedCall | None], Awaitable[T]]
) -> T:
    """Run `work` (one write tool's run, given the call its idempotencyKey names, if any): a
    repeat of the same call answers what the first did and changes nothing; the same key
    on another call is refused."""
    key = getattr(arguments, "idempotencyKey", None)
    if key is None:
        return await work(None)
    fields = arguments.model_dump(mode="json", by_alias=True, exclude={"idempotencyKey"})
    call = idempotency.keyed_call(key, tool, fields)
    try:
        return await work(call)
    except store.KeyReused as exc:
        hours = int(settings.IDEMPOTENCY_WINDOW_SECONDS) // 3600
        raise errors.IdempotencyKeyReusedError(
            errors.IDEMPOTENCY_KEY_REUSED.format(key=key, hours=hours, tool=exc.tool),
            extra={"idempotencyKey": key, "usedBy": exc.tool},
        ) from None
