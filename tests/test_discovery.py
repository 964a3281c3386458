from __future__ import annotations

import os

from torchlint.config import DEFAULT_EXCLUDES
from torchlint.discovery import Discovery


def _names(files: list[str], root) -> list[str]:
    return sorted(os.path.relpath(path, root) for path in files)


def test_walks_python_files_and_skips_default_excludes(tmp_path):
    for relative in ("a.py", "pkg/b.py", "pkg/c.pyi", "nb.ipynb", "notes.txt", ".venv/lib/x.py",
                     "build/y.py", "demo.egg-info/z.py", "pkg/__pycache__/w.py"):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    files = Discovery(DEFAULT_EXCLUDES, str(tmp_path)).files([str(tmp_path)])
    assert _names(files, tmp_path) == ["a.py", "nb.ipynb", "pkg/b.py", "pkg/c.pyi"]


def test_gitignore_is_honoured_in_nested_directories(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n*_pb2.py\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / ".gitignore").write_text("local.py\n")
    for relative in ("generated/g.py", "x_pb2.py", "pkg/local.py", "pkg/kept.py", "kept.py"):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    files = Discovery(DEFAULT_EXCLUDES, str(tmp_path)).files([str(tmp_path)])
    assert _names(files, tmp_path) == ["kept.py", "pkg/kept.py"]


def test_symlinked_directories_are_not_followed(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("")
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")
    files = Discovery(DEFAULT_EXCLUDES, str(tmp_path)).files([str(tmp_path)])
    assert _names(files, tmp_path) == ["pkg/m.py"]


def test_explicit_files_are_checked_unless_force_exclude(tmp_path):
    (tmp_path / "build").mkdir()
    target = tmp_path / "build" / "gen.py"
    target.write_text("")
    assert Discovery(DEFAULT_EXCLUDES, str(tmp_path)).files([str(target)]) == [str(target)]
    assert Discovery(DEFAULT_EXCLUDES, str(tmp_path), force_exclude=True).files([str(target)]) == []
