"""Applying the fixes of TL204/TL205/TL501-TL503 gives valid code that keeps its layout and indentation."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import get_rule


def apply_fixes(source: str, codes: tuple[str, ...]) -> str:
    diagnostics = check_source(source, "t.py", Settings(rules=tuple(get_rule(code) for code in codes)))
    edits = sorted((edit for d in diagnostics if d.fix for edit in d.fix.edits), key=lambda e: e.location, reverse=True)
    lines = source.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    text = source
    for edit in edits:
        start = offsets[edit.location.row - 1] + edit.location.column - 1
        end = offsets[edit.end_location.row - 1] + edit.end_location.column - 1
        text = text[:start] + edit.content + text[end:]
    return text


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            """
            def load(path):
                if path:
                    return torch.load(
                        path,
                        map_location="cpu",
                    )
            """,
            """
            def load(path):
                if path:
                    return torch.load(
                        path,
                        map_location="cpu",
                        weights_only=True,
                    )
            """,
        ),
        (
            """
            class Block(nn.Module):
                def forward(self, x):
                    with torch.cuda.amp.autocast(False, torch.bfloat16):
                        return checkpoint(self.f, x)
            """,
            """
            class Block(nn.Module):
                def forward(self, x):
                    with torch.amp.autocast("cuda", enabled=False, dtype=torch.bfloat16):
                        return checkpoint(self.f, x, use_reentrant=False)
            """,
        ),
        (
            """
            def loss(logits, y):
                return F.binary_cross_entropy(torch.sigmoid(logits), y) + torch.log(torch.exp(logits).sum(1)).mean()
            """,
            """
            def loss(logits, y):
                return F.binary_cross_entropy_with_logits(logits, y) + torch.logsumexp(logits, 1).mean()
            """,
        ),
    ],
)
def test_applied_fixes(before: str, after: str) -> None:
    header = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nfrom torch.utils.checkpoint import checkpoint\n"
    source = header + textwrap.dedent(before)
    fixed = apply_fixes(source, ("TL204", "TL205", "TL501", "TL502", "TL503"))
    assert fixed == header + textwrap.dedent(after)
    ast.parse(fixed)
