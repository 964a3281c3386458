"""Suppressions are read from comments only, and TL903 judges the TL codes they name."""

from __future__ import annotations

import pytest

from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.fix import fix_text
from torchlint.rules import get_rule
from torchlint.suppressions import read_suppressions

SETTINGS = Settings(rules=(get_rule("TL102"), get_rule("TL202"), get_rule("TL903")))
LEGACY = "import torch\nx = torch.Tensor(3)\n"


def codes(source: str) -> list[tuple[int, str]]:
    return [(d.location.row, d.code) for d in check_source(source, "m.py", SETTINGS)]


@pytest.mark.parametrize("text", [
    '"""\n# torchlint: noqa\n"""\n',  # a module docstring
    'def f():\n    """Say `# torchlint: noqa` to silence a file."""\n',
    'HELP = """\n# torchlint: noqa\n"""\n',
    "HELP = f'''\n# torchlint: noqa {1}\n'''\n",
])
def test_a_file_level_noqa_inside_a_string_silences_nothing(text: str) -> None:
    assert codes(text + LEGACY) == [(text.count("\n") + 2, "TL102")]


@pytest.mark.parametrize("line", [
    'x = torch.Tensor(3); s = "# noqa"',
    "x = torch.Tensor(3); s = f'{1}  # noqa: TL102'",
    "x = torch.Tensor(3); s = '''# noqa: TL102'''",
])
def test_a_line_noqa_inside_a_string_suppresses_nothing(line: str) -> None:
    assert codes(f"import torch\n{line}\n") == [(2, "TL102")]


def test_a_file_level_noqa_is_at_column_zero() -> None:
    """Indented inside a function it is no file-level directive: the file's other findings stay."""
    helper = "def helper():\n    # torchlint: noqa\n    return 1\n\n\n"
    assert codes(helper + LEGACY) == [(helper.count("\n") + 2, "TL102")]
    assert codes(LEGACY + "\n\ndef helper():\n    return 1\n# torchlint: noqa: TL102\n") == []


def test_comments_suppress_on_their_row_and_for_the_file() -> None:
    assert codes("import torch\nx = torch.Tensor(3)  # noqa: tl102\n") == []
    assert codes("import torch\nx = torch.Tensor(3)  # type: ignore  # noqa\n") == []
    assert codes("# torchlint: noqa\n" + LEGACY) == []
    assert codes("import torch\n\n# torchlint: noqa: TL102\nx = torch.Tensor(3)\n") == []
    # Not on a row of its own: a file-level form after code is no file-level noqa.
    assert codes("import torch  # torchlint: noqa\nx = torch.Tensor(3)\n") == [(2, "TL102")]


def test_a_finding_in_a_multi_line_string_or_continued_row_reads_noqa_where_it_ends() -> None:
    source = 'import torch\ns = f"""{torch.Tensor(3)}\n"""  # noqa: TL102\n'
    assert codes(source) == []
    source = "import torch\nx = 1 + \\\n    torch.Tensor(3).sum()  # noqa: TL102\n"
    assert codes(source) == []
    suppressions = read_suppressions("a = '''\n\n'''\nb = 1 + \\\n  2 + \\\n  3\nc = (\n 1)\n")
    assert [suppressions.noqa_row(row) for row in range(1, 9)] == [3, 3, 3, 6, 6, 6, 7, 8]


def test_unused_and_unknown_tl_codes_are_reported_foreign_codes_are_not() -> None:
    source = "import torch\nx = torch.zeros(3)  # noqa: TL102, E501\ny = torch.Tensor(3)  # noqa: TL102, TL1O2\n"
    found = check_source(source, "m.py", SETTINGS)
    assert [(d.location.row, d.code, d.message) for d in found] == [
        (2, "TL903", "Unused `noqa` directive (unused: `TL102`)"),
        (3, "TL903", "Unused `noqa` directive (unknown: `TL1O2`)"),
    ]
    # A rule that did not run cannot be judged.
    assert codes("import torch\nx = torch.zeros(3)  # noqa: TL101\n") == []
    # TL903 itself can be suppressed.
    assert codes("import torch\nx = torch.zeros(3)  # noqa: TL102, TL903\n") == []


@pytest.mark.parametrize("before, after", [
    ("x = torch.zeros(3)  # noqa: TL102\n", "x = torch.zeros(3)\n"),
    ("x = torch.zeros(3)  # noqa: E501, TL102\n", "x = torch.zeros(3)  # noqa: E501\n"),
    ("x = torch.zeros(3)  # noqa: TL102  # type: ignore\n", "x = torch.zeros(3)  # type: ignore\n"),
    ("x = torch.zeros(3)  # noqa: TL102 because of X\n", "x = torch.zeros(3)  # because of X\n"),
    ("x = torch.zeros(3)  # why  # noqa: TL102\n", "x = torch.zeros(3)  # why\n"),
    ("x = torch.Tensor(3)  # noqa: TL102, TL202\n", "x = torch.Tensor(3)  # noqa: TL102\n"),
])
def test_the_fix_removes_the_unused_codes_or_the_directive(before: str, after: str) -> None:
    outcome = fix_text("import torch\n" + before, "m.py", SETTINGS)
    assert outcome.text == "import torch\n" + after
    assert codes(outcome.text) == []
