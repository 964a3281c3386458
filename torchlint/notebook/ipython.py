"""IPython syntax in a cell, masked so that the cell parses as Python with every row and column
kept (as ruff does): what IPython would rewrite becomes a placeholder of the same length.

Only lines that start a logical line are looked at (never a line inside brackets, a string or a
backslash continuation), and only forms that cannot start valid Python there are masked:
- line magics `%time f()`, shell escapes `!ls`, `!!ls`, and their assigned forms `x = !ls`,
  `out = %sx ls`;
- help `?x`, `??x`, `x?`, `np.zeros??`;
- auto-call escapes `/f x`, `,f a b`, `;f a b`;
- a cell magic `%%time` on the first line; its body stays Python only for the magics that run
  it as Python (`%%time`, `%%timeit`, `%%capture`, ...), other cells (`%%bash`) are masked whole.

A masked command becomes `_` repeated (a plain name, so it never yields a finding); the lines a
masked command continues onto with a trailing backslash become blank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchlint.sources import LINE_BREAK

# Cell magics whose body IPython runs as Python (ruff keeps the same list).
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"})

_ESCAPE = re.compile(r"[ \t]*([%!?/,;])")
_ASSIGNED_ESCAPE = re.compile(r"[ \t]*[\w.,\[\] \t]+?[ \t]*=[ \t]*([%!])")
_HELP_END = re.compile(r"[ \t]*%{0,2}[\w*]+(?:\.[\w*]+|\[-?\d+\])*\?{1,2}[ \t]*\Z")
_CELL_MAGIC = re.compile(r"%%(\w+)")
_CODE_MARK = re.compile(r"[#'\"()\[\]{}]")
_STRING_MARK = re.compile(r"[\\'\"]")


@dataclass(frozen=True)
class Command:
    """One masked IPython command: where it starts (1-based row and column) and its text."""

    row: int
    column: int
    text: str


@dataclass(frozen=True)
class MaskedCell:
    python: str  # the cell's text with its IPython commands masked, of the same shape
    commands: tuple[Command, ...]
    # The masked ranges as (row, first column, end column exclusive), 1-based: no fix may touch them.
    masked: tuple[tuple[int, int, int], ...]
    runs_as_python: bool  # False for a cell whose cell magic does not run its body as Python


class _LogicalLines:
    """Follows brackets, strings and backslash continuations line by line, to tell whether the
    next line starts a logical line (where IPython looks for its escapes)."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""
        self.continued = False
        self.in_comment = False

    def at_start(self) -> bool:
        return not (self.depth or self.quote or self.continued)

    def feed(self, line: str) -> None:
        self.in_comment = False
        position = 0
        while position < len(line):
            position = self._step(line, position)
        self.continued = line.endswith("\\") and not (self.in_comment or self.quote)
        if len(self.quote) == 1 and not line.endswith("\\"):
            self.quote = ""  # an unterminated one-line string: a syntax error the parser reports

    def _step(self, line: str, position: int) -> int:
        """Past the next character that matters from `position` (a quote, bracket, comment)."""
        if self.quote:
            match = _STRING_MARK.search(line, position)
            if match is None:
                return len(line)
            position = match.start()
            if line[position] == "\\":
                return position + 2
            if line.startswith(self.quote, position):
                position, self.quote = position + len(self.quote), ""
                return position
            return position + 1
        match = _CODE_MARK.search(line, position)
        if match is None:
            return len(line)
        position, char = match.start(), match.group()
        if char == "#":
            self.in_comment = True
            return len(line)
        if char in "'\"":
            self.quote = char * 3 if line.startswith(char * 3, position) else char
            return position + len(self.quote)
        self.depth = self.depth + 1 if char in "([{" else max(self.depth - 1, 0)
        return position + 1


def _command_start(line: str) -> int | None:
    """The column (0-based) where the IPython command of a logical line's first line starts."""
    if _HELP_END.match(line):
        return len(line) - len(line.lstrip())
    for pattern in (_ESCAPE, _ASSIGNED_ESCAPE):
        match = pattern.match(line)
        if match:
            return match.start(1)
    return None


def mask_cell(text: str) -> MaskedCell:
    rows = LINE_BREAK.split(text)
    breaks = [match.group() for match in LINE_BREAK.finditer(text)] + [""]
    commands: list[Command] = []
    masked: list[tuple[int, int, int]] = []
    cell_magic = _CELL_MAGIC.match(rows[0])
    runs_as_python = cell_magic is None or cell_magic.group(1) in PYTHON_CELL_MAGICS
    logical = _LogicalLines()
    continuing = False  # the previous row is a masked command that a backslash continues
    for index, row in enumerate(rows):
        if continuing or (index > 0 and not runs_as_python):
            masked.append((index + 1, 1, len(row) + 1))
            rows[index] = " " * len(row)
            continuing = continuing and row.endswith("\\")
            continue
        start = 0 if index == 0 and cell_magic else _command_start(row) if logical.at_start() else None
        if start is None:
            logical.feed(row)
            continue
        commands.append(Command(index + 1, start + 1, row[start:]))
        masked.append((index + 1, start + 1, len(row) + 1))
        command = row[start:].rstrip()
        rows[index] = row[:start] + "_" * len(command) + " " * (len(row) - start - len(command))
        continuing = row.endswith("\\")
    python = "".join(row + line_break for row, line_break in zip(rows, breaks))
    return MaskedCell(python, tuple(commands), tuple(masked), runs_as_python)
