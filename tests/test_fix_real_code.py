"""`--fix --unsafe-fixes` over a realistic PyTorch package written for the tests (tests/data/fix_sample):
every file still parses and compiles, keeps its line endings and final newline, the fixes cover many
rules, and a second run finds nothing to fix."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import libcst as cst

from torchlint.config import Settings
from torchlint.engine import check_files
from torchlint.fix import fix_files, is_applicable
from torchlint.rules import all_rules

SAMPLE = Path(__file__).parent / "data" / "fix_sample"
# Every rule, also those off by default: the most fixes the sample can get.
EVERY_RULE = Settings(rules=tuple(rule for rule in all_rules() if not rule.runtime_only))
# The sample holds findings of about twenty fixable rules; a handful fewer means fixes went missing.
MIN_FIXED_CODES = 8


def _copy(tmp_path: Path) -> list[tuple[str, str]]:
    shutil.copytree(SAMPLE, tmp_path / SAMPLE.name)
    files = sorted(tmp_path.rglob("*.py"))
    assert sum(len(path.read_text(encoding="utf-8").splitlines()) for path in files) > 1000
    return [(str(path), str(path.relative_to(tmp_path))) for path in files]


def _snapshot(files: list[tuple[str, str]]) -> dict[str, bytes]:
    return {path: Path(path).read_bytes() for path, _ in files}


def test_sample_holds_the_layouts_the_fixer_must_keep(tmp_path: Path) -> None:
    # A checkout that normalised the line endings or a final newline would make the test below weaker.
    original = _snapshot(_copy(tmp_path))
    assert any(b"\r\n" in data for data in original.values())
    assert any(not data.endswith(b"\n") for data in original.values())
    assert any(not data.isascii() for data in original.values())


def test_fixing_real_code_keeps_it_valid_and_settles(tmp_path: Path) -> None:
    files = _copy(tmp_path)
    original = _snapshot(files)
    fixable = [d for d in check_files(files, EVERY_RULE, jobs=1) if is_applicable(d, unsafe=True)]
    assert fixable, "the sample should hold findings with fixes"

    results = fix_files(files, EVERY_RULE, jobs=2, unsafe=True)
    assert [problem for result in results for problem in result.problems] == []
    applied = sum(sum(result.fixed.values()) for result in results)
    assert applied >= len(fixable)
    fixable_codes = {d.code for d in fixable}
    assert len(fixable_codes) >= MIN_FIXED_CODES
    assert fixable_codes <= {code for result in results for code in result.fixed}
    assert not [d for result in results for d in result.diagnostics if is_applicable(d, unsafe=True)]
    fixed = _snapshot(files)
    changed = {path for path in fixed if fixed[path] != original[path]}
    assert changed == {path for (path, _), result in zip(files, results) if result.fixed}
    assert changed == {path for path, _ in files if path.endswith(tuple(d.filename for d in fixable))}

    for path, data in fixed.items():
        text = data.decode("utf-8")
        assert cst.parse_module(text).code == text
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
        # Line endings and the final newline are as they were.
        assert text.endswith("\n") == original[path].decode("utf-8").endswith("\n")
        assert data.count(b"\r") == original[path].count(b"\r")

    second = fix_files(files, EVERY_RULE, jobs=2, unsafe=True)
    assert all(result.fixed == {} and not result.written for result in second)
    assert _snapshot(files) == fixed
