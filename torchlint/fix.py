"""Applying fixes: `torchlint check --fix`, `--diff`, `--unsafe-fixes`.

A file's fixes are applied in passes. Each pass takes the fixes in source order and applies every
one that does not overlap a fix already taken (the later one waits for the next pass), checks
that the new text still parses (libcst) and compiles (`compile()`), and checks the new text again
for the next pass, until nothing is left to fix (at most `MAX_PASSES` passes). A fix whose result
would not parse or compile is dropped and reported; the text it would have changed stays as it
was. Files are written atomically, in their own encoding, newlines, permissions and final newline.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable

import libcst as cst

from torchlint.cache import ResultCache, cache_key
from torchlint.config import UNSUPPRESSIBLE, Settings
from torchlint.diagnostics import Applicability, Diagnostic, Location
from torchlint.engine import (
    FILE_TIME_LIMIT, check_source, file_error, internal_error_text, lost_file_error, map_files, parse_module,
)
from torchlint.notebook import read_notebook
from torchlint.notebook.fix import NotebookText
from torchlint.project.index import recorded_dependencies
from torchlint.sources import LINE_BREAK, UnreadableFile, decode_source, read_bytes

# Passes of apply-then-check per file: enough for fixes that overlap or that enable another.
MAX_PASSES = 5

_TRAILING_BREAK = re.compile(f"(?:{LINE_BREAK.pattern})\\Z")
# Characters of a fixed file's name that its temporary file's name repeats.
_TEMPORARY_NAME_CHARS = 40


def is_applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    """Does `--fix` apply this finding's fix (with `--unsafe-fixes` when `unsafe`)?"""
    fix = diagnostic.fix
    return fix is not None and bool(fix.edits) and (fix.applicability == Applicability.SAFE or unsafe)


# Applying edits to a text -----------------------------------------------------------------


def _row_starts(text: str) -> list[int]:
    return [0, *(match.end() for match in LINE_BREAK.finditer(text))]


def _offset(text: str, starts: list[int], location: Location) -> int | None:
    """The character offset of a 1-based row and column, None when it lies outside the text."""
    if not 0 < location.row <= len(starts) or location.column < 1:
        return None
    row_end = len(text)  # where the row's text ends, before its line break
    if location.row < len(starts):
        row_end = starts[location.row] - (2 if text.startswith("\r\n", starts[location.row] - 2) else 1)
    offset = starts[location.row - 1] + location.column - 1
    return offset if offset <= row_end else None


_Span = tuple[int, int, str]  # start offset, end offset (exclusive), new text


def _spans(text: str, starts: list[int], diagnostic: Diagnostic) -> list[_Span] | None:
    """The fix's edits as offsets, None when one lies outside the text or two of them overlap."""
    spans = []
    for edit in diagnostic.fix.edits:
        start, end = _offset(text, starts, edit.location), _offset(text, starts, edit.end_location)
        if start is None or end is None or end < start:
            return None
        spans.append((start, end, edit.content))
    spans.sort()
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        if start < end:
            return None
    return spans


def _conflicts(span: _Span, taken: _Span) -> bool:
    start, end, _ = span
    other_start, other_end, _ = taken
    if start < end and other_start < other_end:
        return start < other_end and other_start < end
    # An insertion touching another edit: which text comes first would be a guess.
    return start <= other_end and other_start <= end


