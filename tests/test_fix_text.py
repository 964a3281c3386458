"""Fix texts keep the indentation of the code they replace, and applying them gives valid code."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.fix_text import reindent, source_span
from torchlint.rules import get_rule


def test_reindent_adds_the_lost_block_indentation() -> None:
    original = "f(\n        a,\n    )"
    printed = "f(\n    a,\n)"
    assert reindent("g(\n    a,\n    b,\n)", printed, original) == "g(\n        a,\n        b,\n    )"


def test_reindent_leaves_text_alone_when_the_difference_is_not_an_indent() -> None:
    # A multi-line string inside: its lines are not indented by the printer.
    original = 'f(\n        """\n    abc""",\n    )'
    printed = 'f(\n    """\n    abc""",\n)'
    assert reindent("g(\n    x,\n)", printed, original) == "g(\n    x,\n)"
    assert reindent("g(x)", "f(x)", "f(x)") == "g(x)"
    assert reindent("g(\n    x)", "f(\n    x)", "f(\n    x)") == "g(\n    x)"


def test_source_span() -> None:
    lines = ["ab = f(", "    x,", ")"]
    assert source_span(lines, (1, 5), (3, 1)) == "f(\n    x,\n)"
    assert source_span(lines, (2, 4), (2, 5)) == "x"


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
