"""The shape-rule fixtures run under torch: every `bad_*` case fails the way the rule says, every
`ok_*` look-alike runs.

A `bad_*` case of TL103/TL104 raises RuntimeError (ValueError for a loss's batch mismatch,
AssertionError for MultiheadAttention's size, IndexError for a dim past a tensor's rank, a warning for a loss that broadcasts its target). A `bad_*` case of TL105 either raises or
returns a value different from the same case with the rule's fix applied (`keepdim=True`).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from torchlint.config import Settings
from torchlint.fix import fix_text
from torchlint.rules import get_rule

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
SHAPE_CODES = ("TL103", "TL104", "TL105")
SHAPE_FIXTURES = sorted(path for code in SHAPE_CODES for path in FIXTURES.glob(f"{code}_*.py"))


def _load(source: str, name: str) -> dict:
    namespace: dict = {"__name__": name}
    # As Python runs the fixture: without this module's `from __future__ import annotations`.
    exec(compile(source, name, "exec", dont_inherit=True), namespace)
    return namespace


def _cases(namespace: dict, prefix: str) -> list[str]:
    return [name for name in namespace if name.startswith(prefix) and callable(namespace[name])]


@pytest.mark.parametrize("fixture", SHAPE_FIXTURES, ids=lambda path: path.stem)
def test_bad_cases_fail_and_ok_cases_run(fixture: Path) -> None:
    pytest.importorskip("torch")
    source = fixture.read_text(encoding="utf-8")
    namespace = _load(source, fixture.name)
    fixed = _fixed_namespace(source, fixture)
    bad, ok = _cases(namespace, "bad_"), _cases(namespace, "ok_")
    # The main fixture of each rule holds a dozen cases of each kind, the others a few.
    assert (len(bad) >= 12 and len(ok) >= 12) or (fixture.stem.count("_") > 1 and bad and ok), (len(bad), len(ok))
    for name in ok:
        namespace[name]()
    for name in bad:
        assert _fails(namespace[name], fixed.get(name)), f"{fixture.name}: {name} ran without a shape error"


def _fixed_namespace(source: str, fixture: Path) -> dict:
    code = fixture.stem[:5]
    rule = get_rule(code)
    if rule.fix_applicability is None:
        return {}
    return _load(fix_text(source, fixture.name, Settings(rules=(rule,))).text, fixture.name)


def _fails(case, fixed_case) -> bool:
    import torch

    with warnings.catch_warnings():
        # A loss given a target of another shape only warns that it broadcasts them.
        warnings.simplefilter("error", UserWarning)
        try:
            result = case()
        except (RuntimeError, ValueError, AssertionError, IndexError, UserWarning):
            # Losses raise ValueError for a batch mismatch; MultiheadAttention asserts its size; a
            # dim past a tensor's rank (`cat` of a (B,) and a (B, K) along dim 1) is an IndexError.
            return True
    if fixed_case is None:
        return False
    expected = fixed_case()
    return result.shape != expected.shape or not torch.allclose(result, expected)
