"""Check files: parse each once with libcst, run every enabled rule in one traversal.

Positions (libcst's PositionProvider costs several times the parse) are computed only for the
statements that hold a finding (see positions.py).
"""

from __future__ import annotations

import ast
import os
import re
from concurrent.futures import ProcessPoolExecutor

import libcst as cst

from torchlint.cache import ResultCache, cache_key
from torchlint.config import UNSUPPRESSIBLE, Settings
from torchlint.analysis.names import nested_statement_lists
from torchlint.context import FileContext, FixSpec, PendingReport
from torchlint.diagnostics import Diagnostic, Edit, Fix, Location
from torchlint.noqa import file_exemption, line_suppresses
from torchlint.positions import StatementPositions
from torchlint.rule import Rule
from torchlint.rules import get_rule
from torchlint.sources import LINE_BREAK, UnreadableFile, decode_source, read_bytes, source_rows
from torchlint.walker import Walker

# Rules only look at files that mention torch at all: a cheap textual pre-filter.
_RELEVANT = re.compile(r"torch|backward|zero_grad")


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


def syntax_error(source: str, filename: str, error: cst.ParserSyntaxError) -> Diagnostic:
    # CPython's parser gives the clearer message and location; libcst's is the fallback for
    # code that CPython accepts but this libcst cannot parse.
    try:
        ast.parse(source, filename)
    except SyntaxError as python_error:
        row, column = python_error.lineno or 1, python_error.offset or 1
        return file_error("TL901", filename, f"SyntaxError: {python_error.msg}", row, max(column, 1))
    except (ValueError, RecursionError, MemoryError):
        pass
    message = re.sub(r"^parser error: error at \d+:\d+: ", "", error.message)
    return file_error("TL901", filename, f"SyntaxError: {message}", error.raw_line, error.raw_column + 1)


def _in_newline(content: str, newline: str) -> str:
    """Edits write the file's own newline (libcst's `default_newline`), whatever the rule wrote."""
    if "\r" not in content and ("\n" not in content or newline == "\n"):
        return content
    return LINE_BREAK.sub(newline, content)


def _to_edits(fix: FixSpec, positions: StatementPositions, chain, newline: str = "\n") -> Fix:
    edits = []
    for node, content in fix.replacements:
        content = _in_newline(content, newline)
        span = positions.range_of(node, chain)
        edits.append(
            Edit(content, Location(span.start.line, span.start.column + 1), Location(span.end.line, span.end.column + 1))
        )
    for row, content in fix.insertions:
        edits.append(Edit(_in_newline(content, newline), Location(row, 1), Location(row, 1)))
    return Fix(fix.applicability, fix.message, tuple(sorted(edits, key=lambda edit: edit.location)))


def _resolve(ctx: FileContext, pending: list[PendingReport], filename: str) -> list[Diagnostic]:
    positions = StatementPositions(ctx.module, ctx.source)
    diagnostics = []
    for report in pending:
        span = positions.range_of(report.node, report.chain)
        rule = report.rule
        start = Location(span.start.line, span.start.column + 1)
        diagnostics.append(
            Diagnostic(
                code=rule.code, name=rule.name, message=report.message, filename=filename,
                location=start, end_location=Location(span.end.line, span.end.column + 1),
                severity=rule.severity,
                fix=_to_edits(report.fix, positions, report.chain, ctx.module.default_newline) if report.fix else None,
                noqa_row=start.row,
            )
        )
    return diagnostics


def _not_suppressed(diagnostics: list[Diagnostic], source: str) -> list[Diagnostic]:
    lines = source_rows(source)
    kept = []
    for diagnostic in diagnostics:
        row = diagnostic.noqa_row or diagnostic.location.row
        line = lines[row - 1] if 0 < row <= len(lines) else ""
        if diagnostic.code in UNSUPPRESSIBLE or not line_suppresses(line, diagnostic.code):
            kept.append(diagnostic)
    return kept


