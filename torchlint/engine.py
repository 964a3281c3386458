"""Check files: parse each once with libcst, run every enabled rule in one traversal.

Positions (libcst's PositionProvider costs several times the parse) are computed only for the
statements that hold a finding (see positions.py).
"""

from __future__ import annotations

import ast
import contextlib
import gc
import os
import re
import sys
from collections.abc import Callable

import libcst as cst

from torchlint.analysis.names import nested_statement_lists
from torchlint.cache import ResultCache, cached_results, look_up
from torchlint.config import UNSUPPRESSIBLE, Settings
from torchlint.context import FileContext
from torchlint.diagnostics import Diagnostic, Edit, Fix, Location, Related, Severity
from torchlint.positions import StatementPositions
from torchlint.project.index import ProjectView
from torchlint.reports import FixSpec, PendingReport, RelatedNode
from torchlint.rule import Rule
from torchlint.rules import all_rules, get_rule
from torchlint.rules.tl903_unused_noqa import UnusedNoqa, unused_noqa
from torchlint.sources import LINE_BREAK, UnreadableFile, decode_source, read_bytes, source_rows
from torchlint.suppressions import NO_SUPPRESSIONS, Suppressions, may_hold_torchlint_noqa, read_suppressions
from torchlint.walker import Walker
from torchlint.workers import map_bounded, report_progress

# Rules only look at files that mention torch at all (its environment variables count: a package's
# `__init__.py` may set one without importing torch): a cheap textual pre-filter.
_RELEVANT = re.compile(r"torch|backward|zero_grad|TORCH_")
_KNOWN_CODES = frozenset(rule.code for rule in all_rules())

# Seconds one file may take (its parse, rules and fixes); a file that takes longer is TL902.
FILE_TIME_LIMIT = 30.0
# The slowest pace a file is checked at (bytes of source a second), and the most a large file's
# time limit may grow: 30 s covers 450 KB, a 4 MB file gets at most 300 s.
_CHECKED_BYTES_PER_SECOND = 15_000
_MAX_LIMIT_FACTOR = 10
# CPython refuses more than 200 nested brackets; libcst's native parser overflows its stack (a
# segmentation fault) somewhere above 1000, so deeper text goes to CPython's parser first.
_MAX_NESTING = 200
_NOT_BRACKETS = bytes(set(range(256)) - set(b"()[]{}"))
_INNERMOST_PAIRS = re.compile(rb"\(\)|\[\]|\{\}")
_OPENING_RUN = re.compile(rb"[(\[{]+")
# libcst 1.0 drops a line that holds only a backslash continuation: its tree no longer gives the
# text back, and every row after that line is off by one (fixes would edit the wrong row).
_LONE_CONTINUATION = re.compile(r"(?:\A|[\r\n])[ \t\f]*\\(?:\r\n?|\n)")
_LONE_CONTINUATION_PROBLEM = "cannot be checked: the parser (libcst) misreads a line holding only a backslash"


