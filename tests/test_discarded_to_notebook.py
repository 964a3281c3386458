"""TL304 in notebooks: a cell's top-level expression is displayed, so it is not 'discarded'."""

from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import get_rule

SOURCE = """import torch
x = torch.zeros(3)
x.half()


def f():
    y = torch.zeros(3)
    y.half()
"""


def _rows(filename: str) -> list[int]:
    settings = Settings(rules=(get_rule("TL304"),))
    return [d.location.row for d in check_source(SOURCE, filename, settings)]


def test_top_level_notebook_expression_is_not_reported() -> None:
    assert _rows("analysis.ipynb") == [8]


def test_same_code_in_a_script_is_reported() -> None:
    assert _rows("train.py") == [3, 8]
