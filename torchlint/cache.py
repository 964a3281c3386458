"""A per-file result cache, so that re-checking unchanged files costs a hash and a read.

An entry's key covers everything a result depends on: torchlint's own source code, the rules
that apply to the file (with their settings), the file's name and its bytes. A stale entry can
therefore never be served; entries are written atomically and unreadable ones are ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

from torchlint.config import Settings
from torchlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Severity

CACHE_DIRECTORY = ".torchlint_cache"


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
    header = f"{_code_fingerprint()}\0{rules}\0{settings.target_torch_version}\0{filename}\0"
    return hashlib.sha256(header.encode() + data).hexdigest()


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
    )


class ResultCache:
    def __init__(self, root: str) -> None:
        self._directory = Path(root) / CACHE_DIRECTORY

    def _path(self, key: str) -> Path:
        return self._directory / key[:2] / f"{key}.json"

    def get(self, key: str, filename: str) -> list[Diagnostic] | None:
        try:
            entries = json.loads(self._path(key).read_text(encoding="utf-8"))
            return [_decode(entry, filename) for entry in entries]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, diagnostics: list[Diagnostic]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self._directory / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("*\n")
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump([_encode(d) for d in diagnostics], stream)
            os.replace(temporary, path)
        except OSError:
            pass  # a read-only tree simply goes uncached
