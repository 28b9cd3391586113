from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def get_item(mapping: dict[Any, Any], key: Any) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def spaced(word: Any) -> str:
    """A status or an event's type as words ("in_progress" -> "in progress")."""
    return str(word).replace("_", " ")


@register.filter
def event_kind(event_type: Any) -> str:
    """An event's type as words for its tag ("task_claimed" -> "task claimed")."""
    return spaced(event_type or "event")


@register.filter
def path_breaks(text: Any) -> SafeString:
    """A file path (or a sentence holding one) that a narrow column breaks only after a
    slash: `<wbr>` after each "/", every part escaped. With `.path`'s CSS, a name is split
    mid-word only when it alone is wider than the column."""
    return mark_safe("/<wbr>".join(escape(part) for part in str(text).split("/")))
