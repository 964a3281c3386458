"""Regenerate docs/rules/*.md, the rule table in README.md and torchlint/rules/catalog.py from the
rule classes and their docstrings."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchlint.docs import generated_files  # noqa: E402


def main() -> None:
    expected = generated_files(ROOT)
    for stale in (ROOT / "docs" / "rules").glob("TL*.md"):
        if stale not in expected:
            stale.unlink()
    for path, content in expected.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
