"""Where the project is and which of its files an import names, resolved like Python would.

The project root is the nearest directory above a checked file holding `pyproject.toml`,
`setup.py`, `setup.cfg` or `.git`; else the configuration root when the file lies under it; else
the directory above the file's top-level package. Nothing outside the root is ever read (no
site-packages, no standard library). Absolute imports are searched, in order, from the directory
that holds the importer's top-level package (Python's script directory), the root and `root/src`;
relative imports from the importer's package. A directory without `__init__.py` is a namespace
package.

Every answer depends on files and directory listings: `Layout.state(path)` is what the result
cache records of each one (a digest of a file's bytes, of a directory's entries), so that a
cached result is served only while everything it was derived from is unchanged.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache

from torchlint.sources import MAX_SOURCE_BYTES

_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
# Absolute imports never looked up in the project: torch's API is known in `analysis/`.
_NEVER_PROJECT = frozenset({"torch", "__future__", "builtins", "typing"})


@lru_cache(maxsize=4096)
def _marked_root(directory: str) -> str | None:
    current = directory
    while True:
        if any(os.path.exists(os.path.join(current, marker)) for marker in _MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


@lru_cache(maxsize=4096)
def _top_package_parent(directory: str) -> str:
    """The directory above the outermost package holding `directory` (itself when not a package)."""
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return directory


def project_root(path: str, configured_root: str) -> str:
    directory = os.path.dirname(path)
    marked = _marked_root(directory)
    if marked is not None:
        return marked
    configured = os.path.realpath(configured_root)
    if directory == configured or directory.startswith(configured + os.sep):
        return configured
    return _top_package_parent(directory)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


# What was read from disk in this process: path -> (stat signature, content, state). A file is
# read again only when its signature changed (a long-lived language server sees edits).
_DISK: dict[str, tuple[tuple | None, object, str]] = {}


def _signature(path: str) -> tuple | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


def _listing(directory: str) -> tuple[frozenset[str], str]:
    try:
        with os.scandir(directory) as scan:
            names = frozenset(
                entry.name for entry in scan
                if entry.name.endswith(".py") or (entry.is_dir() and entry.name.isidentifier())
            )
    except OSError:
        names = frozenset()
    return names, "dir:" + _digest("\0".join(sorted(names)).encode("utf-8", "surrogatepass"))


def _contents(path: str) -> tuple[bytes | None, str]:
    """The file's bytes and their digest; a file too large to check is not read (its size and
    time of change stand for its state)."""
    try:
        info = os.stat(path)
        if info.st_size > MAX_SOURCE_BYTES:
            return None, f"large:{info.st_size}:{info.st_mtime_ns}"
        with open(path, "rb") as stream:
            data = stream.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return None, ""
    return (data, _digest(data)) if len(data) <= MAX_SOURCE_BYTES else (None, f"large:{len(data)}")


class Layout:
    """The files of one project root as one check sees them: each file and listing is looked at
    (a `stat`) once per check, and read again only when it changed."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._seen: dict[str, tuple[object, str]] = {}

    def inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + os.sep)

    def _look(self, key: str, path: str, load) -> tuple[object, str]:
        found = self._seen.get(key)
        if found is None:
            signature = _signature(path)
            cached = _DISK.get(key)
            if cached is None or cached[0] != signature or signature is None:
                content, state = load(path)
                cached = _DISK[key] = (signature, content, state)
            found = self._seen[key] = (cached[1], cached[2])
        return found

    def entries(self, directory: str) -> frozenset[str]:
        """The names in `directory` that can be modules: `*.py` files and subdirectories."""
        return self._look(directory + os.sep, directory, _listing)[0]

    def read(self, path: str) -> bytes | None:
        return self._look(path, path, _contents)[0]

    def state(self, path: str) -> str:
        """What a cached result records of `path` (a directory's listing when it ends with a separator)."""
        if path.endswith(os.sep):
            return self._look(path, path[:-1], _listing)[1]
        return self._look(path, path, _contents)[1]

    def search_directories(self, importer: str) -> list[str]:
        found = []
        for directory in (_top_package_parent(os.path.dirname(importer)), self.root, os.path.join(self.root, "src")):
            if self.inside(directory) and directory not in found:
                found.append(directory)
        return found

    def module_path(self, directory: str, parts: list[str], used: set[str]) -> str | None:
        """The file of module `parts` under `directory`: `a/b.py`, `a/b/__init__.py`, or the
        directory `a/b` of a namespace package. `used` collects the listings read (`dir/`)."""
        for index, part in enumerate(parts):
            used.add(directory + os.sep)
            names = self.entries(directory)
            last = index == len(parts) - 1
            if last and part + ".py" in names:
                return os.path.join(directory, part + ".py")
            if part not in names:
                return None
            directory = os.path.join(directory, part)
        used.add(directory + os.sep)
        return os.path.join(directory, "__init__.py") if "__init__.py" in self.entries(directory) else directory

    def resolve(self, qualified: str, importer: str, used: set[str]) -> tuple[str, list[str]] | None:
        """(module file or namespace directory, the names after it) for an imported name as the
        import table writes it (`pkg.utils.mask`, `.utils.mask`, `..mask`)."""
        stripped = qualified.lstrip(".")
        dots = len(qualified) - len(stripped)
        parts = [part for part in stripped.split(".") if part]
        if dots:
            base = os.path.dirname(importer)
            for _ in range(dots - 1):
                base = os.path.dirname(base)
            if not self.inside(base):
                return None
            bases = [base]
        elif not parts or parts[0] in _NEVER_PROJECT:
            return None
        else:
            bases = self.search_directories(importer)
        for base in bases:
            for length in range(len(parts), -1, -1):
                if length == 0:
                    if dots:  # `from . import x`: the package itself
                        init = os.path.join(base, "__init__.py")
                        used.add(base + os.sep)
                        return (init if "__init__.py" in self.entries(base) else base), parts
                    break
                found = self.module_path(base, parts[:length], used)
                if found is not None:
                    return found, parts[length:]
        return None


def dependencies_unchanged(recorded: dict[str, str], layout: Layout | None = None) -> bool:
    """Do these files and listings still hold what a cached result was derived from? Looked at
    through `layout` when given: the lookups of one run, before anything is checked or fixed,
    share it, and each file they depend on is looked at once."""
    fresh = layout or Layout("")
    return all(fresh.state(path) == state for path, state in recorded.items())
