"""`torchlint check --add-noqa`: suppress every current finding with a `# noqa: CODE` comment, so
that a project can switch the check on today and fix its old findings later.

The comment goes on the row where the finding's noqa is read (see suppressions.py: never inside a
string or before a `\\` continuation), merged into a `# noqa: X` already there. The file is
written atomically in its own encoding, BOM and newlines, and only when the new text still
parses. Running it again adds nothing: every finding is suppressed by then.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchlint.config import UNSUPPRESSIBLE, Settings
from torchlint.diagnostics import Diagnostic
from torchlint.engine import check_source, internal_error_text, map_files, parse_module
from torchlint.fix import FileChanged, NotWritable, real_roots, write_atomically
from torchlint.rules.tl903_unused_noqa import UnusedNoqa
from torchlint.sources import LINE_BREAK, UnreadableFile, decode_source, read_bytes
from torchlint.suppressions import Suppressions, read_suppressions

_ROWS_AND_BREAKS = re.compile(f"({LINE_BREAK.pattern})")


@dataclass
class AddNoqaResult:
    filename: str
    added: int = 0  # rows that got a new or extended noqa comment
    problems: list[str] = field(default_factory=list)
    internal_error: str | None = None


def _codes_per_row(diagnostics: list[Diagnostic]) -> dict[int, list[str]]:
    rows: dict[int, list[str]] = {}
    for diagnostic in diagnostics:
        # TL903 is answered by removing the comment, never by another one.
        if diagnostic.code in UNSUPPRESSIBLE or diagnostic.code == UnusedNoqa.code:
            continue
        codes = rows.setdefault(diagnostic.noqa_row or diagnostic.location.row, [])
        if diagnostic.code not in codes:
            codes.append(diagnostic.code)
    return rows


def with_noqa_codes(line: str, row: int, codes: list[str], suppressions: Suppressions) -> str:
    """Row `row` (`line`) with `codes` added to its `# noqa: ...` comment, or with a new one."""
    listed = next((d for d in suppressions.directives.get(row, ()) if d.codes), None)
    if listed is not None:
        return f"{line[:listed.end]}, {', '.join(codes)}{line[listed.end:]}"
    code_end = len(line.rstrip(" \t"))
    return f"{line[:code_end]}  # noqa: {', '.join(codes)}"


def add_noqa_to_text(text: str, diagnostics: list[Diagnostic]) -> tuple[str, int]:
    """The text with a noqa comment for each finding, and how many rows got one."""
    per_row = _codes_per_row(diagnostics)
    if not per_row:
        return text, 0
    suppressions = read_suppressions(text)
    pieces = _ROWS_AND_BREAKS.split(text)  # row, break, row, break, ..., last row
    for row, codes in per_row.items():
        pieces[2 * (row - 1)] = with_noqa_codes(pieces[2 * (row - 1)], row, codes, suppressions)
    return "".join(pieces), len(per_row)


def add_noqa_to_file(path: str, filename: str, settings: Settings,
                     roots: tuple[str, ...] | None = None) -> AddNoqaResult:
    """Add the comments to one file, written only where `--fix` would write (a regular file whose
    real path is inside the real `roots`; default: the file's own directory)."""
    result = AddNoqaResult(filename)
    if path.endswith(".ipynb"):
        result.problems.append(f"torchlint: {filename}: skipped: --add-noqa edits .py files, not notebooks")
        return result
    try:
        data = read_bytes(path)
        source = decode_source(data)
    except UnreadableFile:
        return result  # `check` reports it (TL902); there is nothing to suppress
    text, added = add_noqa_to_text(source.text, check_source(source.text, filename, settings))
    if not added:
        return result
    reparsed = parse_module(text, filename)
    problem = f"the new text would not parse ({reparsed.message}); please report this" if isinstance(
        reparsed, Diagnostic) else _write(path, data, text, source.encoding, roots)
    if problem is None:
        result.added = added
        return result
    result.problems.append(f"torchlint: error: {filename}: noqa comments not added: {problem}")
    return result


def _add_noqa_one(job: tuple) -> AddNoqaResult:
    path, filename, settings, roots = job
    try:
        return add_noqa_to_file(path, filename, settings, roots)
    except Exception as error:  # noqa: BLE001 - isolate one file's failure, by design
        return AddNoqaResult(filename, internal_error=internal_error_text(filename, error))


def add_noqa_files(files: list[tuple[str, str]], settings: Settings, jobs: int | None = None,
                   roots: list[str] | None = None) -> list[AddNoqaResult]:
    """`add_noqa_to_file` over (path, display name) pairs; as with `--fix`, only files whose real
    path lies inside the checked `roots` (default: each file's own directory) are written."""
    real = real_roots(roots) if roots is not None else None
    return map_files(_add_noqa_one, [(path, name, settings, real) for path, name in files], jobs, _lost)


def _lost(job: tuple, why: str) -> AddNoqaResult:
    """A file whose worker ran out of time or crashed: left as it was."""
    return AddNoqaResult(job[1], problems=[f"torchlint: error: {job[1]}: noqa comments not added: {why}"])


def _write(path: str, original: bytes, text: str, encoding: str, roots) -> str | None:
    """Write the new text in place of `original`; None, or why it was not written."""
    try:
        write_atomically(path, original, text.encode(encoding), roots)
    except FileChanged:
        return "the file changed while noqa comments were being added"
    except NotWritable as error:
        return f"not written: {error}"
    except (OSError, UnicodeEncodeError) as error:
        return f"cannot write it: {getattr(error, 'strerror', None) or error}"
    return None
