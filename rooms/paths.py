"""Repository paths and globs, as leases name them (docs/protocol.md "File leases and drift").

A path is repository-relative and normalised before anything compares it: `./a/../b.py`
is `b.py`, `\\` is `/`, a leading `/` is dropped, and a `..` that would leave the root is
refused. A pattern may hold globs, one segment at a time: `*` (any run of characters but
`/`), `?` (one character), `[abc]` / `[!abc]` (one of, or none of; no ranges), and `**` as
a whole segment (any number of segments, none included). `src/` stands for everything
under `src` (`src/**`).

Matching runs here, in the web process, never inside Redis: a pattern is any tenant's
input, and a slow match inside a Lua step would hold Redis for every tenant. It never
backtracks. A segment's `*` split it into fixed-width pieces, and a pattern's `**` into
fixed-length blocks of segments; the first piece (block) is held to the start, the last
to the end, and each one between is placed at its leftmost fit, which is right for
fixed-width pieces. So a match costs at most (segment length x glob segment length) per
segment, and the bounds below keep that small: a path of MAX_PATH characters in at most
MAX_SEGMENTS segments, each at most MAX_SEGMENT characters, and in a glob at most
MAX_WILDCARDS wildcards with every segment that holds one at most MAX_GLOB_SEGMENT long.
`make bench` (section globs) tries the worst case these allow.

Whether two patterns overlap (some path matches both) is decided conservatively: it may
say yes for two patterns no path matches both of, never no for two that share one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rooms import errors
from rooms.names import chars_check

MAX_PATH = 512
MAX_SEGMENTS = 32
MAX_SEGMENT = 255  # NAME_MAX: no common file system names a longer file
MAX_WILDCARDS = 16  # `*`, `?`, `[...]` and `**` in one pattern, each counting one
MAX_GLOB_SEGMENT = 64  # a segment that holds a wildcard
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
    chars_check(raw, "path")  # control, zero-width, bidi: refused naming the code point
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
            part = re.sub(r"\*\*+", "*", part)  # ** inside a segment is a plain *
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
    _bounds_check(raw, parts)
    return normal


def _bounds_check(raw: str, parts: list[str]) -> None:
    wildcards = 0
    for part in parts:
        if len(part) > MAX_SEGMENT:
            raise errors.ToolArgumentsError(
                BAD_PATH.format(path=raw, why=f"has a segment longer than {MAX_SEGMENT} characters")
            )
        if part == "**":
            wildcards += 1
            continue
        found = len(_segment_items(part)[1])
        if found and len(part) > MAX_GLOB_SEGMENT:
            raise errors.ToolArgumentsError(
                BAD_PATH.format(
                    path=raw,
                    why=(
                        f"has a wildcard segment longer than {MAX_GLOB_SEGMENT} characters "
                        "(name more of it literally, in segments of its own)"
                    ),
                )
            )
        wildcards += found
    if wildcards > MAX_WILDCARDS:
        raise errors.ToolArgumentsError(
            BAD_PATH.format(
                path=raw,
                why=f"holds {wildcards} wildcards, more than {MAX_WILDCARDS} (claim a "
                "broader glob, or several)",
            )
        )


def is_glob(path: str) -> bool:
    return _GLOB.search(path) is not None


# --- Segments ----------------------------------------------------------------------------


def _segment_items(segment: str) -> tuple[list[str], list[int]]:
    """The segment as regex items, one per character it matches ("*" for a star), and the
    indexes of its wildcard items."""
    items: list[str] = []
    wild: list[int] = []
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            if not items or items[-1] != "*":
                wild.append(len(items))
                items.append("*")
        elif c == "?":
            wild.append(len(items))
            items.append(".")
        elif c == "[" and segment.find("]", i + 2) != -1:
            end = segment.find("]", i + 2)
            body = segment[i + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            wild.append(len(items))
            items.append("[" + ("^" if negate else "") + re.escape(body) + "]")
            i = end
        else:
            items.append(re.escape(c))
        i += 1
    return items, wild


@dataclass(frozen=True, slots=True)
class _Piece:
    """A run of a segment between two stars: fixed width; `text` when it is all literal."""

    width: int
    text: str | None
    regex: re.Pattern[str] | None  # None when `text` is the piece


@dataclass(frozen=True, slots=True)
class _Glob:
    pieces: tuple[_Piece, ...]  # one more than the stars
    head: str  # the literal characters before the first wildcard
    tail: str  # after the last one
    width: int  # the fewest characters a match takes


def _piece(items: list[str], literal: str) -> _Piece:
    plain = all(not (it == "." or (it.startswith("[") and len(it) > 1)) for it in items)
    if plain:
        return _Piece(width=len(items), text=literal, regex=None)
    return _Piece(width=len(items), text=None, regex=re.compile("".join(items), re.DOTALL))


@lru_cache(maxsize=4096)
def _glob_compile(segment: str) -> _Glob:
    items, _ = _segment_items(segment)
    pieces: list[_Piece] = []
    run: list[str] = []
    literal: list[str] = []
    # Literal text of each piece, read back from the segment alongside its items.
    for item in items:
        if item == "*":
            pieces.append(_piece(run, "".join(literal)))
            run, literal = [], []
            continue
        run.append(item)
        literal.append(re.sub(r"\\(.)", r"\1", item) if not item.startswith("[") else "")
    pieces.append(_piece(run, "".join(literal)))
    head = re.match(r"[^*?\[]*", segment)
    tail = re.search(r"[^*?\]]*$", segment)
    return _Glob(
        tuple(pieces),
        head.group(0) if head else "",
        tail.group(0) if tail else "",
        sum(p.width for p in pieces),
    )


def _piece_at(piece: _Piece, text: str, at: int) -> bool:
    if piece.regex is None:
        return text.startswith(piece.text or "", at)
    return piece.regex.match(text, at) is not None


def segment_matches(segment: str, name: str) -> bool:
    """Whether one path segment `name` (no wildcards) matches the pattern `segment`."""
    if not _GLOB.search(segment):
        return segment == name
    glob = _glob_compile(segment)
    if len(name) < glob.width:
        return False
    pieces = glob.pieces
    first, last = pieces[0], pieces[-1]
    if len(pieces) == 1:
        return len(name) == first.width and _piece_at(first, name, 0)
    if not _piece_at(first, name, 0):
        return False
    end = len(name) - last.width
    if not _piece_at(last, name, end):
        return False
    at = first.width
    for piece in pieces[1:-1]:
        if piece.regex is None:
            found = name.find(piece.text or "", at, end)
            if found < 0:
                return False
            at = found + piece.width
        else:
            hit = piece.regex.search(name, at, end)
            if hit is None:
                return False
            at = hit.end()
    return True


def _segments_overlap(a: str, b: str) -> bool:
    """Conservative: two glob segments overlap unless their literal heads or tails differ."""
    ga, gb = bool(_GLOB.search(a)), bool(_GLOB.search(b))
    if not ga and not gb:
        return a == b
    if not ga:
        return segment_matches(b, a)
    if not gb:
        return segment_matches(a, b)
    ha, hb = _glob_compile(a).head, _glob_compile(b).head
    n = min(len(ha), len(hb))
    if ha[:n] != hb[:n]:
        return False
    ta, tb = _glob_compile(a).tail, _glob_compile(b).tail
    m = min(len(ta), len(tb))
    return m == 0 or ta[-m:] == tb[-m:]


# --- Paths -------------------------------------------------------------------------------


def path_matches(pattern: str, path: str) -> bool:
    """Whether the concrete (normalised) `path` matches the (normalised) `pattern`."""
    segs = path.split("/")
    blocks = _blocks(pattern)
    if len(blocks) == 1:
        block = blocks[0]
        return len(block) == len(segs) and all(map(segment_matches, block, segs))
    if len(segs) < sum(len(b) for b in blocks):
        return False
    first, last = blocks[0], blocks[-1]
    end = len(segs) - len(last)
    if not all(map(segment_matches, first, segs)):
        return False
    if not all(map(segment_matches, last, segs[end:])):
        return False
    at = len(first)
    for block in blocks[1:-1]:
        while at + len(block) <= end:
            if all(map(segment_matches, block, segs[at : at + len(block)])):
                break
            at += 1
        else:
            return False
        at += len(block)
    return True


@lru_cache(maxsize=4096)
def _blocks(pattern: str) -> tuple[tuple[str, ...], ...]:
    """The pattern's segments cut at its `**` ones: "a/**/b/**" -> (("a",), ("b",), ())."""
    out: list[list[str]] = [[]]
    for part in pattern.split("/"):
        if part == "**":
            out.append([])
        else:
            out[-1].append(part)
    return tuple(tuple(b) for b in out)


def paths_overlap(a: str, b: str) -> bool:
    """Whether some path matches both patterns (conservative: see the module's text)."""
    if a == b:
        return True
    ga, gb = is_glob(a), is_glob(b)
    if not ga and not gb:
        return False
    if not ga:
        return path_matches(b, a)
    if not gb:
        return path_matches(a, b)
    sa, sb = a.split("/"), b.split("/")
    if "**" not in sa and "**" not in sb:
        return len(sa) == len(sb) and all(map(_segments_overlap, sa, sb))
    # A path that matches both maps their segments before the first ** one to one, and
    # those after the last ** likewise from the end: they must overlap pairwise.
    for x, y in zip(sa, sb, strict=False):
        if x == "**" or y == "**":
            break
        if not _segments_overlap(x, y):
            return False
    for x, y in zip(reversed(sa), reversed(sb), strict=False):
        if x == "**" or y == "**":
            break
        if not _segments_overlap(x, y):
            return False
    return True
