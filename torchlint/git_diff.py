"""`--diff-base REF`: which rows changed since a git ref, for checks that report new findings only.

The changes are those of `git diff -U0 -M <merge-base of REF and HEAD>` (what a pull request
adds, plus uncommitted edits), renamed files followed to their new name; untracked files (not
ignored) are new in full.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field

from torchlint.config import ConfigError
from torchlint.diagnostics import Diagnostic

_HUNK = re.compile(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@")


def _git(*args: str, cwd: str) -> str:
    try:
        completed = subprocess.run(
            ["git", "-c", "core.quotePath=false", *args], cwd=cwd, capture_output=True, text=True,
            encoding="utf-8", errors="surrogateescape",
        )
    except OSError as error:
        raise ConfigError(f"--diff-base needs git: {error.strerror}") from None
    if completed.returncode != 0:
        message = completed.stderr.strip().splitlines()
        raise ConfigError(f"--diff-base: git {args[0]} failed: {message[-1] if message else completed.returncode}")
    return completed.stdout


@dataclass
class ChangedRows:
    rows: dict[str, set[int]] = field(default_factory=dict)  # real path -> changed rows
    whole_files: set[str] = field(default_factory=set)  # untracked: every row is new

    def is_new(self, diagnostic: Diagnostic) -> bool:
        path = os.path.realpath(diagnostic.filename)
        if path in self.whole_files:
            return True
        rows = self.rows.get(path)
        if not rows:
            return False
        if diagnostic.cell is not None:  # a notebook's rows are not the file's: any change counts
            return True
        return any(row in rows for row in range(diagnostic.location.row, diagnostic.end_location.row + 1))


def parse_diff(diff: str, top: str) -> dict[str, set[int]]:
    """Changed rows per file (new side) of a `git diff -U0` text."""
    rows: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            current = None if name == "/dev/null" else rows.setdefault(
                os.path.realpath(os.path.join(top, name[2:] if name.startswith("b/") else name)), set()
            )
        elif current is not None and (hunk := _HUNK.match(line)):
            start, count = int(hunk.group(1)), int(hunk.group(2) or 1)
            current.update(range(start, start + count))
    return rows


def changed_rows(ref: str, cwd: str = ".") -> ChangedRows:
    top = _git("rev-parse", "--show-toplevel", cwd=cwd).strip()
    base = _git("merge-base", ref, "HEAD", cwd=top).strip()
    diff = _git("diff", "-U0", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, "--", cwd=top)
    untracked = _git("ls-files", "--others", "--exclude-standard", "-z", cwd=top)
    return ChangedRows(
        parse_diff(diff, top), {os.path.realpath(os.path.join(top, name)) for name in untracked.split("\0") if name}
    )
