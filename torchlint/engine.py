"""Check files: parse each once with libcst, run every enabled rule in one traversal.

Positions (libcst's PositionProvider costs several times the parse) are computed only for files
that have at least one finding.
"""

from __future__ import annotations

import ast
import os
import re
from concurrent.futures import ProcessPoolExecutor

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from torchlint.config import UNSUPPRESSIBLE, Settings
from torchlint.context import FileContext, FixSpec, PendingReport
from torchlint.diagnostics import Diagnostic, Edit, Fix, Location
from torchlint.notebook import notebook_source
from torchlint.noqa import file_exemption, line_suppresses
from torchlint.rule import Rule
from torchlint.rules import get_rule
from torchlint.sources import UnreadableFile, read_source
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
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        ctx.imports.add(small)
            elif isinstance(statement, (cst.If, cst.Try, cst.Else, cst.ExceptHandler, cst.Finally)):
                scan(statement.body.body)
                for nested in (getattr(statement, "orelse", None), getattr(statement, "finalbody", None)):
                    if nested is not None:
                        scan([nested])
                for handler in getattr(statement, "handlers", ()):
                    scan([handler])

    scan(ctx.module.body)


def file_error(rule_code: str, filename: str, message: str, row: int = 1, column: int = 1) -> Diagnostic:
    rule = get_rule(rule_code)
    location = Location(row, column)
    return Diagnostic(
        code=rule.code, name=rule.name, message=message, filename=filename,
        location=location, end_location=location, severity=rule.severity, noqa_row=row,
    )


def _syntax_error(source: str, filename: str, error: cst.ParserSyntaxError) -> Diagnostic:
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


def _to_edits(fix: FixSpec, positions) -> Fix:
    edits = []
    for node, content in fix.replacements:
        span = positions[node]
        edits.append(
            Edit(content, Location(span.start.line, span.start.column + 1), Location(span.end.line, span.end.column + 1))
        )
    for row, content in fix.insertions:
        edits.append(Edit(content, Location(row, 1), Location(row, 1)))
    return Fix(fix.applicability, fix.message, tuple(sorted(edits, key=lambda edit: edit.location)))


def _resolve(ctx: FileContext, pending: list[PendingReport], filename: str) -> list[Diagnostic]:
    positions = MetadataWrapper(ctx.module, unsafe_skip_copy=True).resolve(PositionProvider)
    diagnostics = []
    for report in pending:
        span = positions[report.node]
        rule = report.rule
        start = Location(span.start.line, span.start.column + 1)
        diagnostics.append(
            Diagnostic(
                code=rule.code, name=rule.name, message=report.message, filename=filename,
                location=start, end_location=Location(span.end.line, span.end.column + 1),
                severity=rule.severity, fix=_to_edits(report.fix, positions) if report.fix else None,
                noqa_row=start.row,
            )
        )
    return diagnostics


def _not_suppressed(diagnostics: list[Diagnostic], source: str) -> list[Diagnostic]:
    lines = source.splitlines()
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


def check_source(source: str, filename: str, settings: Settings) -> list[Diagnostic]:
    """Every finding of the enabled rules in one file's text."""
    exemption = file_exemption(source)
    if exemption.whole_file:
        return []
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return [_syntax_error(source, filename, error)]
    except RecursionError:
        return [file_error("TL901", filename, "SyntaxError: too deeply nested to parse")]
    rule_classes = [
        rule for rule in settings.rules_for(filename)
        if not rule.runtime_only and rule.code not in exemption.codes and rule.code not in UNSUPPRESSIBLE
    ]
    if not rule_classes or not _RELEVANT.search(source):
        return []
    ctx = FileContext(filename, source, module, settings)
    _collect_top_level_imports(ctx)
    rules: list[Rule] = [rule_class(ctx) for rule_class in rule_classes]
    Walker([_ImportCollector(ctx), ctx.values, *rules], ctx.ancestors).walk(module)
    if not ctx.pending:
        return []
    diagnostics = _not_suppressed(_resolve(ctx, ctx.pending, filename), source)
    return sorted(_unique(diagnostics), key=Diagnostic.sort_key)


def check_file(path: str, settings: Settings, display_name: str | None = None) -> list[Diagnostic]:
    filename = display_name or path
    try:
        source = read_source(path)
        if path.endswith(".ipynb"):
            notebook = notebook_source(source.text)
            return [notebook.locate(d) for d in check_source(notebook.text, filename, settings)]
    except UnreadableFile as error:
        return [file_error("TL902", filename, f"cannot read file: {error}")]
    return check_source(source.text, filename, settings)


def _check_one(job: tuple[str, str, Settings]) -> list[Diagnostic]:
    path, display_name, settings = job
    return check_file(path, settings, display_name)


def check_files(files: list[tuple[str, str]], settings: Settings, jobs: int | None = None) -> list[Diagnostic]:
    """Check (path, display name) pairs, in parallel processes when there are several files."""
    jobs = jobs or os.cpu_count() or 1
    work = [(path, name, settings) for path, name in files]
    if jobs <= 1 or len(work) < 4:
        results = map(_check_one, work)
        diagnostics = [d for result in results for d in result]
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
            chunk = max(1, len(work) // (jobs * 8))
            diagnostics = [d for result in pool.map(_check_one, work, chunksize=chunk) for d in result]
    return sorted(diagnostics, key=Diagnostic.sort_key)
