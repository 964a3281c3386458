"""Is the current point of the walk in code that only runs on some versions, or never?

Inside either branch of an `if` (or conditional expression) whose test checks the torch version or
the presence of a torch API (`if is_torch_greater_or_equal("2.4"):`, `if hasattr(torch, "compile")`,
`version.parse(torch.__version__) < ...`), and inside `if TYPE_CHECKING:`, code is deliberately
written for another torch (or never runs): rules report nothing there. Verdicts are cached per
test; the question is only asked for candidate findings.
"""

from __future__ import annotations

import re

import libcst as cst

_VERSION_TEST = re.compile(
    r"torch\w*version|version\w*torch|torch\.__version__|torch\w*(greater|less|_ge_|_gt_|_le_|_lt_|_eq_)"
    r"|torch_?\d|hasattr\(\s*(torch|functorch|F|nn)\b[\w.]*\s*,|sys\.version_info"
    r"|RequirementCache\(\s*f?['\"](torch|lightning)|compare_version\(\s*['\"]torch|\bTYPE_CHECKING\b",
    re.IGNORECASE,
)

_verdicts: dict[int, tuple[cst.BaseExpression, bool]] = {}


def in_version_gate(ctx) -> bool:
    """True inside a version-gated `if` branch or an `if TYPE_CHECKING:` block."""
    for node in ctx.ancestors:
        if isinstance(node, (cst.If, cst.IfExp)) and _is_version_test(ctx, node.test):
            return True
    return False


def _is_version_test(ctx, test: cst.BaseExpression) -> bool:
    cached = _verdicts.get(id(test))
    if cached is not None and cached[0] is test:
        return cached[1]
    verdict = bool(_VERSION_TEST.search(ctx.code_for(test)))
    if len(_verdicts) > 4096:
        _verdicts.clear()
    _verdicts[id(test)] = (test, verdict)
    return verdict