def _unique(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """One finding per code and location, even when two paths of a rule reach the same node."""
    seen, unique = set(), []
    for diagnostic in diagnostics:
        key = (diagnostic.code, diagnostic.location, diagnostic.end_location)
        if key not in seen:
            seen.add(key)
            unique.append(diagnostic)
    return unique


def check_source(source: str, filename: str, settings: Settings, module: cst.Module | None = None) -> list[Diagnostic]:
    """Every finding of the enabled rules in one file's text (`module`: its tree, if already parsed)."""
    try:
        module = module if module is not None else cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return [syntax_error(source, filename, error)]
    except RecursionError:
        return [file_error("TL901", filename, "SyntaxError: too deeply nested to parse")]
    # After parsing: a file-level noqa never hides that the file is broken.
    exemption = file_exemption(source)
    if exemption.whole_file:
        return []
    rule_classes = [
        rule for rule in settings.rules_for(filename)
        if not rule.runtime_only and rule.code not in exemption.codes and rule.code not in UNSUPPRESSIBLE
    ]
    if not rule_classes or not _RELEVANT.search(source):
        return []
    ctx = FileContext(filename, source, module, settings)
    _collect_top_level_imports(ctx)
    rules: list[Rule] = [rule_class(ctx) for rule_class in rule_classes]
    Walker([_ImportCollector(ctx), ctx.values, ctx.kinds, *rules], ctx.ancestors).walk(module)
    if not ctx.pending:
        return []
    diagnostics = _not_suppressed(_resolve(ctx, ctx.pending, filename), source)
    return sorted(_unique(diagnostics), key=Diagnostic.sort_key)


def check_file(
    path: str, settings: Settings, display_name: str | None = None, cache: ResultCache | None = None
) -> list[Diagnostic]:
    filename = display_name or path
    try:
        data = read_bytes(path)
        key = cache_key(filename, data, settings) if cache else ""
        cached = cache.get(key, filename) if cache else None
        if cached is not None:
            return cached
        source = decode_source(data)
        if path.endswith(".ipynb"):
            from torchlint.notebook.check import check_notebook  # it checks its cells with this module

            diagnostics = check_notebook(source.text, filename, settings)
        else:
            diagnostics = check_source(source.text, filename, settings)
    except UnreadableFile as error:
        return [file_error("TL902", filename, f"cannot read file: {error}")]
    if cache:
        cache.put(key, diagnostics)
    return diagnostics


def internal_error_text(display_name: str, error: Exception) -> str:
    """The one line that reports a torchlint bug met while handling one file."""
    return f"{display_name}: {type(error).__name__}: {error}"


def _check_one(job: tuple[str, str, Settings, bool]) -> tuple[list[Diagnostic], str | None]:
    """One file's findings, or the internal error that stopped its check (a torchlint bug,
    kept to this file so that every other file is still checked)."""
    path, display_name, settings, use_cache = job
    try:
        return check_file(path, settings, display_name, ResultCache(settings.root) if use_cache else None), None
    except Exception as error:  # noqa: BLE001 - isolate one file's failure, by design
        return [], internal_error_text(display_name, error)


def map_files(worker, work: list, jobs: int | None = None) -> list:
    """`worker` over each item of `work`, in order, in parallel processes when there are several."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(work) < 4:
        return list(map(worker, work))
    with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
        return list(pool.map(worker, work, chunksize=max(1, len(work) // (jobs * 8))))


def check_files(
    files: list[tuple[str, str]], settings: Settings, jobs: int | None = None, errors: list[str] | None = None,
    *, use_cache: bool = False,
) -> list[Diagnostic]:
    """Check (path, display name) pairs, in parallel processes when there are several files.

    Internal errors are appended to `errors` when a list is given, else raised. With
    `use_cache`, results are kept in `.torchlint_cache/` beside the configuration.
    """
    results = map_files(_check_one, [(path, name, settings, use_cache) for path, name in files], jobs)
    failures = [error for _, error in results if error is not None]
    if failures and errors is None:
        raise RuntimeError(failures[0])
    if errors is not None:
        errors.extend(failures)
    return sorted((d for diagnostics, _ in results for d in diagnostics), key=Diagnostic.sort_key)
