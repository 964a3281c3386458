"""A per-file result cache, so that re-checking unchanged files costs a hash and a read.

An entry's key covers everything a result depends on: torchlint's own source code, the rules
that apply to the file (with their settings), the file's name and its bytes; the entry also records
the state of each project file (and directory listing) that the answers about its imported names
were read from (see torchlint/project/), and is served only while they are unchanged. A stale entry can
therefore never be served; entries are written atomically and unreadable ones are ignored.

The cache lives in the user's cache directory, one folder per project (named by a hash of the
project root's real path), never in the checked tree: the keys are computable by anyone, so a
pull request could otherwise commit entries saying "no findings" for its files, or plant a
symlink that makes the cache write somewhere else. A directory someone else owns is not used.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from torchlint.config import Settings
from torchlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Related, Severity
from torchlint.project.layout import Layout, dependencies_unchanged
from torchlint.sources import UnreadableFile, read_bytes

# Where the cache is kept, when set (else the platform's user cache directory, see `cache_home`).
CACHE_DIRECTORY_VARIABLE = "TORCHLINT_CACHE_DIR"


def cache_home() -> Path:
    """The user's torchlint cache directory: $TORCHLINT_CACHE_DIR, else the platform's."""
    if os.environ.get(CACHE_DIRECTORY_VARIABLE):
        return Path(os.environ[CACHE_DIRECTORY_VARIABLE])
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "torchlint" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "torchlint"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torchlint"


def project_directory(root: str) -> Path:
    """The cache folder of the project whose configuration root is `root`."""
    real = os.path.realpath(root)
    return cache_home() / hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _owned_by_user(path: Path) -> bool:
    """Is this directory the user's own (always true where there are no owners to compare)?"""
    if not hasattr(os, "getuid"):
        return True
    info = os.stat(path)
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


@lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(filename: str, data: bytes, settings: Settings) -> str:
    rules = ",".join(rule.code for rule in settings.rules_for(filename))
    header = (f"{_code_fingerprint()}\0{rules}\0{settings.target_torch_version}\0{settings.torch_ceiling}\0"
              f"{settings.show_hints}\0{filename}\0")
    return hashlib.sha256(header.encode("utf-8", "surrogatepass") + data).hexdigest()


def _location(value: dict) -> Location:
    return Location(value["row"], value["column"])


def _encode(diagnostic: Diagnostic) -> dict:
    fix = diagnostic.fix
    return {
        "code": diagnostic.code, "name": diagnostic.name, "message": diagnostic.message,
        "location": [diagnostic.location.row, diagnostic.location.column],
        "end_location": [diagnostic.end_location.row, diagnostic.end_location.column],
        "severity": diagnostic.severity.value, "noqa_row": diagnostic.noqa_row, "cell": diagnostic.cell,
        "fix": None if fix is None else {
            "applicability": fix.applicability.value, "message": fix.message,
            "edits": [[e.content, e.location.row, e.location.column, e.end_location.row, e.end_location.column]
                      for e in fix.edits],
        },
        "related": [[note.message, note.filename, note.location.row, note.location.column,
                     note.end_location.row, note.end_location.column, note.cell] for note in diagnostic.related],
    }


def _decode(value: dict, filename: str) -> Diagnostic:
    fix = value["fix"]
    return Diagnostic(
        code=value["code"], name=value["name"], message=value["message"], filename=filename,
        location=Location(*value["location"]), end_location=Location(*value["end_location"]),
        severity=Severity(value["severity"]), noqa_row=value["noqa_row"], cell=value["cell"],
        fix=None if fix is None else Fix(
            Applicability(fix["applicability"]), fix["message"],
            tuple(Edit(content, Location(r1, c1), Location(r2, c2)) for content, r1, c1, r2, c2 in fix["edits"]),
        ),
        related=tuple(
            Related(message, related_file, Location(r1, c1), Location(r2, c2), cell)
            for message, related_file, r1, c1, r2, c2, cell in value["related"]
        ),
    )


class ResultCache:
    """The cache of the project whose configuration root is `root`."""

    def __init__(self, root: str) -> None:
        self._directory = project_directory(root)
        self._usable: bool | None = None

    def _is_usable(self) -> bool:
        """The cache home exists (made private to the user) and is the user's own."""
        if self._usable is None:
            home = cache_home()
            try:
                home.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._usable = _owned_by_user(home)
            except OSError:
                self._usable = False
        return self._usable

    def _path(self, key: str) -> Path:
        return self._directory / key[:2] / f"{key}.json"

    def get(self, key: str, filename: str, layout: Layout | None = None) -> list[Diagnostic] | None:
        """The entry's findings, while the project files they were derived from are unchanged
        (looked at through `layout`, see `dependencies_unchanged`)."""
        if not self._is_usable():
            return None
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
            if not dependencies_unchanged(entry["dependencies"], layout):
                return None
            return [_decode(finding, filename) for finding in entry["findings"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, key: str, diagnostics: list[Diagnostic], dependencies: dict[str, str]) -> None:
        """Keep the findings with the state of each project file and listing they depend on."""
        if not self._is_usable():
            return  # another user could read or plant entries there
        path = self._path(key)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump({"dependencies": dependencies, "findings": [_encode(d) for d in diagnostics]}, stream)
            os.replace(temporary, path)
        except OSError:
            pass  # an unwritable cache directory simply leaves the run uncached


def look_up(cache: ResultCache, filename: str, data: bytes, settings: Settings,
            layout: Layout | None = None) -> tuple[str, list[Diagnostic] | None]:
    """The file's cache key, and its findings (with the fixes the settings allow) when cached."""
    key = cache_key(filename, data, settings)
    cached = cache.get(key, filename, layout)
    return key, None if cached is None else settings.fix_policy.applied(cached)


def cached_findings(path: str, display_name: str, settings: Settings, cache: ResultCache,
                    layout: Layout | None = None) -> list[Diagnostic] | None:
    """The file's findings from the cache; None for a miss, or for a file that cannot be read
    (its check then reports why)."""
    try:
        data = read_bytes(path)
    except UnreadableFile:
        return None
    return look_up(cache, display_name, data, settings, layout)[1]


def cached_results(files: list[tuple[str, str]], settings: Settings) -> list[list[Diagnostic] | None]:
    """Each (path, display name)'s findings from the cache (None for a miss). Looked up without the
    checker: a run whose files are all cached then imports neither the parser nor a rule. The
    lookups share one look at the project's files: a file many results depend on is read once."""
    cache, layout = ResultCache(settings.root), Layout("")
    return [cached_findings(path, name, settings, cache, layout) for path, name in files]
