"""The room's reviews."""

from __future__ import annotations

import json

from rooms import errors
from rooms.refs import RoomRef
from rooms.results import (
    Review,
)
from rooms.store import reviews as reviews_store
from rooms.suggest import HINT_SAMPLE, unknown_id


async def review_list(room: RoomRef, *, status: str | None) -> list[Review]:
    """Newest first; only those of `status` when given."""
    reviews: list[Review] = [json.loads(r) for r in await reviews_store.reviews_list(room.keys)]
    return [r for r in reviews if status is None or r["status"] == status]


async def review_not_found(room: RoomRef, review_id: str) -> errors.ReviewNotFoundError:
    reviews: list[Review] = [json.loads(r) for r in await reviews_store.reviews_list(room.keys)]
    sample = [
        (r["id"], f"{r['targetType']} {r['targetId']} ({r['status']})")
        for r in reviews[:HINT_SAMPLE]
    ]
    found = unknown_id(
        review_id,
        sample,
        closest_hint=errors.REVIEW_HINT_CLOSEST,
        none_close_hint=errors.REVIEW_HINT_NONE_CLOSE,
        empty_hint=errors.REVIEW_HINT_EMPTY,
    )
    return errors.ReviewNotFoundError(
        errors.REVIEW_NOT_FOUND.format(review_id=review_id, hint=found.hint),
        extra={"reviewId": review_id, "closest": found.closest},
    )
