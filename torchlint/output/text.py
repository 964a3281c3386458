"""The text formats: `full` (ruff-like, with the source line and a caret) and `concise`."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from torchlint.diagnostics import Applicability, Diagnostic, Related, Severity
from torchlint.notebook import cell_rows
from torchlint.output import OutputContext
from torchlint.output.notebooks import notebook_at
from torchlint.sources import UnreadableFile, read_source, source_rows

_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_MAX_SHOWN_COLUMNS = 160  # of a source line under a finding
_BOLD, _RED, _YELLOW, _CYAN, _DIM, _RESET = "\033[1m", "\033[31m", "\033[33m", "\033[36m", "\033[2m", "\033[0m"


def _paint(text: str, style: str, context: OutputContext) -> str:
    return f"{style}{text}{_RESET}" if context.color else text


@lru_cache(maxsize=64)
def _file_rows(filename: str) -> tuple[str, ...]:
    try:
        return tuple(source_rows(read_source(filename).text))
    except UnreadableFile:
        return ()


def source_lines(filename: str, cell: int | None = None) -> tuple[str, ...]:
    """The rows of a file, or of one cell of a notebook, as findings count them."""
    if cell is None:
        return _file_rows(filename)
    notebook = notebook_at(filename)
    return cell_rows(notebook, cell) if notebook is not None else ()


def forget_sources() -> None:
    """Read files again (after fixes changed them)."""
    _file_rows.cache_clear()
    notebook_at.cache_clear()


def is_fixable(diagnostic: Diagnostic, context: OutputContext) -> bool:
    """Is the finding's fix available: safe, or unsafe under `--unsafe-fixes`? (`[*]`)"""
    fix = diagnostic.fix
    return fix is not None and (fix.applicability == Applicability.SAFE or context.unsafe_fixes)


def _hidden_fixes(diagnostics: list[Diagnostic], context: OutputContext) -> int:
    """Unsafe fixes that `--unsafe-fixes` would make available."""
    return sum(1 for d in diagnostics if d.fix is not None and not is_fixable(d, context))


def shown_filename(filename: str) -> str:
    """The file name as printed: control characters escaped (`\\n`, `\\x1b`) and every `:` but a
    drive letter's as `\\:`, so that no file name can print a line, or a `path:row:col: CODE`
    prefix, that log parsers would read as a finding of its own."""
    drive = filename[:2] if _DRIVE.match(filename) else ""
    rest = filename[len(drive):]
    if rest.isprintable() and ":" not in rest:
        return filename
    escaped = "".join(character if character.isprintable() else repr(character)[1:-1] for character in rest)
    return drive + escaped.replace(":", "\\:")


def place(finding: Diagnostic | Related) -> str:
    """`path:row:column:`, with the cell for a notebook."""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{shown_filename(finding.filename)}:{cell}{finding.location.row}:{finding.location.column}:"


_SEVERITY_COLORS = {"error": _RED, "warning": _YELLOW, "note": _CYAN, "hint": _CYAN}


def headline(diagnostic: Diagnostic, context: OutputContext) -> str:
    where = place(diagnostic)
    color = _SEVERITY_COLORS[diagnostic.severity.value]
    parts = [_paint(where, _BOLD, context), _paint(diagnostic.code, _BOLD + color, context)]
    if diagnostic.runtime:
        parts.append(f"[{diagnostic.runtime}]")
    if is_fixable(diagnostic, context):
        parts.append(_paint("[*]", _CYAN, context))
    if diagnostic.severity in (Severity.NOTE, Severity.HINT):
        parts.append(_paint(f"[{diagnostic.severity.value}]", _CYAN, context))
    message = diagnostic.message
    if diagnostic.runtime_detail:
        message += f" ({diagnostic.runtime_detail})"
    parts.append(message)
    return " ".join(parts)


