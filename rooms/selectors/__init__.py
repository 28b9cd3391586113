"""Reads of a room, one module per domain (the same stems as rooms/services, rooms/store and
rooms/tools). Each takes a `RoomRef` (the access check already ran) and returns the
protocol's plain result shape.

This file only names the package's public selectors; a new one is added to its domain's
module and here."""

from rooms.selectors.context import (
    context_diff,
    context_get,
    context_history,
    context_history_newest_first,
    context_list,
    context_not_found,
    context_read,
    context_readers_attach,
)
from rooms.selectors.events import (
    event_follow,
    event_get_many,
    event_list,
    event_newest_id,
    event_not_found,
    event_page,
    event_reads_get,
    since_bound,
)
from rooms.selectors.handoffs import (
    handoffs_all,
    handoffs_pending,
)
from rooms.selectors.leases import (
    drift_check,
    file_one,
    lease_check,
    lease_list,
    leases_now,
)
from rooms.selectors.locks import (
    lock_list,
)
from rooms.selectors.messages import (
    message_rows,
    messages_sent,
)
from rooms.selectors.plan import (
    event_about_task,
    plan_get,
    plan_view,
    task_detail,
    task_get,
    task_list_for_agent,
    task_list_unblocked,
    task_not_found,
)
from rooms.selectors.presence import (
    presence_list,
    presence_rows,
)
from rooms.selectors.reviews import (
    review_list,
    review_not_found,
)
from rooms.selectors.room import (
    agents_at_work,
    room_analytics,
    room_info,
    room_live,
    room_overview,
    room_snapshot,
    room_state,
    room_waiting,
)
from rooms.selectors.vars import (
    var_get,
    var_list,
)

__all__ = [
    "agents_at_work",
    "context_diff",
    "context_get",
    "context_history",
    "context_history_newest_first",
    "context_list",
    "context_not_found",
    "context_read",
    "context_readers_attach",
    "drift_check",
    "event_about_task",
    "event_follow",
    "event_get_many",
    "event_list",
    "event_newest_id",
    "event_not_found",
    "event_page",
    "event_reads_get",
    "file_one",
    "handoffs_all",
    "handoffs_pending",
    "lease_check",
    "lease_list",
    "leases_now",
    "lock_list",
    "message_rows",
    "messages_sent",
    "plan_get",
    "plan_view",
    "presence_list",
    "presence_rows",
    "review_list",
    "review_not_found",
    "room_analytics",
    "room_info",
    "room_live",
    "room_overview",
    "room_snapshot",
    "room_state",
    "room_waiting",
    "since_bound",
    "task_detail",
    "task_get",
    "task_list_for_agent",
    "task_list_unblocked",
    "task_not_found",
    "var_get",
    "var_list",
]
