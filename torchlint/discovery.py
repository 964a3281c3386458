"""Which files to check: walk directories for Python files and notebooks, honouring excludes
and `.gitignore`, never following symlinked directories."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from torchlint.sources import MAX_AUXILIARY_BYTES, read_auxiliary

CHECKED_SUFFIXES = (".py", ".pyi", ".ipynb")
# Bounds on a .gitignore pattern, so that matching it stays fast (see `_bounded_pattern`).
_MAX_PATTERN_CHARS = 1024
_MAX_NAME_WILDCARDS = 2  # `*` within a name
_MAX_WILDCARDS = 3  # with `**`
_STAR_RUN = re.compile(r"\*{2,}")


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


def _read_gitignore(directory: str, warnings: list[str]) -> list[_Gitignore]:
    path = os.path.join(directory, ".gitignore")
    if not os.path.lexists(path):
        return []
    data = read_auxiliary(path)
    if data is None:
        warnings.append(f"{path}: not read (not a regular file, or larger than {MAX_AUXILIARY_BYTES // 1_000_000} MB)")
        return []
    patterns = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        pattern = _bounded_pattern(line)
        if pattern is None:
            warnings.append(f"{path}:{number}: pattern skipped: too long or too many wildcards to match in bounded time")
        else:
            patterns.append(pattern)
    try:
        return [_Gitignore(directory, GitIgnoreSpec.from_lines(patterns))]
    except ValueError as error:  # a pattern pathspec rejects
        warnings.append(f"{path}: not used ({error})")
        return []


def _bounded_pattern(line: str) -> str | None:
    """The pattern, with runs of `*` inside a name collapsed (`a***b` is `a*b` to git), or None
    when matching it could take exponential time: a regex with many `*` backtracks over every
    way to split a file name between them."""
    if len(line) > _MAX_PATTERN_CHARS:
        return None
    pattern = _STAR_RUN.sub(lambda run: "**" if _whole_segment(line, run) else "*", line)
    any_depth = pattern.count("**")
    in_name = pattern.count("*") - 2 * any_depth
    if in_name > _MAX_NAME_WILDCARDS or in_name + any_depth > _MAX_WILDCARDS:
        return None
    return pattern


def _whole_segment(line: str, run: re.Match) -> bool:
    """A run of stars that fills a path segment (`**/`, `/**`): git's any-depth wildcard."""
    before = line[run.start() - 1] if run.start() else "/"
    after = line[run.end()] if run.end() < len(line) else "/"
    return before == "/" and after == "/"


def _enclosing_gitignores(top: str, warnings: list[str]) -> list[_Gitignore]:
    """The .gitignore files of the directories above `top`, up to its repository's root."""
    parents = []
    for parent in Path(os.path.abspath(top)).parents:
        parents.append(str(parent))
        if (parent / ".git").exists():
            break
    else:
        return []
    return [gitignore for parent in reversed(parents) for gitignore in _read_gitignore(parent, warnings)]


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
        # Ignore files and patterns not used, one line each, for the caller to show.
        self.warnings: list[str] = []

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
        """The checked files under `top`, depth first in name order; without recursion, so that
        no depth of nesting can end the run."""
        files = []
        warnings = self.warnings
        pending = [(top, _enclosing_gitignores(top, warnings) + _read_gitignore(top, warnings))]
        while pending:
            directory, ignore = pending.pop()
            try:
                with os.scandir(directory) as scan:
                    entries = sorted(scan, key=lambda entry: entry.name)
            except OSError:
                continue
            subdirectories = []
            for entry in entries:
                path = os.path.join(directory, entry.name)
                try:
                    is_directory = entry.is_dir()  # a link to one too, which `_skip` leaves out
                except OSError:
                    continue
                if is_directory:
                    if not self._skip(path, True, ignore):
                        subdirectories.append(path)
                elif entry.name.endswith(CHECKED_SUFFIXES) and not self._skip(path, False, ignore):
                    files.append(os.path.normpath(path))
            for child in reversed(subdirectories):
                pending.append((child, ignore + _read_gitignore(child, warnings)))
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
