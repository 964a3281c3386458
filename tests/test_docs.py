from __future__ import annotations

from pathlib import Path

import pytest

from torchlint.docs import generated_files
from torchlint.rules import rule_classes

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path,content", sorted(generated_files(ROOT).items()), ids=lambda v: getattr(v, "name", ""))
def test_generated_docs_are_up_to_date(path: Path, content: str):
    assert path.exists(), f"{path} is missing: run python scripts/generate_docs.py"
    assert path.read_text(encoding="utf-8") == content, f"{path} is stale: run python scripts/generate_docs.py"


@pytest.mark.parametrize("rule", rule_classes(), ids=lambda rule: rule.code)
def test_every_rule_is_documented(rule):
    assert rule.missing_doc_sections() == []
    assert rule.summary and rule.name == rule.name.lower() and " " not in rule.name
    if rule.fix_applicability is not None and rule.code not in ("TL901", "TL902"):
        assert "Fix safety" in rule.doc_sections(), "a fixable rule says how safe its fix is"