def order_fixes(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Source order of the first edit; of two fixes starting together, the wider one first."""

    def key(diagnostic: Diagnostic) -> tuple:
        edits = diagnostic.fix.edits
        first = min(edit.location for edit in edits)
        last = max(edit.end_location for edit in edits)
        return (first, -last.row, -last.column, diagnostic.code)

    return sorted(diagnostics, key=key)


def apply_fixes(text: str, diagnostics: list[Diagnostic]) -> tuple[str, list[Diagnostic]]:
    """Apply the fixes in the given order, skipping each one that overlaps a fix applied before it.

    An edit identical to one already applied (two fixes adding the same import) is applied once.
    Returns the new text and the findings whose fixes were applied.
    """
    starts = _row_starts(text)
    taken: list[_Span] = []
    applied = []
    for diagnostic in diagnostics:
        spans = _spans(text, starts, diagnostic)
        if spans is None:
            continue
        new = [span for span in spans if span not in taken]
        if any(_conflicts(span, other) for span in new for other in taken):
            continue
        taken.extend(new)
        applied.append(diagnostic)
    if not taken:
        return text, applied
    pieces, position = [], 0
    for start, end, content in sorted(taken, key=lambda span: (span[0], span[1])):
        pieces.append(text[position:start])
        pieces.append(content)
        position = end
    pieces.append(text[position:])
    return "".join(pieces), applied


# Checking fixed text ----------------------------------------------------------------------


def _compile_error(text: str, filename: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, filename, "exec", dont_inherit=True)
    except SyntaxError as error:
        return f"{type(error).__name__}: {error.msg} (line {error.lineno})"
    except (ValueError, RecursionError, MemoryError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def _parse(text: str, filename: str, must_compile: Callable[[], bool]) -> tuple[cst.Module | None, str | None]:
    """The libcst tree of `text`, or why it is not valid code (libcst, then `compile()`)."""
    module = parse_module(text, filename)
    if isinstance(module, Diagnostic):
        return None, f"libcst cannot parse it: {module.message}"
    problem = _compile_error(text, filename)
    if problem is not None and must_compile():
        return None, problem
    return module, None


# Fixing one text in passes ----------------------------------------------------------------


@dataclass
class FixOutcome:
    """What `fix_text` made of one file's text."""

    original: str
    text: str
    # Findings in `text` (the original findings when nothing was fixed).
    diagnostics: list[Diagnostic]
    # Findings in the original text.
    initial: list[Diagnostic]
    fixed: Counter = field(default_factory=Counter)  # code -> fixes applied
    problems: list[str] = field(default_factory=list)  # one line each, for stderr


def _identity(text: str, starts: list[int], diagnostic: Diagnostic) -> tuple:
    """What a fix does, independent of where earlier fixes moved it: its code and text changes."""
    spans = _spans(text, starts, diagnostic) or []
    return (diagnostic.code, tuple((text[start:end], content) for start, end, content in spans))


def _keep_final_newline(original: str, text: str) -> str:
    """The fixed text ends with a line break exactly when the original did (the same one)."""
    old, new = _TRAILING_BREAK.search(original), _TRAILING_BREAK.search(text)
    if old and not new:
        return text + old.group()
    if new and not old:
        return text[: new.start()]
    return text


class PythonText:
    """How `fix_text` checks the text it fixes and tells whether a fix left it valid: as one
    Python file. (A notebook's cells bring their own: torchlint/notebook/fix.py.)"""

    def python(self, text: str) -> str:
        """The Python that `text` stands for: it must still parse and compile after a fix."""
        return text

    def check(self, text: str, filename: str, settings: Settings, module=None) -> list[Diagnostic]:
        return check_source(text, filename, settings, module)

    def where(self, diagnostic: Diagnostic, text: str, filename: str) -> str:
        return f"{filename}:{diagnostic.location.row}:{diagnostic.location.column}"


def _round_trips(text: str, filename: str) -> bool:
    """Does libcst's tree give the text back? Edits are placed by the tree's positions."""
    module = parse_module(text, filename)
    return not isinstance(module, Diagnostic) and module.code == text


def fix_text(text: str, filename: str, settings: Settings, unsafe: bool = False,
             kind: PythonText = PythonText()) -> FixOutcome:
    """Apply the fixes of one Python text (and of what its fixes uncover), in passes."""
    diagnostics = kind.check(text, filename, settings)
    outcome = FixOutcome(text, text, diagnostics, diagnostics)
    if any(d.code in UNSUPPRESSIBLE for d in diagnostics):
        return outcome  # a file that does not parse or read is never written
    if any(is_applicable(d, unsafe) for d in diagnostics) and not _round_trips(kind.python(text), filename):
        # Edits are placed by the tree's positions: a tree that does not give the text back
        # (a libcst bug) could put them on the wrong row.
        outcome.problems.append(f"torchlint: error: {filename}: fixes not applied: the parser (libcst) does "
                                "not reproduce this file exactly")
        return outcome
    compiles: list[bool] = []

    def original_compiles() -> bool:
        if not compiles:
            compiles.append(_compile_error(kind.python(text), filename) is None)
        return compiles[0]

    rejected: set[tuple] = set()

    def candidates() -> list[Diagnostic]:
        starts = _row_starts(outcome.text)
        return order_fixes([
            d for d in settings.fix_policy.applied(outcome.diagnostics)
            if is_applicable(d, unsafe) and _identity(outcome.text, starts, d) not in rejected
        ])

    seen = {text}
    for _ in range(MAX_PASSES):
        fixes = candidates()
        if not fixes:
            return _settled(outcome)
        new_text, applied = apply_fixes(outcome.text, fixes)
        module, problem = _parse(kind.python(new_text), filename, original_compiles)
        if problem is not None:
            new_text, applied, module = _without_invalid(outcome.text, fixes, filename, original_compiles,
                                                          rejected, outcome.problems, kind)
        if not applied:
            return _settled(outcome)
        if new_text in seen:
            break  # the fixes undo each other
        seen.add(new_text)
        outcome.fixed.update(d.code for d in applied)
        outcome.text = new_text
        outcome.diagnostics = kind.check(new_text, filename, settings, module)
    if candidates():
        outcome.problems.append(
            f"torchlint: warning: {filename}: fixes did not settle within {MAX_PASSES} passes; "
            "the findings still fixable are reported"
        )
    return _settled(outcome)


def fix_one(text: str, filename: str, diagnostic: Diagnostic) -> str | None:
    """The text with this one finding's fix applied (an editor's quick fix), checked like a pass of
    `fix_text`; None when the fix does not apply to the text or its result would not be valid."""
    new_text, applied = apply_fixes(text, [diagnostic])
    if not applied:
        return None
    _, problem = _parse(new_text, filename, lambda: _compile_error(text, filename) is None)
    return new_text if problem is None else None


def _settled(outcome: FixOutcome) -> FixOutcome:
    outcome.text = _keep_final_newline(outcome.original, outcome.text)
    return outcome


def _without_invalid(text: str, candidates: list[Diagnostic], filename: str, must_compile: Callable[[], bool],
                     rejected: set[tuple], problems: list[str], kind: PythonText):
    """The fixes taken one at a time, each kept only when the text still parses and compiles."""
    starts = _row_starts(text)
    accepted: list[Diagnostic] = []
    result, module = text, None
    for diagnostic in candidates:
        trial, applied = apply_fixes(text, [*accepted, diagnostic])
        if diagnostic not in applied:
            continue  # overlaps an accepted fix: the next pass sees it again
        trial_module, problem = _parse(kind.python(trial), filename, must_compile)
        if problem is None:
            accepted.append(diagnostic)
            result, module = trial, trial_module
            continue
        rejected.add(_identity(text, starts, diagnostic))
        where = kind.where(diagnostic, text, filename)
        problems.append(f"torchlint: error: {where}: the {diagnostic.code} fix was not applied: "
                        f"the fixed code would not be valid ({problem})")
    return result, accepted, module


def fix_notebook(raw: str, filename: str, settings: Settings, unsafe: bool = False) -> FixOutcome:
    """`fix_text` for a notebook's JSON text: its code cells are fixed, the rest kept byte for byte."""
    cells = NotebookText(raw, filename)
    outcome = fix_text(cells.joined, filename, settings, unsafe, cells)
    return replace(
        outcome, original=raw, text=cells.written(outcome.text),
        diagnostics=cells.located(outcome.diagnostics, outcome.text), initial=cells.located(outcome.initial, cells.joined),
    )


# Files ------------------------------------------------------------------------------------


@dataclass
class FileFixResult:
    filename: str  # as displayed
    diagnostics: list[Diagnostic]  # the findings left in the file (as written, or as it would be)
    fixed: dict[str, int]  # code -> fixes applied (or that would be, with `--diff`)
    diff: str = ""  # a unified diff of the change, when asked for
    problems: list[str] = field(default_factory=list)  # one line each, for stderr
    written: bool = False
    # The internal error (a torchlint bug) that stopped this file, kept to this file.
    internal_error: str | None = None


class FileChanged(Exception):
    """The file changed on disk while it was being fixed."""


class NotWritable(Exception):
    """The path is not one `--fix` may write (the message says why)."""


def real_roots(paths: list[str]) -> tuple[str, ...]:
    """The real directories `--fix` may write in: each checked directory, and the directory of
    each checked file."""
    return tuple(os.path.realpath(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)))
                 for path in paths)


