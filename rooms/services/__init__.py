"""Writes to a room, one module per domain (the same stems as rooms/selectors, rooms/store and
rooms/tools): the domain rules, one atomic store step, and the announcement (the event)
inside that same step, so no write is ever half-done.

This file only names the package's public services, so a door writes `services.task_add`
wherever the function lives; a new service is added to its domain's module and here."""

from rooms.services.context import (
    context_delete,
    context_update,
    context_write,
)
from rooms.services.events import (
    RESERVED_EVENT_TYPES,
    agent_summary,
    event_delete,
    event_mark_read,
    event_post,
    event_take_unread,
    event_wait,
)
from rooms.services.handoffs import (
    handoff_answer,
    handoff_offer,
)
from rooms.services.keyed import (
    tool_keyed,
)
from rooms.services.leases import (
    file_read_note,
    lease_claim,
    lease_release,
    lease_renew,
)
from rooms.services.lifecycle import (
    Status,
    room_status_set,
)
from rooms.services.locks import (
    lock_acquire,
    lock_release,
)
from rooms.services.messages import (
    agent_not_found,
    message_ack,
    message_inbox,
    message_send,
    selector_parse,
)
from rooms.services.plan import (
    claims_sweep,
    task_add,
    task_add_dependency,
    task_claim,
    task_delete,
    task_release,
    task_set_priority,
    task_update,
)
from rooms.services.presence import (
    presence_beside,
    presence_heartbeat,
    presence_leave,
)
from rooms.services.reviews import (
    review_request,
    review_resolve,
)
from rooms.services.templates import (
    room_from_template,
)
from rooms.services.vars import (
    var_set,
)
from rooms.services.verification import (
    room_mode_set,
    task_submit,
    task_verify,
)

__all__ = [
    "RESERVED_EVENT_TYPES",
    "Status",
    "agent_not_found",
    "agent_summary",
    "claims_sweep",
    "context_delete",
    "context_update",
    "context_write",
    "event_delete",
    "event_mark_read",
    "event_post",
    "event_take_unread",
    "event_wait",
    "file_read_note",
    "handoff_answer",
    "handoff_offer",
    "lease_claim",
    "lease_release",
    "lease_renew",
    "lock_acquire",
    "lock_release",
    "message_ack",
    "message_inbox",
    "message_send",
    "presence_beside",
    "presence_heartbeat",
    "presence_leave",
    "review_request",
    "review_resolve",
    "room_from_template",
    "room_mode_set",
    "room_status_set",
    "selector_parse",
    "task_add",
    "task_add_dependency",
    "task_claim",
    "task_delete",
    "task_release",
    "task_set_priority",
    "task_submit",
    "task_update",
    "task_verify",
    "tool_keyed",
    "var_set",
]
