"""A rule finds the same with every other rule selected as alone: the analyses they share answer
the same whichever rule asks first (a rule that interprets a dataset's `__init__` before another
reads the loader's batches must not leave that one a partial answer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import all_rules, get_rule

FIXTURES = Path(__file__).parent / "fixtures" / "rules"


def _findings(source: str, path: Path, rules: tuple) -> list[tuple[int, int, str]]:
    code = path.name[:5]
    return sorted(
        (d.location.row, d.location.column, d.message)
        for d in check_source(source, str(path), Settings(rules=rules)) if d.code == code
    )


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("TL*.py")), ids=lambda path: path.stem)
def test_rule_alone_and_with_all_others_agree(fixture: Path) -> None:
    source = fixture.read_text(encoding="utf-8")
    alone = _findings(source, fixture, (get_rule(fixture.name[:5]),))
    with_all = _findings(source, fixture, tuple(all_rules()))
    assert with_all == alone
