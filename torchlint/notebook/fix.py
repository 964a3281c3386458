"""Fixing a notebook: `fix_text` works on the code cells joined into one text, each cell's last
row ended by a character no cell holds (no edit may cross it, so the cells can be told apart
after any edit); that text has the rows and columns of the Python view it checks. The fixed
cells go back into the JSON text, every other byte kept."""

from __future__ import annotations

from dataclasses import replace

from torchlint.config import Settings
from torchlint.diagnostics import Diagnostic
from torchlint.notebook import PythonView, edit_cells, python_view, read_notebook
from torchlint.notebook.check import check_view, notebook_view
from torchlint.sources import UnreadableFile

_CELL_ENDS = ("\x00", "\x01", "\ue000", "\uf8ff")  # control or private-use characters


class NotebookText:
    """The text `fix_text` fixes for a notebook, and how it checks and parses it."""

    def __init__(self, raw: str, filename: str) -> None:
        self.notebook = read_notebook(raw)
        cell_end = next((end for end in _CELL_ENDS if all(end not in c.source for c in self.notebook.cells)), None)
        if cell_end is None:
            raise UnreadableFile("its cells hold every character that could separate them")
        self.separator = cell_end + "\n"
        # Cells that do not parse stay out of the Python view as they were; a fix that breaks
        # another cell makes the view unparsable, so it is not applied.
        _, _, self.broken = notebook_view(self.notebook.cells, filename)
        self.joined = "".join(cell.source + self.separator for cell in self.notebook.cells)

    def sources(self, text: str) -> list[str]:
        return text.split(self.separator)[:-1]

    def view(self, text: str) -> PythonView:
        return python_view(self.notebook.cells, self.sources(text), frozenset(self.broken))

    def python(self, text: str) -> str:
        return self.view(text).text

    def check(self, text: str, filename: str, settings: Settings, module=None) -> list[Diagnostic]:
        """Findings in `text`'s rows; fixes that would leave their cell or touch IPython syntax
        are not offered."""
        view = self.view(text)
        return [
            d if d.fix is None or view.editable(d) else replace(d, fix=None)
            for d in check_view(view, filename, settings, module)
        ]

    def where(self, diagnostic: Diagnostic, text: str, filename: str) -> str:
        located = self.view(text).locate(diagnostic)
        return f"{filename}:cell {located.cell}:{located.location.row}:{located.location.column}"

    def located(self, diagnostics: list[Diagnostic], text: str) -> list[Diagnostic]:
        """Findings in `text`'s rows, by cell, with the TL901 of each cell that does not parse."""
        view = self.view(text)
        located = [view.locate(d) for d in diagnostics] + list(self.broken.values())
        return sorted(located, key=Diagnostic.sort_key)

    def written(self, text: str) -> str:
        """The notebook's JSON text with the cells' sources as `text` has them."""
        sources = {
            cell.number: source for cell, source in zip(self.notebook.cells, self.sources(text))
            if source != cell.source
        }
        return edit_cells(self.notebook, sources) if sources else self.notebook.raw