def _writable_target(path: str, roots: tuple[str, ...]) -> str:
    """The real path to write for `path`: a regular file inside one of the real `roots`. A
    symlink to a file elsewhere (a repository could hold one to a file of its checker's), to a
    device or to a FIFO is never written through."""
    target = os.path.realpath(path)
    if not any(os.path.commonpath([target, root]) == root for root in roots):
        raise NotWritable("its real path is outside the checked paths")
    if not stat.S_ISREG(os.stat(target).st_mode):
        raise NotWritable("it is not a regular file")
    return target


def write_atomically(path: str, expected: bytes, data: bytes, roots: tuple[str, ...] | None = None) -> None:
    """Replace the file's bytes with `data` through a temporary file beside it and `os.replace`,
    keeping its permissions (and owner, where allowed). The file a symlink names is written, not
    the link, when it lies inside `roots` (default: the file's directory; see `_writable_target`). Raises `FileChanged` when the
    file no longer holds `expected`, `NotWritable` or OSError otherwise."""
    target = _writable_target(path, roots or real_roots([path]))
    info = os.stat(target)
    if not os.access(target, os.W_OK):
        raise PermissionError(13, "the file is not writable")
    # The name's first characters only: a 250-character file name plus mkstemp's would pass
    # the file system's limit on a name (255 bytes).
    handle, temporary = tempfile.mkstemp(
        prefix=f".{os.path.basename(target)[:_TEMPORARY_NAME_CHARS]}.", suffix=".torchlint", dir=os.path.dirname(target)
    )
    try:
        with os.fdopen(handle, "wb") as output:
            output.write(data)
            output.flush()
            os.fsync(output.fileno())
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        if hasattr(os, "chown"):
            try:
                os.chown(temporary, info.st_uid, info.st_gid)
            except OSError:
                pass  # only the owner's own group is allowed: keep what the new file got
        with open(target, "rb") as current:
            if current.read() != expected:
                raise FileChanged()
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _lines(text: str) -> list[str]:
    """The text's lines with their line breaks (Python's breaks only, unlike `str.splitlines`)."""
    starts = _row_starts(text)
    lines = [text[start:end] for start, end in zip(starts, [*starts[1:], len(text)])]
    return lines if lines[-1] else lines[:-1]