def _source_frame(diagnostic: Diagnostic, context: OutputContext) -> list[str]:
    lines = source_lines(diagnostic.filename, diagnostic.cell)
    row = diagnostic.location.row
    if not 0 < row <= len(lines):
        return []
    line = lines[row - 1].expandtabs(1)
    start = diagnostic.location.column
    end = diagnostic.end_location.column if diagnostic.end_location.row == row else len(line) + 1
    line, start, end = _clipped(line, start, end)
    width = max(end - start, 1)
    gutter = " " * len(str(row))
    caret = _paint("^" * width + " " + diagnostic.code, _SEVERITY_COLORS[diagnostic.severity.value], context)
    frame = [f"{gutter} |", f"{row} | {line}", f"{gutter} | {' ' * (start - 1)}{caret}", f"{gutter} |"]
    frame += [f"{gutter} = note: {place(note)} {note.message}" for note in diagnostic.related]
    if diagnostic.fix is not None:
        frame.append(f"{gutter} = help: {diagnostic.fix.message}")
    return frame


def _clipped(line: str, start: int, end: int) -> tuple[str, int, int]:
    """A long source line cut to the part around the finding (columns count from 1), marked `…`
    where cut: a generated file's 200,000-character line is not printed whole."""
    if len(line) <= _MAX_SHOWN_COLUMNS:
        return line, start, end
    first = max(start - 1 - _MAX_SHOWN_COLUMNS // 4, 0)
    last = min(first + _MAX_SHOWN_COLUMNS, len(line))
    prefix = "…" if first else ""
    shown = prefix + line[first:last] + ("…" if last < len(line) else "")
    shift = len(prefix) - first
    return shown, start + shift, min(end + shift, len(prefix) + last - first + 1)


def _findings(count: int) -> str:
    return f"{count} finding" if count == 1 else f"{count} findings"


def summary(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    hidden = _hidden_fixes(diagnostics, context)
    more = f"; {hidden} more with `--unsafe-fixes`" if hidden else ""
    if context.fixed:
        total = context.fixed + len(diagnostics)
        return f"Found {_findings(total)} ({context.fixed} fixed, {len(diagnostics)} remaining{more})."
    if not diagnostics:
        return "All checks passed!"
    fixable = sum(1 for d in diagnostics if is_fixable(d, context))
    of_them = "".join(_count_of(diagnostics, severity) for severity in (Severity.NOTE, Severity.HINT))
    return f"Found {_findings(len(diagnostics))} ({of_them}{fixable} fixable{more})."


def _count_of(diagnostics: list[Diagnostic], severity: Severity) -> str:
    """`2 notes, `: how many findings are of a mild severity, for the summary."""
    count = sum(1 for d in diagnostics if d.severity == severity)
    return f"{count} {severity.value}{'' if count == 1 else 's'}, " if count else ""


def fix_listing(fixed_per_file: list[tuple[str, dict[str, int]]], heading: str) -> str:
    """`--show-fixes`: what was fixed, per file and code (ruff's layout). Empty when nothing was."""
    from torchlint.rules import get_rule

    files = [(name, counts) for name, counts in fixed_per_file if counts]
    if not files:
        return ""
    total = sum(sum(counts.values()) for _, counts in files)
    lines = [f"{heading} {_findings(total)}:"]
    for name, counts in sorted(files):
        lines.append(f"- {shown_filename(name)}:")
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            rule = get_rule(code)
            lines.append(f"    {count} × {code} ({rule.name if rule else code})")
    return "\n".join(lines)


def _closing(diagnostics: list[Diagnostic], context: OutputContext) -> list[str]:
    listing = [context.fix_listing] if context.fix_listing else []
    return listing + ([summary(diagnostics, context)] if context.summary else [])


def render_full(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    blocks = []
    for diagnostic in diagnostics:
        blocks.append("\n".join([headline(diagnostic, context), *_source_frame(diagnostic, context)]))
    parts = blocks + _closing(diagnostics, context)
    return "\n\n".join(parts) + "\n" if parts else ""


def render_concise(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    lines = [headline(diagnostic, context) for diagnostic in diagnostics] + _closing(diagnostics, context)
    return "".join(line + "\n" for line in lines)


def render_statistics(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = {d.code for d in diagnostics if is_fixable(d, context)}
    width = len(str(max(counts.values()))) if counts else 1
    lines = [
        f"{count:>{width}}\t{code}\t{'[*]' if code in fixable else '   '} {names[code]}"
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
    lines += _closing(diagnostics, context)
    return "".join(line + "\n" for line in lines)
