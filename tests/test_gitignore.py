"""`.gitignore` matching agrees with git itself on a tree of tricky patterns."""

from __future__ import annotations

import subprocess
from pathlib import Path

from torchlint.discovery import Discovery

GITIGNORE = """\
# a comment, then tricky patterns
build/
/top_only.py
**/gen/*.py
*.py[co]
doc/**/*.py
!doc/**/keep.py
\\#hash.py
a/**/b.py
deep/*
!deep/kept/
spaces.py   
\\!bang.py
*~.py
"""
FILES = [
    "ok.py", "top_only.py", "sub/top_only.py", "build/x.py", "sub/build/x.py", "x/gen/y.py", "gen/z.py",
    "x/gen/sub/y.py", "doc/a.py", "doc/q/r/s.py", "doc/q/keep.py", "#hash.py", "sub/#hash.py", "a/b.py",
    "a/x/y/b.py", "deep/one.py", "deep/kept/two.py", "spaces.py", "!bang.py", "tmp~.py", "nested/ignored.py",
    "nested/important.py", "nested/inner/important.py", "nested/inner/other.py",
]


def test_discovery_skips_exactly_what_git_ignores(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text(GITIGNORE)
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / ".gitignore").write_text("*.py\n!important.py\n")
    (tmp_path / "nested" / "inner").mkdir()
    (tmp_path / "nested" / "inner" / ".gitignore").write_text("!other.py\n")
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"], cwd=tmp_path, check=True, capture_output=True,
        text=True,
    ).stdout.splitlines()
    expected = sorted(name for name in listed if name.endswith(".py"))
    found = Discovery((".git",), str(tmp_path)).files([str(tmp_path)])
    assert sorted(str(Path(path).relative_to(tmp_path)) for path in found) == expected
    # The patterns matter: git keeps some of the files and skips others.
    assert "ok.py" in expected and "doc/a.py" not in expected and "doc/q/keep.py" in expected and "nested/inner/other.py" in expected
