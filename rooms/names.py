"""The rule for every name a caller gives (agent names, message selectors, tags, key and
invite bindings) and for the characters a lease path may hold.

A name is refused, never rewritten, so one agent has one spelling and an ordinary name
(`backend`, `frontend-2`, `Zoë`, `数据-agent`) passes unchanged:
- control characters (Cc), format characters (Cf: zero-width, bidi embeddings, overrides
  and isolates), other invisible ones (Hangul fillers, variation selectors, ...), line
  and paragraph separators, private-use and unassigned code points: they make a name read
  as another on a page and drive a terminal (the guard hook prints names);
- a space at either end;
- a name that is not in Unicode normal form NFKC (fullwidth letters, ligatures, a letter
  and its accent typed apart): the error gives the normal spelling to use;
- anything that reads as a person's name (`is_person_name`: case, invisibles, NFKC forms
  and common look-alike letters ignored) unless it is spelt exactly `person:...`. Whether
  the caller may use a person's name at all is tenants.access's check (only a person's own
  session may), which then compares exact prefixes.
"""

from __future__ import annotations

import unicodedata

from rooms import errors

# The prefix of the names people act under in rooms (tenants.acting, tenants.capabilities).
PERSON_PREFIX = "person:"

NAME_CHARACTER = (
    "{field} holds {code} ({what}) at position {position}: names and paths may not hold "
    "control, zero-width, invisible or text-direction characters. Retype it without that "
    "character."
)
NAME_SPACE = (
    "{field} {where} with a space ({code} at position {position}): give the name without it."
)
NAME_NOT_NORMAL = (
    "{field} is not in Unicode normal form NFKC: {code} ({what}) at position {position} is "
    'another spelling of "{normal_part}". Write it as "{normal}".'
)
NAME_PERSON = (
    '{field} "{given}" reads as a person\'s name: names like "person:<email>" belong to '
    "people acting from the dashboard and are written exactly that way. An agent uses its "
    "own name."
)

# Invisible code points that are not Cc/Cf (Unicode's Default_Ignorable_Code_Point set,
# less the categories refused anyway): fillers, variation selectors, the combining
# grapheme joiner. A name made of these reads as a name without them.
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A)) | {0x200E, 0x200F}

# Letters that read as those of "person:" (Unicode's confusables.txt, lower case): a
# Cyrillic er (U+0440) or an Armenian vo (U+0578) does not make `person:` another name on a page.
_LOOK_ALIKES = str.maketrans(
    {
        **dict.fromkeys("\u0440\u03c1\u03f1\u2374", "p"),
        **dict.fromkeys("\u0435\u04bd\u212e\uab32", "e"),
        **dict.fromkeys("\u0433\u1d26\u2c85\uab47\uab48\uab81", "r"),
        **dict.fromkeys("\u0455\u01bd\ua731", "s"),
        **dict.fromkeys("\u043e\u03bf\u03c3\u0585\u05e1\u1d0f\u0ce6\u0d66\u0e50\u101d\u10ff", "o"),
        **dict.fromkeys("\u0578\u057c", "n"),
        **dict.fromkeys(
            "\u02d0\u02f8\u0589\u05c3\u0703\u0704\u0903\u0a83\u16ec\u1803\u1809\u205a"
            "\u2236\ua4fd\ua789",
            ":",
        ),
    }
)


def _invisible(char: str) -> bool:
    point = ord(char)
    if unicodedata.category(char) in _REFUSED_CATEGORIES:
        return True
    return any(low <= point <= high for low, high in _IGNORABLE_RANGES)


def _code(char: str) -> str:
    return f"U+{ord(char):04X}"


