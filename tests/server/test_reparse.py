"""Parsing an edited document again by statements: for edits of every kind (typing in a function,
adding and removing lines, breaking and mending the syntax, indenting, editing the header), the
spliced tree is the tree of the new text and the findings are those of a full check."""

from __future__ import annotations

import random

import libcst as cst
import pytest

from tests.conftest import REPO
from torchlint.config import Options, resolve_settings
from torchlint.diagnostics import Diagnostic
from torchlint.engine import check_source
from torchlint.server.reparse import Trees, _statement_starts, rows_with_breaks
from torchlint.server.worker import check_text

SOURCES = [REPO / "examples" / "train_pitfalls.py", REPO / "torchlint" / "engine.py",
           *sorted((REPO / "tests" / "fixtures" / "rules").glob("TL[0-2]*.py"))[::3]]
INSERTIONS = ["    x = torch.Tensor(3)\n", "y = 1\n", "\n", "# a comment\n", "def g(:\n", "    )\n", '"""\n',
              "@decorator\n", "else:\n", "        return view\n", "import torch.nn.functional as F\n"]


def edited(text: str, rng: random.Random) -> str:
    rows = rows_with_breaks(text)
    row = rng.randrange(len(rows) + 1)
    kind = rng.choice(["insert", "delete", "retype", "indent"])
    if kind == "insert" or row == len(rows):
        rows.insert(row, rng.choice(INSERTIONS))
    elif kind == "delete":
        del rows[row]
    elif kind == "retype":
        line = rows[row]
        cut = rng.randrange(len(line))
        rows[row] = line[:cut] + rng.choice(["t", "(", ")", ".view(2)", " ", ":"]) + line[cut:]
    else:
        rows[row] = "    " + rows[row]
    return "".join(rows)


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.name)
def test_spliced_trees_are_the_trees_of_the_new_text(path):
    settings = resolve_settings(Options(isolated=True), REPO)
    rng = random.Random(path.name)
    trees, valid = Trees(), path.read_text(encoding="utf-8")
    trees.parse("doc", valid)
    for _ in range(25):
        text = edited(valid, rng)
        spliced = trees.parse("doc", text)
        try:
            whole = cst.parse_module(text)
        except cst.ParserSyntaxError:
            assert isinstance(spliced, Diagnostic) and spliced.code == "TL901"
            continue  # the next edit starts again from the last valid text
        valid = text
        assert spliced.code == text
        assert spliced.deep_equals(whole)
        # Where the statements start, carried over from the last tree: the next splice relies on it.
        assert trees._trees["doc"].starts == _statement_starts(whole, text)
        assert check_source(text, str(path), settings, spliced) == check_source(text, str(path), settings)


def test_a_splice_parses_only_the_touched_statement(monkeypatch):
    text = "import torch\n\n\ndef f(x):\n    return x\n\n\ndef g(y):\n    return y\n"
    trees = Trees()
    trees.parse("doc", text)
    parsed = []
    real_parse = cst.parse_module
    monkeypatch.setattr(cst, "parse_module", lambda source: parsed.append(source) or real_parse(source))
    new_text = text.replace("return y", "return torch.Tensor(y)")
    assert trees.parse("doc", new_text).code == new_text
    assert parsed == ["\n\ndef g(y):\n    return torch.Tensor(y)\n"]


DEEP = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n"  # libcst's native parser overflows its stack


@pytest.mark.parametrize("hostile, code", [(DEEP, "TL901"), ("y = 1\n\\\nz = 2\n", "TL902")],
                         ids=["nested-brackets", "lone-backslash"])
def test_a_hostile_buffer_gets_the_clis_finding_whole_or_spliced(hostile, code):
    settings = resolve_settings(Options(isolated=True), REPO)
    assert [d.code for d in check_text(hostile, "whole.py", settings)] == [code]
    valid = "import torch\n\n\ndef f(x):\n    return x\n\n\nt = 1\n"
    assert check_text(valid, "edited.py", settings) == []
    # The edit touches the last statement only: the splice parses that piece on its own first.
    assert [d.code for d in check_text(valid.replace("t = 1\n", hostile), "edited.py", settings)] == [code]


def test_a_comment_typed_above_the_first_statement_goes_where_a_whole_parse_puts_it():
    """libcst gives the comments above the first statement to the module's header: a splice of
    the first statement alone would give them to the statement."""
    trees = Trees()
    trees.parse("doc", "import torch\nx = torch.zeros(3)\n")
    text = "# a comment\nimport torch\nx = torch.zeros(3)\n"
    spliced = trees.parse("doc", text)
    assert spliced.deep_equals(cst.parse_module(text))
