"""Repository paths and globs, as leases name them (TOOLS.md "Files and messages").

A path is repository-relative and normalised before anything compares it: `./a/../b.py`
is `b.py`, `\\` is `/`, a leading `/` is dropped, and a `..` that would leave the root is
refused. A pattern may hold globs, one segment at a time: `*` (any run of characters but
`/`), `?` (one character), `[abc]` / `[!abc]` (one of, or none of), and `**` as a whole
segment (any number of segments, none included). `src/` stands for everything under
`src` (`src/**`).

Whether two patterns overlap (some path matches both) is decided by the lease scripts,
conservatively: it may say yes for two patterns no path matches both of, never no for two
that share one. `path_matches` is the exact reference the tests hold them to.
"""

from __future__ import annotations

import re
from functools import cache

from rooms import errors

MAX_PATH = 512
MAX_SEGMENTS = 32
_GLOB = re.compile(r"[*?\[]")

BAD_PATH = (
    "path {path!r} {why}. Give a repository-relative path or glob: src/app.py, src/**, "
    "*.md (a .. may not leave the repository's root)."
)


def path_normalize(raw: str) -> str:
    """The path as every comparison sees it, or ToolArgumentsError saying what is wrong."""
    text = raw.strip().replace("\\", "/")
    if not text:
        raise errors.ToolArgumentsError(BAD_PATH.format(path=raw, why="is empty"))
    if "\x00" in text or any(ord(c) < 32 for c in text):
        raise errors.ToolArgumentsError(BAD_PATH.format(path=raw, why="holds control characters"))
    if "{" in text or "}" in text:
        raise errors.ToolArgumentsError(
            BAD_PATH.format(path=raw, why="uses braces, which are not supported (claim each)")
        )
    directory = text.endswith("/")
    parts: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts or parts[-1] == "**":
                raise errors.ToolArgumentsError(
                    BAD_PATH.format(path=raw, why="leaves the repository's root")
                )
            parts.pop()
            continue
        if "**" in part and part != "**":
            part = part.replace("**", "*")  # ** inside a segment is a plain *
        if parts and part == "**" and parts[-1] == "**":
            continue
        parts.append(part)
    if directory and (not parts or parts[-1] != "**"):
        parts.append("**")
    if not parts:
        raise errors.ToolArgumentsError(BAD_PATH.format(path=raw, why="names no file"))
    if len(parts) > MAX_SEGMENTS:
        raise errors.ToolArgumentsError(
            BAD_PATH.format(path=raw, why=f"has more than {MAX_SEGMENTS} segments")
        )
    normal = "/".join(parts)
    if len(normal) > MAX_PATH:
        raise errors.ToolArgumentsError(
            BAD_PATH.format(path=raw, why=f"is longer than {MAX_PATH} characters")
        )
    return normal


def is_glob(path: str) -> bool:
    return _GLOB.search(path) is not None


@cache
def _segment_re(segment: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = segment.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = segment[i + 1 : end]
                negate = body.startswith("!")
                body = body[1:] if negate else body
                out.append("[" + ("^" if negate else "") + re.escape(body) + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def path_matches(pattern: str, path: str) -> bool:
    """Whether the concrete (normalised) `path` matches the (normalised) `pattern`."""
    pat, segs = pattern.split("/"), path.split("/")

    @cache
    def at(i: int, j: int) -> bool:
        if i == len(pat):
            return j == len(segs)
        if pat[i] == "**":
            return at(i + 1, j) or (j < len(segs) and at(i, j + 1))
        if j == len(segs):
            return False
        return _segment_re(pat[i]).fullmatch(segs[j]) is not None and at(i + 1, j + 1)

    return at(0, 0)
