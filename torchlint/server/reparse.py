"""Parsing an edited document again without parsing all of it: the top-level statements that an
edit touched are parsed on their own and spliced into the previous tree.

Parsing is most of a check (libcst's parser), and a keystroke changes one statement. Python's
grammar starts afresh at each top-level statement, so the new text between the boundaries of
the touched statements, parsed as a module, gives the same statements as a parse of the whole
text; whenever that is in doubt (the piece does not parse on its own, its indentation or line
breaks differ from the file's, the edit reaches the module's header or first statement), the whole
text is parsed.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import OrderedDict
from dataclasses import dataclass

import libcst as cst

from torchlint.diagnostics import Diagnostic
from torchlint.engine import parse_module
from torchlint.sources import LINE_BREAK

_ROW = re.compile(f".*?(?:{LINE_BREAK.pattern})|.+\\Z", re.S)


def rows_with_breaks(text: str) -> list[str]:
    """The text's rows, each with its line break (Python's breaks only)."""
    return _ROW.findall(text)


@dataclass(frozen=True)
class _Tree:
    text: str
    rows: list[str]  # rows_with_breaks(text), kept for the next edit's comparison
    module: cst.Module
    # The 0-based row where each top-level statement's code (its leading lines first) starts.
    starts: list[int]


def _statement_starts(module: cst.Module, text: str) -> list[int] | None:
    """Where each top-level statement starts, found through CPython's `ast` (fast), or None when
    the two parsers do not agree on the statements."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    starts, index = [], 0
    for statement in module.body:
        if index >= len(tree.body):
            return None
        twin = tree.body[index]
        decorators = getattr(twin, "decorator_list", None)
        line = decorators[0].lineno if decorators else twin.lineno
        starts.append(line - 1 - len(statement.leading_lines))
        index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return starts if index == len(tree.body) else None


def touched_rows(old_rows: list[str], new_rows: list[str]) -> tuple[int, int]:
    """The rows of the old text that an edit replaced, [first, end): what is left after the rows
    both texts share at their start and at their end."""
    shortest = min(len(old_rows), len(new_rows))
    first = 0
    while first < shortest and old_rows[first] == new_rows[first]:
        first += 1
    last = 0
    while last < shortest - first and old_rows[-1 - last] == new_rows[-1 - last]:
        last += 1
    return first, len(old_rows) - last


def _spliced(previous: _Tree, text: str, filename: str) -> _Tree | None:
    old_rows, new_rows = previous.rows, rows_with_breaks(text)
    first, end = touched_rows(old_rows, new_rows)
    starts = previous.starts
    i = bisect.bisect_right(starts, first) - 1
    j = bisect.bisect_right(starts, max(end - 1, first)) - 1
    old = previous.module
    if i >= 0 and first < starts[i] + len(old.body[i].leading_lines):
        # Blank and comment lines before a statement may belong to the block that ends above it.
        i -= 1
    if i <= 0:
        # The edit reaches the module's header, or the first statement, whose comments above
        # libcst may give to the header (`# a comment` typed above the first import).
        return None
    shift = len(new_rows) - len(old_rows)
    last_statement = j + 1 == len(starts)
    piece_end = len(new_rows) if last_statement else starts[j + 1] + shift
    piece_text = "".join(new_rows[starts[i]:piece_end])
    piece = parse_module(piece_text, filename)
    if isinstance(piece, Diagnostic) or not piece.body:
        return None
    if (piece.default_indent, piece.default_newline) != (old.default_indent, old.default_newline):
        return None
    piece_starts = _statement_starts(piece, piece_text)
    if piece_starts is None:
        return None
    # The statements before the piece keep their rows, the piece's follow from its own parse
    # (its first one takes its header), those after it move by the rows the edit added.
    new_starts = [*starts[:i], starts[i], *(starts[i] + row for row in piece_starts[1:])]
    head = piece.body[0].with_changes(leading_lines=[*piece.header, *piece.body[0].leading_lines])
    body = [*old.body[:i], head, *piece.body[1:]]
    if last_statement:
        module = old.with_changes(body=body, footer=piece.footer, has_trailing_newline=piece.has_trailing_newline)
        return _Tree(text, new_rows, module, new_starts)
    after = old.body[j + 1]
    body += [after.with_changes(leading_lines=[*piece.footer, *after.leading_lines]), *old.body[j + 2:]]
    new_starts += [starts[j + 1] + shift - len(piece.footer), *(start + shift for start in starts[j + 2:])]
    return _Tree(text, new_rows, old.with_changes(body=body), new_starts)


class Trees:
    """The last tree of each of the few documents a worker checked recently."""

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._trees: OrderedDict[str, _Tree] = OrderedDict()

    def parse(self, filename: str, text: str) -> cst.Module | Diagnostic:
        """The tree of `text`, the new version of document `filename`, or the TL901/TL902 finding
        that says why there is none: the CLI's guarded parse, so a hostile buffer never reaches
        libcst's parser unguarded (the last tree that parsed is kept: the next edit often mends
        the syntax)."""
        previous = self._trees.pop(filename, None)
        if previous is not None and previous.text == text:
            tree = previous
        else:
            tree = None if previous is None else _spliced(previous, text, filename)
        if tree is None:
            module = parse_module(text, filename)
            if isinstance(module, Diagnostic):
                if previous is not None:
                    self._trees[filename] = previous
                return module
            starts = _statement_starts(module, text)
            tree = None if starts is None else _Tree(text, rows_with_breaks(text), module, starts)
            if tree is None:
                return module
        self._trees[filename] = tree
        while len(self._trees) > self._size:
            self._trees.popitem(last=False)
        return tree.module
