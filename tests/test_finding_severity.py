"""A finding may be less severe than its rule's usual level where the code shows it: TL303 on a
model kept on the CPU is a portability warning, where the same line fails on a moved model."""

from __future__ import annotations

from torchlint.config import Settings
from torchlint.diagnostics import Severity
from torchlint.engine import check_source
from torchlint.rules import get_rule

POLICY = """\
import torch
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def act(self, obs):
        with torch.no_grad():
            logits = self.fc(obs)
        return logits.numpy()
"""


def _severities(source: str) -> list[Severity]:
    return [d.severity for d in check_source(source, "agent.py", Settings(rules=(get_rule("TL303"),)))]


def test_numpy_of_a_model_output_is_a_warning_where_the_model_stays_on_the_cpu() -> None:
    assert _severities(POLICY) == [Severity.WARNING]


def test_the_same_line_is_an_error_once_the_file_moves_the_model() -> None:
    moved = POLICY + "\n\npolicy = Policy().cuda()\n"
    assert _severities(moved) == [Severity.ERROR]
