"""Safe fixes keep what working code computes: tests/data/safe_fixes holds working code with
findings, and each of its `case_*` functions returns the same tensors (dtype, device, shape,
values) before and after `--fix`, under the default dtype and under float64 as a caller may set it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchlint.config import Settings
from torchlint.fix import fix_text
from torchlint.rules import all_rules

SAMPLE = Path(__file__).parent / "data" / "safe_fixes" / "working_code.py"
EVERY_RULE = Settings(rules=tuple(rule for rule in all_rules() if not rule.runtime_only), show_hints=True)


def _load(source: str) -> dict:
    namespace: dict = {"__name__": SAMPLE.stem}
    exec(compile(source, SAMPLE.name, "exec", dont_inherit=True), namespace)
    return namespace


def _tensors(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def test_the_sample_has_safe_fixes_to_apply() -> None:
    source = SAMPLE.read_text(encoding="utf-8")
    # A safe fix for each legacy constructor of the sample: one the fixer left alone would prove nothing.
    fixed = fix_text(source, SAMPLE.name, EVERY_RULE).fixed
    assert fixed["TL102"] == source.count("Tensor(") == 11
    assert fixed["TL202"] == len(re.findall(r"functional\.\w*softm", source)) == 3


@pytest.mark.parametrize("default_dtype", ["float32", "float64"])
def test_safe_fixes_compute_what_the_code_computed(default_dtype: str) -> None:
    torch = pytest.importorskip("torch")
    source = SAMPLE.read_text(encoding="utf-8")
    original, fixed = _load(source), _load(fix_text(source, SAMPLE.name, EVERY_RULE).text)
    cases = [name for name in original if name.startswith("case_")]
    assert len(cases) >= 8
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, default_dtype))
    try:
        for name in cases:
            before, after = _tensors(original[name]()), _tensors(fixed[name]())
            for old, new in zip(before, after, strict=True):
                assert (new.dtype, new.device, new.shape) == (old.dtype, old.device, old.shape), name
                assert torch.equal(new, old), name
    finally:
        torch.set_default_dtype(previous)
