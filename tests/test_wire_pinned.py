"""What clients are written against does not move by accident (issue 32, point 8): every
profile's tools/list and the OpenAPI schema, byte for byte, pinned by their SHA-256 as they
were before the consolidation (commit 6cceaaf). A change meant for clients updates the pin
in the same commit; to see what moved, dump both sides and diff them:

    .venv/bin/python -m tests.test_wire_pinned /tmp/after
    git worktree add /tmp/before <an earlier commit> && cd /tmp/before && \\
        PYTHONPATH=. /path/to/.venv/bin/python -m tests.test_wire_pinned /tmp/before-dump
    diff -r /tmp/before-dump /tmp/after

A new tool goes at the end of TOOLS_ORDER (docs/contributing.md) and leaves the pin alone:
the pin is of the first PINNED_TOOLS tools, the list and the schema read with the tools
after them left out (tests/rooms/test_registry.py pins the names of every tool).
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from django.core.management import call_command

PINNED = {
    "tools-core.json": "f90a93d5c09bd488cd6978863a8557d44b1a93c389b415275bf581b68e0b8d24",
    "tools-roomd.json": "2d580458e5e4101fe6a4e134fb261cc5b187935763c4aeecd482258122199bd1",
    "tools-full.json": "282d21122b2258941e7277b130808cb68aa5be9274c6d597fabccd4ec0f8b4aa",
    "openapi.yaml": "0b12885e442d6ce3b6c6539824db84d2e94b83f46dfb9110296d0b601f379cac",
}
PINNED_TOOLS = 69


def wire_dump(folder: Path) -> None:
    """tools/list of each profile (as the MCP door serializes it) and the OpenAPI schema."""
    from mcp_gateway.tools import tool_list_result
    from rooms import profiles

    folder.mkdir(parents=True, exist_ok=True)
    for profile in profiles.PROFILES:
        listed = tool_list_result(profile).model_dump_json(
            by_alias=True, exclude_none=True, indent=1
        )
        (folder / f"tools-{profile}.json").write_text(listed)
    call_command("spectacular", "--file", str(folder / "openapi.yaml"))


def _without_later_tools(folder: Path) -> None:
    """The dump as it reads without the tools added after the pin: their tools/list entries
    and their OpenAPI paths (every other byte is left as it is)."""
    from mcp_gateway.tools import tool_list_result
    from rooms import profiles, registry

    later = set(registry.TOOLS_ORDER[PINNED_TOOLS:])
    if not later:
        return
    for profile in profiles.PROFILES:
        listed = tool_list_result(profile)
        kept = listed.model_copy(update={"tools": [t for t in listed.tools if t.name not in later]})
        (folder / f"tools-{profile}.json").write_text(
            kept.model_dump_json(by_alias=True, exclude_none=True, indent=1)
        )
    path = re.compile(r"  /api/v1/(?:rooms/\{room_id\}/)?tools/(\w+):")
    schema, skipping = [], False
    for line in (folder / "openapi.yaml").read_text().splitlines(keepends=True):
        if re.match(r"\S|  \S", line):
            found = path.match(line)
            skipping = found is not None and found.group(1) in later
        if not skipping:
            schema.append(line)
    (folder / "openapi.yaml").write_text("".join(schema))


def test_every_tool_row_and_the_openapi_schema_are_byte_for_byte_as_pinned(
    tmp_path: Path,
) -> None:
    wire_dump(tmp_path)
    _without_later_tools(tmp_path)
    seen = {name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name in PINNED}
    moved = sorted(name for name in PINNED if seen[name] != PINNED[name])
    assert not moved, f"what clients read changed: {moved} (this module's docstring: how to diff)"


if __name__ == "__main__":
    import django

    django.setup()
    wire_dump(Path(sys.argv[1]))
