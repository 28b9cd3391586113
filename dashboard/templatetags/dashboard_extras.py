from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def get_item(mapping: dict[Any, Any], key: Any) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def event_kind(event_type: Any) -> str:
    """An event's type as words for its tag ("task_claimed" -> "task claimed")."""
    return str(event_type or "event").replace("_", " ")
