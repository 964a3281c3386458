"""Jupyter notebooks: their code cells are checked as one Python source, findings mapped back
to (cell, row within the cell)."""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, replace

from torchlint.diagnostics import Diagnostic, Location
from torchlint.sources import UnreadableFile

_MAGIC = re.compile(r"^(\s*)([%!?]|\w+\s*=\s*[%!])")


@dataclass(frozen=True)
class NotebookSource:
    text: str
    cell_first_rows: tuple[int, ...]  # 1-based row where each code cell starts in `text`
    cell_numbers: tuple[int, ...]  # the 1-based position of that cell in the notebook

    def locate(self, diagnostic: Diagnostic) -> Diagnostic:
        index = bisect.bisect_right(self.cell_first_rows, diagnostic.location.row) - 1
        offset = self.cell_first_rows[index] - 1

        def shift(location: Location) -> Location:
            return Location(max(location.row - offset, 1), location.column)

        # Fixes are not offered in notebooks: edits would have to be written back into JSON.
        return replace(
            diagnostic, location=shift(diagnostic.location), end_location=shift(diagnostic.end_location),
            noqa_row=shift(diagnostic.location).row, cell=self.cell_numbers[index], fix=None,
        )


def _python_line(line: str) -> str:
    """IPython magics and shell escapes become `pass` so rows and indentation stay put."""
    match = _MAGIC.match(line)
    return f"{match.group(1)}pass" if match else line


def notebook_source(raw: str) -> NotebookSource:
    try:
        notebook = json.loads(raw)
        cells = notebook["cells"]
    except (ValueError, KeyError, TypeError):
        raise UnreadableFile("not a valid Jupyter notebook (JSON)") from None
    lines: list[str] = []
    first_rows, numbers = [], []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        # nbformat allows a string or a list of strings; anything else holds no code to check.
        if isinstance(source, list):
            text = "".join(part for part in source if isinstance(part, str))
        else:
            text = source if isinstance(source, str) else ""
        cell_lines = text.splitlines() or [""]
        if cell_lines[0].lstrip().startswith("%%"):
            cell_lines = ["pass"] + ["#" for _ in cell_lines[1:]]
        first_rows.append(len(lines) + 1)
        numbers.append(number)
        lines.extend(_python_line(line) for line in cell_lines)
    if not first_rows:
        return NotebookSource("", (1,), (1,))
    return NotebookSource("\n".join(lines) + "\n", tuple(first_rows), tuple(numbers))
