"""What the language server's worker processes run: checks, fixes and `# noqa` edits of one text.

The work runs in other processes, not threads: libcst's parser holds the GIL for a whole parse,
which would stall the server's event loop (and every other document) for as long.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tokenize

from torchlint.add_noqa import with_noqa_codes
from torchlint.config import Settings
from torchlint.diagnostics import Diagnostic
from torchlint.engine import check_source, cycle_collector_paused
from torchlint.fix import fix_one, fix_text, is_applicable
from torchlint.notebook.check import check_notebook
from torchlint.notebook.ipython import mask_cell
from torchlint.rules import rule_classes
from torchlint.server import shapes
from torchlint.server.reparse import Trees
from torchlint.suppressions import comment_suppresses, read_suppressions
from torchlint.sources import source_rows

_TREES = Trees()
# An existing `# noqa: CODES` comment, to extend with one more code.
def start_worker() -> None:
    """Each worker's first step: its standard output is the server's protocol channel, so anything
    a worker prints goes to standard error instead."""
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def load_rules() -> None:
    """Import every rule now (the pool's warm-up), not during the first check."""
    rule_classes()


def check_text(text: str, filename: str, settings: Settings) -> list[Diagnostic]:
    """`check_source`, parsing again only the statements changed since this worker last saw the
    file; the parse too with the cycle collector paused, as `check_source` runs."""
    with cycle_collector_paused():
        return check_source(text, filename, settings, _TREES.parse(filename, text))


def shape_at(text: str, filename: str, settings: Settings, row: int, column: int):
    """`shapes.shape_at` on the tree this worker keeps for the file (parsed again only where changed)."""
    return shapes.shape_at(text, filename, settings, row, column, _TREES.parse(filename, text))


def check_cells(cells: list[str], filename: str, settings: Settings) -> list[Diagnostic]:
    """The findings of a notebook's code cells checked together, each on its cell (`cell` is the
    1-based position in `cells`, rows and fixes relative to the cell): exactly as the cells of an
    .ipynb file on disk are checked."""
    return check_notebook(json.dumps({"cells": [{"cell_type": "code", "source": cell} for cell in cells]}),
                          filename, settings)


def fix_all(text: str, filename: str, settings: Settings, unsafe: bool) -> str:
    """The text as `torchlint check --fix` (with `--unsafe-fixes` when `unsafe`) would write it."""
    return fix_text(text, filename, settings, unsafe).text


def line_actions(text: str, filename: str, diagnostics: list[Diagnostic], unsafe: bool,
                 in_notebook: bool = False) -> list[tuple[bool, str | None]]:
    """For each finding: whether its fix can be offered (it applies and its result is valid code;
    a notebook cell's is judged with its IPython syntax masked, which keeps rows and columns), and
    its row with a `# noqa` for its code added (None when a comment cannot go there)."""
    python = mask_cell(text).python if in_notebook else text
    return [
        (is_applicable(diagnostic, unsafe) and fix_one(python, filename, diagnostic) is not None,
         noqa_line(text, diagnostic.noqa_row or diagnostic.location.row, diagnostic.code))
        for diagnostic in diagnostics
    ]


def noqa_line(text: str, row: int, code: str) -> str | None:
    """Row `row` of `text` with `code` added to its `# noqa:` comment, or with a new one; None when
    the row ends inside a string or continues with a backslash, where a comment cannot go."""
    rows = source_rows(text)
    if not 0 < row <= len(rows) or rows[row - 1].rstrip().endswith("\\"):
        return None
    # The same edit as `--add-noqa`, on the comments the tokenizer reads (never text in a string).
    new_line = with_noqa_codes(rows[row - 1], row, [code], read_suppressions(text))
    return new_line if _comment_suppresses(new_line, rows, row, code) else None


def _comment_suppresses(new_line: str, rows: list[str], row: int, code: str) -> bool:
    """Is there, in the text with `new_line` as row `row`, a real comment on that row that
    suppresses `code` (and nothing on the row that Python could not read)?"""
    lines = [f"{line}\n" for line in rows[: row - 1]] + [f"{new_line}\n"]
    try:
        for token in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            if token.start[0] == row and token.type == tokenize.ERRORTOKEN:
                return False
            if token.start[0] == row and token.type == tokenize.COMMENT and comment_suppresses(token.string, code):
                return True
    except (tokenize.TokenError, SyntaxError):
        return False
    return False
