"""Per-rule fixtures: `tests/fixtures/rules/TLxxx*.py` hold positives and look-alike negatives.

A line that must be reported ends with `# error: TLxxx`; every other line must stay quiet. The
exact rendered findings (row, column, message, notes on related places, fix) are kept beside the fixture in a `.expected`
snapshot that a reviewer reads. Set TORCHLINT_UPDATE_SNAPSHOTS=1 to rewrite the snapshots.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import get_rule

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
_MARKER = re.compile(r"#\s*error:\s*((?:TL\d{3}[\s,]*)+)")


def _fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("TL*.py"))


def _expected_rows(source: str, code: str) -> list[int]:
    rows = []
    for row, line in enumerate(source.splitlines(), start=1):
        match = _MARKER.search(line)
        if match and code in re.split(r"[\s,]+", match.group(1)):
            rows.append(row)
    return rows


def render_findings(source: str, code: str, filename: str) -> str:
    # Hints too: the fixtures test what each rule finds, whatever a run shows by default.
    diagnostics = check_source(source, filename, Settings(rules=(get_rule(code),), show_hints=True))
    lines = []
    for d in diagnostics:
        # A finding less or more severe than its rule says so; the usual severity is implied.
        severity = "" if d.severity == get_rule(code).severity else f"[{d.severity.value}] "
        lines.append(
            f"{d.location.row}:{d.location.column}-{d.end_location.row}:{d.end_location.column} {d.code} {severity}{d.message}"
        )
        for note in d.related:
            where = "" if note.filename == filename else f"{note.filename}:"
            lines.append(
                f"    note: {where}{note.location.row}:{note.location.column}-{note.end_location.row}:"
                f"{note.end_location.column} {note.message}"
            )
        if d.fix is not None:
            lines.append(f"    fix ({d.fix.applicability.value}): {d.fix.message}")
            for edit in d.fix.edits:
                lines.append(
                    f"      {edit.location.row}:{edit.location.column}-{edit.end_location.row}:{edit.end_location.column} -> {edit.content!r}"
                )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("fixture", _fixture_files(), ids=lambda path: path.stem)
def test_fixture(fixture: Path) -> None:
    code = fixture.stem[:5]
    assert get_rule(code) is not None, f"{fixture.name} names no known rule"
    source = fixture.read_text(encoding="utf-8")
    rendered = render_findings(source, code, fixture.name)
    reported_rows = [int(line.split(":", 1)[0]) for line in rendered.splitlines() if line and not line.startswith(" ")]
    assert sorted(set(reported_rows)) == _expected_rows(source, code), rendered
    snapshot = fixture.with_suffix(".expected")
    if os.environ.get("TORCHLINT_UPDATE_SNAPSHOTS") or not snapshot.exists():
        snapshot.write_text(rendered, encoding="utf-8")
    assert rendered == snapshot.read_text(encoding="utf-8")


def test_every_rule_with_visitors_has_a_fixture() -> None:
    from torchlint.rules import all_rules

    covered = {path.stem[:5] for path in _fixture_files()}
    static_rules = {rule.code for rule in all_rules() if not rule.runtime_only and rule.code not in ("TL901", "TL902")}
    assert static_rules <= covered, f"rules without a fixture: {sorted(static_rules - covered)}"
