"""One coherent core (issue 31, point 5): nothing an agent on the core profile is told names
a tool core does not list, since it could not call it, and cannot reconnect mid-session to
get it.

Every text a core agent can see is collected mechanically (its tools/list: descriptions and
every argument's description; the server's instructions; every error message of
rooms/errors.py and the profile refusal; every text the hook door answers, calls/hooks.py;
the snippets of docs/hooks.md) and every registry tool named in it must be in core. A new
mention of another tool fails here until it is made profile-aware or phrased without the
name. A name that is also an English word (search, approve, reject) counts when written as
a call (`reject(`) or in backticks; every other name counts as a word.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from mcp_gateway import tools
from mcp_gateway.app import INSTRUCTIONS_OF
from rooms import errors, profiles, registry

ROOT = Path(__file__).resolve().parents[2]
CORE = frozenset(profiles.TOOLS["core"])

# The error messages that name a tool outside core, each with the only tools that return
# it (none of them in core). A message added here must be one no core tool can return.
OUTSIDE_CORE_ONLY: dict[str, set[str]] = {
    "LEASE_HINT_CLOSEST": {"lease_renew", "lease_release"},
    "PLAN_EXISTS": {"create_room_from_template"},
    "EVENT_HINT_CLOSEST": {"mark_event_read", "get_event_reads", "reply_to_event", "delete_event"},
    "REVIEW_HINT_CLOSEST": {"approve", "reject"},
    "REVIEW_HINT_EMPTY": {"approve", "reject"},
    "REVIEW_HINT_NONE_CLOSE": {"approve", "reject"},
    "CONTEXT_VERSION_UNKNOWN": {"diff_context"},
}


def named_tools(text: str) -> set[str]:
    """The registry tools `text` names."""
    found = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", text)) & set(registry.TOOLS_BY_NAME)
    for word in (n for n in registry.TOOLS_BY_NAME if "_" not in n):
        if re.search(rf"`{word}`|\b{word}\(|\b{word}/|/{word}\b", text):
            found.add(word)
    return found


def _descriptions(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        said = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return said + [t for v in schema.values() for t in _descriptions(v)]
    if isinstance(schema, list):
        return [t for v in schema for t in _descriptions(v)]
    return []


def _tool_texts() -> dict[str, str]:
    texts = {}
    for entry in tools.tool_list("core"):
        texts[f"{entry.name}: description"] = entry.description or ""
        for i, said in enumerate(_descriptions(entry.input_schema)):
            texts[f"{entry.name}: argument text {i}"] = said
        assert entry.output_schema is None  # no output schemas on core (mcp_gateway.tools)
    return texts


def _error_texts() -> dict[str, str]:
    texts = {
        name: value
        for name, value in vars(errors).items()
        if name.isupper() and isinstance(value, str) and name not in OUTSIDE_CORE_ONLY
    }
    texts["profiles.NOT_IN_PROFILE"] = profiles.NOT_IN_PROFILE
    return texts


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings or bare expressions (not said)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def _hook_texts() -> dict[str, str]:
    """Every string calls/hooks.py can answer with: its literals holding a space (a tool's
    name passed to a call is not said to anyone), docstrings left out."""
    source = (ROOT / "calls" / "hooks.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return {
        f"calls/hooks.py:{node.lineno}": node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and " " in node.value
        and id(node) not in skip
    }


def _doc_snippets() -> dict[str, str]:
    text = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    return {
        f"docs/hooks.md snippet {i}": block
        for i, block in enumerate(re.findall(r"```[^\n]*\n(.*?)```", text, re.S))
    }


SOURCES = {
    "tools/list": _tool_texts,
    "instructions": lambda: {"instructions": INSTRUCTIONS_OF["core"]},
    "errors": _error_texts,
    "hooks": _hook_texts,
    "docs/hooks.md": _doc_snippets,
}


@pytest.mark.parametrize("source", list(SOURCES))
def test_nothing_a_core_agent_is_told_names_a_tool_core_leaves_out(source: str) -> None:
    texts = SOURCES[source]()
    assert texts
    outside = {
        where: sorted(named_tools(text) - CORE)
        for where, text in texts.items()
        if named_tools(text) - CORE
    }
    assert outside == {}


def test_the_check_sees_a_mention_of_another_tool() -> None:
    assert named_tools("wait and check again (lease_check)") == {"lease_check"}
    assert named_tools("call `search` or approve(it)") == {"search", "approve"}
    assert named_tools("(approve/reject do the same)") == {"approve", "reject"}
    assert named_tools("reject sends it back; search the room") == set()


def test_the_messages_kept_outside_core_are_exactly_those_naming_other_tools() -> None:
    """OUTSIDE_CORE_ONLY holds each message naming a tool outside core and nothing else, and
    the tools said to return it are none of core's."""
    naming = {
        name
        for name, value in vars(errors).items()
        if name.isupper() and isinstance(value, str) and named_tools(value) - CORE
    }
    assert naming == set(OUTSIDE_CORE_ONLY)
    for returned_by in OUTSIDE_CORE_ONLY.values():
        assert returned_by <= set(registry.TOOLS_BY_NAME)
        assert not returned_by & CORE


def test_the_refusal_of_a_tool_outside_the_profile_does_not_send_the_agent_to_reconnect() -> None:
    with pytest.raises(errors.ToolNotInProfileError) as refused:
        profiles.profile_admit("core", "lease_check")
    said = refused.value.message
    assert "carry on with those" in said
    assert "connect with" not in said.lower()
