"""`--baseline FILE` / `--write-baseline FILE`: accept today's findings, report only new ones.

A finding's key survives unrelated edits: its code, its file (relative to the baseline file's
directory), the text of its row without blanks (so that a formatter's spacing changes nothing),
and its index among the findings of the file with that same code and text. Row numbers are not
part of it, so lines added above a finding do not make it new.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass

from torchlint.config import ConfigError
from torchlint.diagnostics import Diagnostic
from torchlint.output.text import source_lines
from torchlint.sources import UnreadableFile, read_regular_file

FORMAT_VERSION = 1
# A baseline holds a line per finding: tens of megabytes at most for the largest code bases.
MAX_BASELINE_BYTES = 64_000_000
Key = tuple[str, str, str, int]


def _row_text(diagnostic: Diagnostic) -> str:
    if diagnostic.cell is not None:  # a notebook: its rows are not the file's rows
        return diagnostic.message
    lines = source_lines(diagnostic.filename)
    row = diagnostic.location.row
    return " ".join(lines[row - 1].split()) if 0 < row <= len(lines) else ""


def _without_blanks(text: str) -> str:
    return "".join(text.split())


def keys(diagnostics: list[Diagnostic], baseline_path: str) -> list[Key]:
    """The key of each finding, in the order given."""
    directory = os.path.dirname(os.path.abspath(baseline_path))
    seen: Counter = Counter()
    result = []
    for diagnostic in diagnostics:
        file = os.path.relpath(os.path.abspath(diagnostic.filename), directory).replace(os.sep, "/")
        stem = (diagnostic.code, file, _without_blanks(_row_text(diagnostic)))
        result.append((*stem, seen[stem]))
        seen[stem] += 1
    return result


def write_baseline(diagnostics: list[Diagnostic], path: str) -> None:
    entries = [
        {"code": code, "file": file, "line": _row_text(diagnostic), "index": index, "message": diagnostic.message}
        for diagnostic, (code, file, _, index) in zip(diagnostics, keys(diagnostics, path))
    ]
    text = json.dumps({"version": FORMAT_VERSION, "findings": entries}, indent=1) + "\n"
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".baseline.", dir=directory)
    with os.fdopen(handle, "w", encoding="utf-8") as output:
        output.write(text)
    os.replace(temporary, path)


@dataclass(frozen=True)
class BaselineResult:
    new: list[Diagnostic]
    gone: int  # baseline entries that no finding matches any more


def _read(path: str) -> Counter:
    try:
        document = json.loads(read_regular_file(path, MAX_BASELINE_BYTES).decode("utf-8"))
        return Counter((e["code"], e["file"], _without_blanks(e["line"]), e["index"]) for e in document["findings"])
    except UnreadableFile as error:
        raise ConfigError(f"cannot read baseline {path}: {error}") from None
    except (ValueError, KeyError, TypeError, RecursionError):
        raise ConfigError(f"{path} is not a torchlint baseline (write one with --write-baseline)") from None


def apply_baseline(diagnostics: list[Diagnostic], path: str) -> BaselineResult:
    accepted = _read(path)
    new = []
    for diagnostic, key in zip(diagnostics, keys(diagnostics, path)):
        if accepted[key] > 0:
            accepted[key] -= 1
        else:
            new.append(diagnostic)
    return BaselineResult(new, sum(accepted.values()))