def _what(char: str) -> str:
    """A character described for a person reading an error: its name, and its kind when it
    is one the rule refuses."""
    named = unicodedata.name(char, "")
    if not _invisible(char):
        return named or "unnamed"
    point, category = ord(char), unicodedata.category(char)
    kind = (
        "a text-direction character"
        if point in _BIDI
        else {
            "Cc": "a control character",
            "Cf": "an invisible format character",
            "Zl": "a line separator",
            "Zp": "a paragraph separator",
            "Co": "a private-use character",
            "Cn": "an unassigned code point",
            "Cs": "a surrogate",
        }.get(category, "an invisible character")
    )
    return f"{named}, {kind}" if named else kind


def chars_problem(value: str, field: str) -> errors.ToolArgumentsError | None:
    """The refusal for the first control, format or invisible character of `value`."""
    if value.isascii() and value.isprintable():  # the usual name: nothing to look up
        return None
    for index, char in enumerate(value):
        if _invisible(char):
            return errors.ToolArgumentsError(
                NAME_CHARACTER.format(
                    field=field, code=_code(char), what=_what(char), position=index + 1
                ),
                extra={"field": field, "codePoint": _code(char), "position": index + 1},
            )
    return None


def chars_check(value: str, field: str) -> str:
    """`value` unchanged, or ToolArgumentsError naming its first control, format or invisible
    character (by code point and position). For paths and other text that is not a name."""
    problem = chars_problem(value, field)
    if problem is not None:
        raise problem
    return value


def name_problem(value: str, field: str) -> errors.ToolArgumentsError | None:
    """The refusal of `value` as a name (the module's rule), or None when it is one."""
    problem = chars_problem(value, field)
    if problem is not None:
        return problem
    for where, index in (("starts", 0), ("ends", len(value) - 1)):
        if value and value[index].isspace():
            return errors.ToolArgumentsError(
                NAME_SPACE.format(
                    field=field, where=where, code=_code(value[index]), position=index + 1
                ),
                extra={"field": field, "codePoint": _code(value[index]), "position": index + 1},
            )
    if is_person_name(value) and not value.startswith(PERSON_PREFIX):
        return errors.ToolArgumentsError(
            NAME_PERSON.format(field=field, given=value[:128]), extra={"field": field}
        )
    normal = unicodedata.normalize("NFKC", value)
    if normal != value:
        # The first character from which the text stops being its own normal form (a
        # letter and its accent typed apart change only together).
        index = next(
            i
            for i in range(len(value))
            if unicodedata.normalize("NFKC", value[: i + 1]) != value[: i + 1]
        )
        char, typed = value[index], value[: index + 1]
        meant = unicodedata.normalize("NFKC", typed)
        same = next(
            (i for i, (a, b) in enumerate(zip(typed, meant, strict=False)) if a != b),
            min(len(typed), len(meant)),
        )
        return errors.ToolArgumentsError(
            NAME_NOT_NORMAL.format(
                field=field,
                code=_code(char),
                what=_what(char),
                position=index + 1,
                normal_part=meant[same:],
                normal=normal,
            ),
            extra={"field": field, "codePoint": _code(char), "position": index + 1},
        )
    return None


def name_check(value: str, field: str) -> str:
    """`value` unchanged when it is a name by the module's rule; else ToolArgumentsError
    saying which character at which position, and what to write instead."""
    problem = name_problem(value, field)
    if problem is not None:
        raise problem
    return value


def is_person_name(value: str) -> bool:
    """Whether `value` reads as a person's name (`person:<email>`): compared after dropping
    invisible characters and spaces at the ends, in NFKC, case-folded, with look-alike
    letters read as the ones they imitate."""
    if value.isascii() and value.isprintable():  # NFKC and case folding of these: lower()
        return value.strip().lower().startswith(PERSON_PREFIX)
    visible = "".join(c for c in value if not _invisible(c))
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", visible).casefold())
    return folded.strip().translate(_LOOK_ALIKES).startswith(PERSON_PREFIX)


UNNAMED_AGENT = "anonymous"


def attributed(claimed: str | None) -> str:
    """Who a write is attributed to. A bound credential's name was put into the arguments
    by the access check already (tenants.access.actors_bind); rooms/ trusts them."""
    return claimed or UNNAMED_AGENT
