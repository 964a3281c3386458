"""Which files to check: walk directories for Python files and notebooks, honouring excludes
and `.gitignore`, never following symlinked directories."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

CHECKED_SUFFIXES = (".py", ".pyi", ".ipynb")


class PathError(Exception):
    """A path given on the command line does not exist (a usage error)."""


@dataclass(frozen=True)
class _Gitignore:
    """One .gitignore file: its patterns apply to paths below its directory."""

    base: str
    spec: GitIgnoreSpec

    def verdict(self, path: str, is_directory: bool) -> bool | None:
        """True: ignored; False: re-included by a `!` pattern; None: no pattern matches."""
        relative = os.path.relpath(path, self.base).replace(os.sep, "/")
        if relative.startswith(".."):
            return None
        return self.spec.check_file(relative + "/" if is_directory else relative).include


def _read_gitignore(directory: str) -> list[_Gitignore]:
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as handle:
            return [_Gitignore(directory, GitIgnoreSpec.from_lines(handle.read().splitlines()))]
    except OSError:
        return []


def _enclosing_gitignores(top: str) -> list[_Gitignore]:
    """The .gitignore files of the directories above `top`, up to its repository's root."""
    parents = []
    for parent in Path(os.path.abspath(top)).parents:
        parents.append(str(parent))
        if (parent / ".git").exists():
            break
    else:
        return []
    return [gitignore for parent in reversed(parents) for gitignore in _read_gitignore(parent)]


def _git_ignored(path: str, is_directory: bool, gitignores: list[_Gitignore]) -> bool:
    """As git decides: the deepest .gitignore with a matching pattern, its last such pattern."""
    for gitignore in reversed(gitignores):
        verdict = gitignore.verdict(path, is_directory)
        if verdict is not None:
            return verdict
    return False


class Discovery:
    def __init__(self, exclude: tuple[str, ...], root: str, *, force_exclude: bool = False) -> None:
        # One regex for every pattern: matching each pattern with fnmatch, against the path and
        # each of its parts, was most of a warm (cached) run's time after start-up.
        self._excluded = re.compile("|".join(fnmatch.translate(os.path.normcase(p.rstrip("/"))) for p in exclude)) if exclude else None
        self._root = root
        self._force_exclude = force_exclude

    def is_excluded(self, path: str) -> bool:
        """An exclude pattern matches the path's name, a parent directory's name, or the path
        relative to the configuration root."""
        absolute = os.path.abspath(path)
        relative = os.path.relpath(absolute, self._root).replace(os.sep, "/")
        parts = relative.split("/") if not relative.startswith("..") else [os.path.basename(absolute)]
        matches = self._excluded.match if self._excluded is not None else None
        # normcase as fnmatch.fnmatch does: case-insensitive on Windows.
        names = [os.path.normcase(name) for name in (relative, *parts)]
        return matches is not None and any(matches(name) for name in names)

    def files(self, paths: list[str]) -> list[str]:
        """The files to check under `paths`, sorted, each once."""
        found: dict[str, None] = {}
        for path in paths:
            if os.path.isdir(path):
                if self.is_excluded(path) and self._force_exclude:
                    continue
                for file in self._walk(path):
                    found.setdefault(file, None)
            elif os.path.lexists(path):
                # Explicit files are always checked, unless --force-exclude says otherwise.
                if not (self._force_exclude and self.is_excluded(path)):
                    found.setdefault(os.path.normpath(path), None)
            else:
                raise PathError(f"{path}: no such file or directory")
        return sorted(found)

    def _walk(self, top: str) -> list[str]:
        files = []
        patterns = {os.path.abspath(top): _enclosing_gitignores(top) + _read_gitignore(top)}
        for directory, subdirectories, filenames in os.walk(top, followlinks=False):
            ignore = patterns[os.path.abspath(directory)]
            subdirectories[:] = sorted(
                name for name in subdirectories
                if not self._skip(os.path.join(directory, name), True, ignore)
            )
            for name in subdirectories:
                child = os.path.abspath(os.path.join(directory, name))
                patterns[child] = ignore + _read_gitignore(child)
            for name in sorted(filenames):
                path = os.path.join(directory, name)
                if name.endswith(CHECKED_SUFFIXES) and not self._skip(path, False, ignore):
                    files.append(os.path.normpath(path))
        return files

    def _skip(self, path: str, is_directory: bool, ignore: list[_Gitignore]) -> bool:
        if is_directory and os.path.islink(path):
            return True
        return self.is_excluded(path) or _git_ignored(os.path.abspath(path), is_directory, ignore)


def display_name(path: str) -> str:
    """The path as shown in output: relative to the working directory when under it."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative
