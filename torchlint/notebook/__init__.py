"""Jupyter notebooks: their code cells are checked as one Python text (a kernel runs them in one
namespace), findings are mapped back to (cell, row within the cell).

- IPython syntax is masked first (ipython.py), keeping every row and column.
- A cell that still does not parse gets its own TL901; the others are checked without it.
- Fixes are applied to the cells' sources and written into the JSON text, every other byte kept
  (jsontext.py); `edit_cells` is that write for anyone editing cells (fixes, noqa comments).
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, replace
from functools import cached_property

from torchlint.diagnostics import Diagnostic, Edit, Fix, Location, Related
from torchlint.notebook.ipython import MaskedCell, mask_cell
from torchlint.notebook.jsontext import SourceSpan, replace_sources, row_of, source_spans
from torchlint.sources import LINE_BREAK, UnreadableFile


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based position among all the notebook's cells (markdown ones too)
    source: str


@dataclass(frozen=True)
class Notebook:
    raw: str  # the JSON text
    cells: tuple[CodeCell, ...]  # the code cells, in order
    cells_path: tuple[str | int, ...]  # where the cell list is in the JSON
    source_key: str

    @cached_property
    def spans(self) -> list[SourceSpan | None]:
        return source_spans(self.raw, self.cells_path, self.source_key)

    def cell(self, number: int) -> CodeCell | None:
        return next((cell for cell in self.cells if cell.number == number), None)

    def json_row(self, number: int, row: int) -> int:
        """The row of the JSON text that holds a cell's row (the source's first row when the
        source is one string)."""
        span = self.spans[number - 1] if 0 < number <= len(self.spans) else None
        if span is None:
            return 1
        lines = span.line_starts
        return row_of(self.raw, lines[min(row, len(lines)) - 1] if lines else span.start)


def _source_text(source) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


def read_notebook(raw: str) -> Notebook:
    """The notebook in a JSON text (nbformat 4, or 3 with its worksheets)."""
    try:
        document = json.loads(raw)
        if "cells" in document:
            path, key, cells = ("cells",), "source", document["cells"]
        else:
            path, key, cells = ("worksheets", 0, "cells"), "input", document["worksheets"][0]["cells"]
        code = tuple(
            CodeCell(index + 1, _source_text(cell.get(key, "")))
            for index, cell in enumerate(cells) if isinstance(cell, dict) and cell.get("cell_type") == "code"
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise UnreadableFile("not a valid Jupyter notebook (JSON)") from None
    except RecursionError:
        raise UnreadableFile("not a Jupyter notebook: its JSON is nested too deeply") from None
    return Notebook(raw, code, path, key)


def edit_cells(notebook: Notebook, sources: dict[int, str]) -> str:
    """The notebook's JSON text with the sources of some cells (by number) replaced, every byte
    outside those sources kept."""
    return replace_sources(notebook.raw, notebook.spans, {number - 1: text for number, text in sources.items()})


def cell_rows(notebook: Notebook, number: int) -> tuple[str, ...]:
    """A cell's rows, as findings count them."""
    cell = notebook.cell(number)
    return tuple(LINE_BREAK.split(cell.source)) if cell is not None else ()


# One Python text for the code cells ------------------------------------------------------