def unified_diff(before: str, after: str, filename: str) -> str:
    """A unified diff (`--- name`, `+++ name`) that `patch`/`git apply` accept, line breaks kept."""
    old, new = _lines(before), _lines(after)
    lines = []
    for line in difflib.unified_diff(old, new, filename, filename, lineterm="\n"):
        if not _TRAILING_BREAK.search(line):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return "".join(lines)


def notebook_diff(before: str, after: str, filename: str) -> str:
    """`--diff` for a notebook's JSON texts: a unified diff per changed code cell, named
    `NAME:cell N` (a cell's last line counts as ending with a line break)."""

    def lines(source: str) -> str:
        return source if not source or _TRAILING_BREAK.search(source) else source + "\n"

    pairs = zip(read_notebook(before).cells, read_notebook(after).cells)
    return "".join(
        unified_diff(lines(old.source), lines(new.source), f"{filename}:cell {old.number}")
        for old, new in pairs if old.source != new.source
    )


def fix_file(path: str, settings: Settings, display_name: str | None = None, *, unsafe: bool = False,
             write: bool = True, diff: bool = False, cache: ResultCache | None = None,
             roots: tuple[str, ...] | None = None) -> FileFixResult:
    """Fix one file: write it (`write`) and/or describe the change as a diff (`diff`). Only a
    regular file whose real path is inside `roots` (default: the file's own directory) is written."""
    filename = display_name or path
    notebook = path.endswith(".ipynb")
    try:
        data = read_bytes(path)
        key = cache_key(filename, data, settings) if cache else ""
        cached = cache.get(key, filename) if cache else None
        if cached is not None and not any(is_applicable(d, unsafe) for d in settings.fix_policy.applied(cached)):
            return FileFixResult(filename, cached, {})
        source = decode_source(data)
        outcome = (fix_notebook if notebook else fix_text)(source.text, filename, settings, unsafe)
    except UnreadableFile as error:
        return FileFixResult(filename, [file_error("TL902", filename, f"cannot read file: {error}")], {})
    result = FileFixResult(filename, outcome.diagnostics, dict(outcome.fixed), problems=outcome.problems)
    if outcome.text == source.text:
        if cache:
            cache.put(key, outcome.diagnostics, recorded_dependencies(path))
        return result
    try:
        new_data = outcome.text.encode(source.encoding)
    except UnicodeEncodeError as error:
        result.problems.append(f"torchlint: error: {filename}: fixes not applied: the fixed text cannot be "
                               f"encoded as {source.encoding} ({error.reason})")
        return FileFixResult(filename, outcome.initial, {}, problems=result.problems)
    if diff:
        result.diff = (notebook_diff if notebook else unified_diff)(source.text, outcome.text, filename)
    if not write:
        return result
    try:
        write_atomically(path, data, new_data, roots)
    except FileChanged:
        problem = "the file changed while it was being fixed"
    except NotWritable as error:
        problem = f"not written: {error}"
    except OSError as error:
        problem = f"cannot write it: {error.strerror or error}"
    else:
        result.written = True
        if cache:
            cache.put(cache_key(filename, new_data, settings), outcome.diagnostics, recorded_dependencies(path))
        return result
    result.problems.append(f"torchlint: error: {filename}: fixes not applied: {problem}")
    return FileFixResult(filename, outcome.initial, {}, problems=result.problems)


