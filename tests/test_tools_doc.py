"""The project carries its own contract (issue 23, point 5): docs/tools.md is what the
registry says (regenerate it with `python -m ops.tooldocs`), every tool's semantics
have a section in docs/protocol.md, and nothing points at documents outside the repository.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ops import tooldocs
from rooms import registry

ROOT = Path(__file__).resolve().parents[1]

# Files another change is rewriting; their references to the documents outside the
# repository go with that change. Empty this list then: every tracked file is checked.
REFERENCES_PENDING: frozenset[str] = frozenset()

# The design document, the tool table and the seed documents that lived beside the
# project; written so that this file does not match itself.
OUTSIDE_REFERENCE = re.compile(r"\b(?:DESIGN|TOOLS)\.md\b|\bseeds[/]")


def test_tools_md_is_what_the_registry_says() -> None:
    written = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    assert written == tooldocs.tools_markdown(), (
        "docs/tools.md is stale: run `python -m ops.tooldocs` and commit it"
    )


def test_every_tool_and_argument_is_in_tools_md() -> None:
    text = tooldocs.tools_markdown()
    for tool in registry.TOOLS:
        section = text.split(f"### `{tool.name}`\n", 1)[1].split("\n### ", 1)[0]
        for argument in tool.input_schema()["properties"]:
            assert f"| `{argument}` |" in section, (tool.name, argument)


def test_the_command_writes(tmp_path: Path) -> None:
    target = tmp_path / "tools.md"
    tooldocs.write(target)
    assert target.read_text(encoding="utf-8") == tooldocs.tools_markdown()


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_tool_has_a_protocol_section() -> None:
    assert set(tooldocs.PROTOCOL_SECTIONS) == {t.name for t in registry.TOOLS}
    protocol = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    anchors = {_slug(line.lstrip("#")) for line in protocol.splitlines() if line.startswith("#")}
    linked = set(tooldocs.PROTOCOL_SECTIONS.values()) | {"conventions", "claims-and-safe-retries"}
    assert linked <= anchors, sorted(linked - anchors)


def test_protocol_md_says_whose_every_tool_is() -> None:
    """roomd's, named one by one as the rows say (`roomd=True`); every other tool is ours,
    and what the "Ours" line names is a tool that is not roomd's."""
    protocol = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    whose = protocol.split("### Whose tools\n", 1)[1].split("\n### ", 1)[0]
    roomds, ours = whose.split("- **Ours**", 1)
    roomd = {t.name for t in registry.TOOLS if t.roomd}
    assert set(re.findall(r"`([a-z_]+)`", roomds)) == roomd
    assert f"roomd's {len(roomd)} and ours" in roomds
    named = set(re.findall(r"`([a-z_]+)`", ours)) - {"room_"}
    assert named and named <= set(registry.TOOLS_BY_NAME) - roomd, named


def _anchors(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {_slug(line.lstrip("#")) for line in lines if line.startswith("#")}


def test_protocol_md_links_resolve() -> None:
    protocol = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    for target, anchor in re.findall(r"\]\(([^)#]*)(?:#([^)]*))?\)", protocol):
        path = ROOT / "docs" / (target or "protocol.md")
        assert path.exists(), target
        if anchor:
            assert anchor in _anchors(path), (target, anchor)


def _tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode("utf-8", "surrogateescape")
    return [name for name in listed.split("\0") if name]


def test_nothing_points_outside_the_repository() -> None:
    found: list[str] = []
    for name in _tracked_files():
        if name.startswith("docs/notes/") or name in REFERENCES_PENDING:
            continue
        path = ROOT / name
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "ignore")
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_REFERENCE.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    assert not found, "point at docs/protocol.md, docs/tools.md or docs/architecture.md:\n" + (
        "\n".join(found)
    )
