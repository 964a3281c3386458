"""A module's text cut at its top-level statements, without parsing it.

A top-level statement starts where a line starts in column 0 with a name or a decorator; an `if`
or `try` keeps its `else`/`elif`/`except`/`finally` branches. Used where a question needs only a
few of a module's definitions: the project summaries (`torchlint/project/summary.py`) parse just
those, and the tensor facts find which top-level functions mention an op.
"""

from __future__ import annotations

import re

# A line that starts a top-level statement, found by its newline: a literal the regex engine skips
# ahead to, where `^` in multiline mode would try every position of the text (6x slower).
_TOP_LEVEL = re.compile(r"\n(?=[A-Za-z_@])")
_STATEMENT_START = re.compile(r"[A-Za-z_@]")
_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")
# A piece that defines a function or class, decorated or not: (`def` or `class`, its name).
DEFINITION = re.compile(r"(?:@.*\n(?:[ \t]*(?:#.*)?\n)*)*(?:async[ \t]+)?(def|class)[ \t]+(\w+)")


def top_level_pieces(text: str) -> list[tuple[str, int]]:
    """Top-level statements (an `if`/`try` with its `else`/`except` branches), with their rows."""
    first = [0] if _STATEMENT_START.match(text) else []
    starts = first + [match.end() for match in _TOP_LEVEL.finditer(text)] + [len(text)]
    pieces: list[tuple[str, int]] = []
    row = 1 + text.count("\n", 0, starts[0])
    for start, end in zip(starts, starts[1:]):
        piece = text[start:end]
        if pieces and _CONTINUATION.match(piece):
            previous, previous_row = pieces[-1]
            pieces[-1] = (previous + piece, previous_row)
        else:
            pieces.append((piece, row))
        row += piece.count("\n")
    return pieces
