"""A finding may be less severe than its rule's usual level where the code shows it: TL303 on a
model kept on the CPU is a portability warning, where the same line fails on a moved model."""

from __future__ import annotations

from pathlib import Path

from torchlint.config import Settings
from torchlint.diagnostics import Severity
from torchlint.engine import check_source
from torchlint.rules import get_rule

# A policy whose model stays on the CPU: one output read with .numpy(), one that requires grad.
POLICY = (Path(__file__).parent / "fixtures" / "rules" / "TL303_model_kept_on_cpu.py").read_text()


def _severities(source: str) -> list[tuple[int, Severity]]:
    found = check_source(source, "agent.py", Settings(rules=(get_rule("TL303"),)))
    return [(d.location.row, d.severity) for d in found]


def test_numpy_of_a_model_output_is_a_warning_where_the_model_stays_on_the_cpu() -> None:
    assert _severities(POLICY) == [(16, Severity.WARNING), (20, Severity.ERROR)]


def test_the_same_line_is_an_error_once_the_file_moves_the_model() -> None:
    moved = POLICY + "\n\npolicy = Policy().cuda()\n"
    assert _severities(moved) == [(16, Severity.ERROR), (20, Severity.ERROR)]
