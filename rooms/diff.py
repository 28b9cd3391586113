"""What changed between two versions of a context payload, in lines a person can read.

An api_contract's endpoints are compared by (method, path), because that is how a
consumer thinks of them; everything else key by key.
"""

from __future__ import annotations

import json
from typing import Any


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _endpoints(payload: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for e in payload.get("endpoints") or []:
        if isinstance(e, dict):
            out[f"{e.get('method', '?')} {e.get('path', '?')}"] = e
    return out


def payload_diff(old: Any, new: Any) -> list[str]:
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [] if old == new else [f"payload: {_short(old)} -> {_short(new)}"]
    lines: list[str] = []
    keys = sorted(set(old) | set(new))
    for key in keys:
        if key == "endpoints" and isinstance(old.get(key), list) and isinstance(new.get(key), list):
            before, after = _endpoints(old), _endpoints(new)
            for name in sorted(set(after) - set(before)):
                lines.append(f"endpoint added: {name}")
            for name in sorted(set(before) - set(after)):
                lines.append(f"endpoint removed: {name}")
            for name in sorted(set(before) & set(after)):
                lines += [f"{name}: {line}" for line in field_changes(before[name], after[name])]
            continue
        if key not in old:
            lines.append(f"{key} added: {_short(new[key])}")
        elif key not in new:
            lines.append(f"{key} removed")
        elif old[key] != new[key]:
            lines.append(f"{key}: {_short(old[key])} -> {_short(new[key])}")
    return lines


FIELD_LINES_MOST = 40  # a change past this many fields is summed up, not listed


def field_changes(old: Any, new: Any) -> list[str]:
    """Each changed field named by its path, with its values: `response.currency: "USD"
    -> "EUR"`, `items[0].name added: "sku"` — what a consumer must change in its code, not
    just that something did. At most FIELD_LINES_MOST lines, then how many more."""
    lines: list[str] = []
    _field_walk(old, new, "", lines)
    if len(lines) > FIELD_LINES_MOST:
        rest = len(lines) - FIELD_LINES_MOST
        lines = [*lines[:FIELD_LINES_MOST], f"and {rest} more changed fields"]
    return lines


def _field_walk(old: Any, new: Any, at: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            here = _path(at, key)
            if key not in old:
                out.append(f"{here} added: {_short(new[key])}")
            elif key not in new:
                out.append(f"{here} removed (was {_short(old[key])})")
            else:
                _field_walk(old[key], new[key], here, out)
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            here = _path(at, i)
            if i >= len(old):
                out.append(f"{here} added: {_short(new[i])}")
            elif i >= len(new):
                out.append(f"{here} removed (was {_short(old[i])})")
            else:
                _field_walk(old[i], new[i], here, out)
    elif old != new or type(old) is not type(new):
        out.append(f"{at or 'value'}: {_short(old)} -> {_short(new)}")


def _path(base: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{base}[{key}]"
    return f"{base}.{key}" if base else key


def payload_paths_diff(old: Any, new: Any) -> dict[str, list[str]]:
    """Where two payloads differ, as paths down to the values (`endpoints[1].response.
    currency`): keys and list items only in `new` (added), only in `old` (removed), and
    values that differ at the deepest level both share (changed)."""
    out: dict[str, list[str]] = {"added": [], "removed": [], "changed": []}
    _walk(old, new, "", out)
    return out


def _walk(old: Any, new: Any, at: str, out: dict[str, list[str]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            here = _path(at, key)
            if key not in old:
                out["added"].append(here)
            elif key not in new:
                out["removed"].append(here)
            else:
                _walk(old[key], new[key], here, out)
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            here = _path(at, i)
            if i >= len(old):
                out["added"].append(here)
            elif i >= len(new):
                out["removed"].append(here)
            else:
                _walk(old[i], new[i], here, out)
    elif old != new or type(old) is not type(new):
        out["changed"].append(at or "payload")