@dataclass(frozen=True)
class PythonView:
    """The code cells' Python (IPython syntax masked), one after another; each cell ends with a
    line break of its own, so the text's rows are the cells' rows plus an offset per cell."""

    text: str
    first_rows: tuple[int, ...]  # the row where each cell starts in `text`
    numbers: tuple[int, ...]  # each cell's number
    cells: tuple[MaskedCell, ...]

    def position(self, row: int) -> int:
        """The index of the cell holding a row of `text`."""
        return max(bisect.bisect_right(self.first_rows, row) - 1, 0)

    def locate(self, diagnostic: Diagnostic) -> Diagnostic:
        """The finding with its cell, rows relative to the cell, and its fix when every edit
        stays in the cell and off IPython syntax (otherwise it is not offered)."""
        position = self.position(diagnostic.location.row)
        editable = diagnostic.fix is not None and self.editable(diagnostic)
        located = _shifted(diagnostic, 1 - self.first_rows[position])
        related = tuple(self._located_note(note, diagnostic.filename) for note in diagnostic.related)
        return replace(located, cell=self.numbers[position], fix=located.fix if editable else None, related=related)

    def _located_note(self, note: Related, filename: str) -> Related:
        """A note on a row of this notebook's `text`, in its cell's rows."""
        if note.filename != filename or note.cell is not None:
            return note
        position = self.position(note.location.row)
        rows = 1 - self.first_rows[position]
        return replace(note, location=_moved(note.location, rows), end_location=_moved(note.end_location, rows),
                       cell=self.numbers[position])

    def in_view(self, diagnostic: Diagnostic) -> Diagnostic:
        """The inverse of `locate`: a finding of one of these cells, in the rows of `text`."""
        offset = self.first_rows[self.numbers.index(diagnostic.cell)] - 1
        related = tuple(self._note_in_view(note, diagnostic.filename) for note in diagnostic.related)
        return replace(_shifted(diagnostic, offset), cell=None, related=related)

    def _note_in_view(self, note: Related, filename: str) -> Related:
        if note.filename != filename or note.cell not in self.numbers:
            return note
        rows = self.first_rows[self.numbers.index(note.cell)] - 1
        return replace(note, location=_moved(note.location, rows), end_location=_moved(note.end_location, rows),
                       cell=None)

    def editable(self, diagnostic: Diagnostic) -> bool:
        """Does every edit of the finding's fix stay within its cell, off masked IPython syntax?"""
        position = self.position(diagnostic.location.row)
        offset = self.first_rows[position] - 1
        for edit in diagnostic.fix.edits:
            if {self.position(edit.location.row), self.position(edit.end_location.row)} != {position}:
                return False
            start, end = _moved(edit.location, -offset), _moved(edit.end_location, -offset)
            if any(_touches(start, end, masked) for masked in self.cells[position].masked):
                return False
        return True


def _moved(location: Location, rows: int) -> Location:
    return Location(max(location.row + rows, 1), location.column)


def _shifted(diagnostic: Diagnostic, rows: int) -> Diagnostic:
    """The finding, its fix's edits included, `rows` rows further down."""
    fix = diagnostic.fix
    if fix is not None:
        edits = tuple(Edit(e.content, _moved(e.location, rows), _moved(e.end_location, rows)) for e in fix.edits)
        fix = Fix(fix.applicability, fix.message, edits)
    location = _moved(diagnostic.location, rows)
    return replace(diagnostic, location=location, end_location=_moved(diagnostic.end_location, rows),
                   noqa_row=location.row, fix=fix)


def _touches(start: Location, end: Location, masked: tuple[int, int, int]) -> bool:
    row, first, after = masked
    if start == end:
        return (row, first) <= (start.row, start.column) < (row, after)
    return (start.row, start.column) < (row, after) and (row, first) < (end.row, end.column)


def python_view(cells: tuple[CodeCell, ...], sources: list[str] | None = None,
                broken: frozenset[int] = frozenset()) -> PythonView:
    """The view of the cells (with `sources` in place of theirs, when given); the cells numbered
    in `broken` are left blank (their rows kept), as if absent."""
    texts, first_rows, masked_cells, row = [], [], [], 1
    for cell, source in zip(cells, sources if sources is not None else [c.source for c in cells]):
        masked = mask_cell(source)
        python = masked.python if cell.number not in broken else "\n" * len(LINE_BREAK.findall(source))
        texts.append(python + "\n")
        first_rows.append(row)
        masked_cells.append(masked)
        row += len(LINE_BREAK.findall(python)) + 1
    if not texts:
        return PythonView("", (1,), (1,), (mask_cell(""),))
    return PythonView("".join(texts), tuple(first_rows), tuple(c.number for c in cells), tuple(masked_cells))