class _ImportCollector:
    """Feeds import statements to the file's import table as the walk meets them."""

    def __init__(self, ctx: FileContext) -> None:
        self._imports = ctx.imports

    def visit_Import(self, node: cst.Import) -> None:
        self._imports.add(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._imports.add(node)


def _collect_top_level_imports(ctx: FileContext) -> None:
    """Imports at module level (also under `if`/`try`) are known before any rule runs."""

    def scan(statements) -> None:
        for statement in statements:
            if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in statement.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        ctx.imports.add(small)
            elif isinstance(statement, (cst.If, cst.Try)):
                for nested in nested_statement_lists(statement):
                    scan(nested)

    scan(ctx.module.body)


def file_error(rule_code: str, filename: str, message: str, row: int = 1, column: int = 1) -> Diagnostic:
    rule = get_rule(rule_code)
    location = Location(row, column)
    return Diagnostic(
        code=rule.code, name=rule.name, message=message, filename=filename,
        location=location, end_location=location, severity=rule.severity, noqa_row=row,
    )


def _python_syntax_error(source: str, filename: str) -> Diagnostic | None:
    """CPython's verdict: the TL901 finding of its parser, None when it accepts the text."""
    try:
        ast.parse(source, filename)
    except SyntaxError as python_error:
        row, column = _inside(source, python_error.lineno or 1, python_error.offset or 1)
        return file_error("TL901", filename, f"SyntaxError: {python_error.msg}", row, column)
    except (ValueError, RecursionError, MemoryError):
        return file_error("TL901", filename, "SyntaxError: too deeply nested to parse")
    return None


def syntax_error(source: str, filename: str, error: cst.ParserSyntaxError) -> Diagnostic:
    # CPython's parser decides what is a syntax error, with the clearer message and location.
    python_error = _python_syntax_error(source, filename)
    if python_error is not None:
        return python_error
    if _has_lone_continuation(source):
        return file_error("TL902", filename, _LONE_CONTINUATION_PROBLEM)
    # Valid Python that libcst cannot parse (5,000 strings concatenated, say): no syntax error.
    message = re.sub(r"^parser error: error at \d+:\d+: ", "", error.message).splitlines()[0]
    row, column = _inside(source, error.raw_line, error.raw_column + 1)
    return file_error(
        "TL902", filename, f"cannot be checked: too complex for the parser (libcst: {message})", row, column,
    )


def _inside(source: str, row: int, column: int) -> tuple[int, int]:
    """A parser's location moved onto a row and column that exist in `source`. Both parsers can
    point outside it: libcst past the end, CPython past the end of a row continued from the one
    above with a backslash (its columns count from the start of the first row, and in bytes
    after a character beyond the BMP)."""
    rows = source_rows(source)
    row = min(max(row, 1), len(rows))
    return row, min(max(column, 1), len(rows[row - 1]) + 1)


def _in_newline(content: str, newline: str) -> str:
    """Edits write the newline of the row they start on, whatever the rule wrote."""
    if "\r" not in content and ("\n" not in content or newline == "\n"):
        return content
    return LINE_BREAK.sub(newline, content)


class _RowNewlines:
    """The line break that ends each row of a text (the last row: libcst's `default_newline`).
    A text can mix them (a notebook's view joins cells written on different systems), and an
    edit in another row's newline would leave a text libcst no longer parses."""

    def __init__(self, source: str, default: str) -> None:
        self._source, self._default = source, default
        self._breaks: list[str] | None = None

    def of(self, row: int) -> str:
        if self._breaks is None:
            self._breaks = [match.group() for match in LINE_BREAK.finditer(self._source)]
        return self._breaks[row - 1] if row <= len(self._breaks) else self._default


def _to_edits(fix: FixSpec, positions: StatementPositions, chain, newlines: _RowNewlines) -> Fix:
    edits = []
    for node, content in fix.replacements:
        span = positions.range_of(node, chain)
        edits.append(Edit(_in_newline(content, newlines.of(span.start.line)),
                          Location(span.start.line, span.start.column + 1), Location(span.end.line, span.end.column + 1)))
    for row, content in fix.insertions:
        edits.append(Edit(_in_newline(content, newlines.of(row)), Location(row, 1), Location(row, 1)))
    return Fix(fix.applicability, fix.message, tuple(sorted(edits, key=lambda edit: edit.location)))


def _resolve(
    module: cst.Module, source: str, pending: list[PendingReport], filename: str, suppressions: Suppressions
) -> list[Diagnostic]:
    positions = StatementPositions(module, source)
    newlines = _RowNewlines(source, module.default_newline)
    diagnostics = []
    for report in pending:
        span = positions.range_of(report.node, report.chain)
        rule = report.rule
        start = Location(span.start.line, span.start.column + 1)
        diagnostics.append(
            Diagnostic(
                code=rule.code, name=rule.name, message=report.message, filename=filename,
                location=start, end_location=Location(span.end.line, span.end.column + 1),
                severity=report.severity or rule.severity,
                fix=_to_edits(report.fix, positions, report.chain, newlines) if report.fix else None,
                noqa_row=suppressions.noqa_row(start.row),
                related=tuple(_located(note, positions, filename) for note in report.related),
            )
        )
    return diagnostics


def _located(note: RelatedNode | Related, positions: StatementPositions, filename: str) -> Related:
    if isinstance(note, Related):
        return note
    span = positions.range_of_any(note.node)
    return Related(
        note.message, filename,
        Location(span.start.line, span.start.column + 1), Location(span.end.line, span.end.column + 1),
    )


def _not_suppressed(diagnostics: list[Diagnostic], suppressions: Suppressions) -> list[Diagnostic]:
    return [
        diagnostic for diagnostic in diagnostics
        if diagnostic.code in UNSUPPRESSIBLE or not suppressions.suppresses(diagnostic.noqa_row, diagnostic.code)
    ]


def _unique(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """One finding per code and location, even when two paths of a rule reach the same node."""
    seen, unique = set(), []
    for diagnostic in diagnostics:
        key = (diagnostic.code, diagnostic.location, diagnostic.end_location)
        if key not in seen:
            seen.add(key)
            unique.append(diagnostic)
    return unique


def _nested_deeper_than(source: str, depth: int) -> bool:
    """Do brackets nest deeper than `depth`? (Counting brackets in strings and comments too: a
    cheap upper bound, removing the innermost pairs once per level. Brackets never closed nest
    too, as deep as the longest run of them left: `x = ((((...` overflows the native parser's
    stack as surely as closed ones.)"""
    brackets = source.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKETS)
    for level in range(depth):
        brackets, removed = _INNERMOST_PAIRS.subn(b"", brackets)
        if not removed:
            return level + max(map(len, _OPENING_RUN.findall(brackets)), default=0) > depth
    return bool(_INNERMOST_PAIRS.search(brackets))


def _has_lone_continuation(source: str) -> bool:
    return ("\\\n" in source or "\\\r" in source) and _LONE_CONTINUATION.search(source) is not None


@contextlib.contextmanager
def _stderr_silenced():
    """Standard error closed at the descriptor level: where libcst's Rust parser panics (on
    backslash-only lines), its panic hook writes a Rust backtrace there before the exception
    reaches us, and the user should see only the one-line finding."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def is_parser_panic(error: BaseException) -> bool:
    """libcst's Rust parser panicked: pyo3 raises a PanicException, a BaseException that no
    `except Exception` stops (valid Python with backslash-only lines and carriage returns)."""
    return type(error).__name__ == "PanicException"


def parse_module(source: str, filename: str) -> cst.Module | Diagnostic:
    """The libcst tree of `source`, or the TL901/TL902 finding that says why there is none."""
    if _nested_deeper_than(source, _MAX_NESTING):
        python_error = _python_syntax_error(source, filename)
        if python_error is not None:
            return python_error
    lone_continuation = _has_lone_continuation(source)
    try:
        with _stderr_silenced() if lone_continuation else contextlib.nullcontext():
            module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return syntax_error(source, filename, error)
    except RecursionError:
        return file_error("TL901", filename, "SyntaxError: too deeply nested to parse")
    except BaseException as error:
        if not is_parser_panic(error):
            raise
        return file_error("TL902", filename, _LONE_CONTINUATION_PROBLEM if lone_continuation else (
            "cannot be checked: the parser (libcst) crashed on this file"))
    if lone_continuation and module.code != source:
        return file_error("TL902", filename, _LONE_CONTINUATION_PROBLEM)
    return module


def _walk(
    module: cst.Module, source: str, filename: str, settings: Settings, rule_classes: list[type[Rule]],
    project: ProjectView,
) -> list[PendingReport]:
    """The findings of one traversal of the tree by every rule in `rule_classes`."""
    if not rule_classes:
        return []
    return traverse(module, source, filename, settings, lambda ctx: [rule_class(ctx) for rule_class in rule_classes],
                    project)


def traverse(
    module: cst.Module, source: str, filename: str, settings: Settings,
    participants_for: Callable[[FileContext], list], project: ProjectView,
) -> list[PendingReport]:
    """One traversal of the tree by the participants `participants_for(ctx)` makes (the rules, or
    the language server's probe of one expression), in the file context a check builds."""
    ctx = FileContext(filename, source, module, settings, project=project)
    _collect_top_level_imports(ctx)
    try:
        Walker([_ImportCollector(ctx), ctx.values, *participants_for(ctx)], ctx.ancestors).walk(module, report_progress)
        return ctx.pending
    finally:
        ctx.close()


def check_source(
    source: str, filename: str, settings: Settings, module: cst.Module | Diagnostic | None = None,
    project: ProjectView | None = None, file_level_noqa: bool = True,
) -> list[Diagnostic]:
    """Every finding of the enabled rules in one file's text (`module`: what `parse_module` gave
    for it, if already parsed; `project`: the file's view of its project, by default read from the
    file at `filename`; `file_level_noqa`: False where the caller scopes `# torchlint: noqa`
    itself, as a notebook does per cell)."""
    with cycle_collector_paused():
        return _check_source(source, filename, settings, module, project, file_level_noqa)


@contextlib.contextmanager
def cycle_collector_paused():
    """Python's cycle collector paused while one file is checked. A syntax tree is hundreds of
    thousands of objects without a cycle among them, which reference counting alone frees; yet
    every few hundred allocations the collector walked them again: 13% of a check on timm."""
    if not gc.isenabled():  # the caller paused it
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _check_source(source: str, filename: str, settings: Settings, module: cst.Module | Diagnostic | None,
                  project: ProjectView | None, file_level_noqa: bool) -> list[Diagnostic]:
    if module is None:
        module = parse_module(source, filename)
    if isinstance(module, Diagnostic):
        return [module]
    # After parsing: a file-level noqa never hides that the file is broken.
    suppressions = read_suppressions(source) if may_hold_torchlint_noqa(source) else NO_SUPPRESSIONS
    if suppressions.whole_file and file_level_noqa:
        return []
    silenced = suppressions.file_codes if file_level_noqa else frozenset()
    enabled = settings.rules_for(filename)
    rule_classes = [
        rule.load() for rule in enabled
        if not rule.runtime_only and rule.code not in silenced and rule.code not in UNSUPPRESSIBLE
    ]
    judge_noqa = UnusedNoqa in rule_classes and bool(suppressions.directives)
    if project is None:
        project = ProjectView(filename, settings.root)
    pending = _walk(module, source, filename, settings, rule_classes, project) if _RELEVANT.search(source) else []
    if not pending and not judge_noqa:
        return []
    if suppressions is NO_SUPPRESSIONS:
        suppressions = read_suppressions(source)  # where each finding's noqa would be read
    found = _resolve(module, source, pending, filename, suppressions)
    if judge_noqa:
        judged = {rule.code for rule in rule_classes}
        found += unused_noqa(suppressions, found, judged, _KNOWN_CODES, source, filename)
    if not settings.show_hints:  # after judging the noqa comments: a hidden hint still uses its own
        found = [diagnostic for diagnostic in found if diagnostic.severity is not Severity.HINT]
    return sorted(_unique(_not_suppressed(found, suppressions)), key=Diagnostic.sort_key)


def check_file(
    path: str, settings: Settings, display_name: str | None = None, cache: ResultCache | None = None
) -> list[Diagnostic]:
    filename = display_name or path
    try:
        data = read_bytes(path)
        key, cached = look_up(cache, filename, data, settings) if cache else ("", None)
        if cached is not None:
            return cached
        source = decode_source(data)
        project = ProjectView(path, settings.root)
        if path.endswith(".ipynb"):
            from torchlint.notebook.check import check_notebook  # it checks its cells with this module

            diagnostics = check_notebook(source.text, filename, settings, project)
        else:
            diagnostics = check_source(source.text, filename, settings, project=project)
    except UnreadableFile as error:
        return [file_error("TL902", filename, f"cannot read file: {error}")]
    if cache:
        # With the project files the answers came from: a change there re-checks this file.
        cache.put(key, diagnostics, project.dependencies())
    # After the cache: its entries hold the rules' own fixes, whatever the fix settings.
    return settings.fix_policy.applied(diagnostics)


def internal_error_text(display_name: str, error: Exception) -> str:
    """The one line that reports a torchlint bug met while handling one file. A MemoryError is
    no bug but a file past its worker's memory limit: raised again, for the worker to report."""
    if isinstance(error, MemoryError):
        raise error
    return f"{display_name}: {type(error).__name__}: {error}"


def _check_one(job: tuple[str, str, Settings, bool]) -> tuple[list[Diagnostic], str | None]:
    """One file's findings, or the internal error that stopped its check (a torchlint bug,
    kept to this file so that every other file is still checked)."""
    path, display_name, settings, use_cache = job
    try:
        return check_file(path, settings, display_name, ResultCache(settings.root) if use_cache else None), None
    except Exception as error:  # noqa: BLE001 - isolate one file's failure, by design
        return [], internal_error_text(display_name, error)


def map_files(worker, work: list, jobs: int | None, lost, time_limit: float = FILE_TIME_LIMIT,
              on_done: Callable[[], None] | None = None,
              on_progress: Callable[[object, float], None] | None = None) -> list:
    """`worker` over each item of `work` (its first element a file's path), in order, in `jobs`
    worker processes (default: one per core). An item that takes longer than its time limit
    (`time_limit`, more for a large file: `file_time_limit`) or crashes its worker gets
    `lost(item, why)`; `on_done()` after each item, `on_progress(item, fraction)` as a file's
    statements are walked."""
    return map_bounded(worker, work, jobs or os.cpu_count() or 1, lambda job: file_time_limit(job[0], time_limit),
                       lost, on_done, on_progress)


def file_time_limit(path: str, base: float = FILE_TIME_LIMIT) -> float:
    """A file's CPU time limit: `base`, or more for a large Python file, in proportion to its size
    (a generated 50,000-line module checks at about 25 KB a second), up to ten times `base`. A
    notebook's size is mostly its outputs: it gets `base`."""
    if path.endswith(".ipynb"):
        return base
    try:
        size = os.stat(path).st_size
    except OSError:
        return base
    return min(max(base, size / _CHECKED_BYTES_PER_SECOND), _MAX_LIMIT_FACTOR * base)


def lost_file_error(display_name: str, why: str) -> Diagnostic:
    """The TL902 finding of a file whose check did not finish."""
    return file_error("TL902", display_name, f"cannot be checked: {why}")


def check_files(
    files: list[tuple[str, str]], settings: Settings, jobs: int | None = None, errors: list[str] | None = None,
    *, use_cache: bool = False, time_limit: float = FILE_TIME_LIMIT, on_done: Callable[[], None] | None = None,
    on_progress: Callable[[str, float], None] | None = None, cached: list[list[Diagnostic] | None] | None = None,
) -> list[Diagnostic]:
    """Check (path, display name) pairs, in parallel processes when there are several files.

    Internal errors are appended to `errors` when a list is given, else raised. With
    `use_cache`, results are kept in the cache (see cache.py); `cached`: the files' results
    already looked up there (`cached_results`). `on_done()` after each file,
    `on_progress(display name, fraction)` while a file is checked.
    """
    results: list = [None] * len(files)
    if use_cache:
        # Looked up first: a warm run then starts no worker process at all.
        for index, found in enumerate(cached if cached is not None else cached_results(files, settings)):
            if found is not None:
                results[index] = (found, None)
                if on_done is not None:
                    on_done()
    missed = [index for index, result in enumerate(results) if result is None]
    checked = map_files(_check_one, [(*files[index], settings, use_cache) for index in missed], jobs,
                        lambda job, why: ([lost_file_error(job[1], why)], None), time_limit, on_done,
                        None if on_progress is None else lambda job, fraction: on_progress(job[1], fraction))
    for index, result in zip(missed, checked):
        results[index] = result
    failures = [error for _, error in results if error is not None]
    if failures and errors is None:
        raise RuntimeError(failures[0])
    if errors is not None:
        errors.extend(failures)
    return sorted((d for diagnostics, _ in results for d in diagnostics), key=Diagnostic.sort_key)