def _fix_one(job: tuple) -> FileFixResult:
    """One file's result; an internal error (a torchlint bug) is kept to that file, which is left
    as it was, so that every other file is still fixed."""
    path, display_name, settings, unsafe, write, diff, use_cache, roots = job
    try:
        cache = ResultCache(settings.root) if use_cache else None
        result = fix_file(path, settings, display_name, unsafe=unsafe, write=write, diff=diff, cache=cache,
                          roots=roots)
        # The cache keeps the rules' own fixes; the fix settings shape what is reported.
        result.diagnostics = settings.fix_policy.applied(result.diagnostics)
        return result
    except Exception as error:  # noqa: BLE001 - isolate one file's failure, by design
        return FileFixResult(display_name, [], {}, internal_error=internal_error_text(display_name, error))


def fix_files(files: list[tuple[str, str]], settings: Settings, jobs: int | None = None, *, unsafe: bool = False,
              write: bool = True, diff: bool = False, use_cache: bool = False, roots: list[str] | None = None,
              time_limit: float = FILE_TIME_LIMIT) -> list[FileFixResult]:
    """`fix_file` over (path, display name) pairs, in parallel processes when there are several.
    Only files whose real path lies inside the checked `roots` (the paths given on the command
    line; default: each file's own directory) are written. With `use_cache`, files whose cached
    findings hold nothing to fix are not checked again."""
    real = real_roots(roots) if roots is not None else None
    work = [(path, name, settings, unsafe, write, diff, use_cache, real) for path, name in files]

    def lost(job: tuple, why: str) -> FileFixResult:
        return FileFixResult(job[1], [lost_file_error(job[1], why)], {})

    return map_files(_fix_one, work, jobs, lost, time_limit)
