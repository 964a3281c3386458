"""torchlint's findings, fixes and rule docs in the Language Server Protocol's terms.

torchlint counts 1-based rows and columns in characters; LSP counts 0-based lines and columns in
the code units the client negotiated (UTF-16 by default), so each conversion needs the row's text.
"""

from __future__ import annotations

import os

from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace.position_codec import PositionCodec

from torchlint.diagnostics import Applicability, Diagnostic, Fix, Location, Severity
from torchlint.output.text import source_lines
from torchlint.rules import get_rule
from torchlint.server.reparse import rows_with_breaks, touched_rows
from torchlint.sources import LINE_BREAK

SOURCE = "torchlint"
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.torchlint"

_SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error, Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.NOTE: types.DiagnosticSeverity.Information, Severity.HINT: types.DiagnosticSeverity.Hint,
}


def position(rows: list[str], location: Location, codec: PositionCodec) -> types.Position:
    """The LSP position of a torchlint location in a text of these rows (clamped to the text)."""
    line = min(max(location.row, 1), len(rows)) - 1
    row = rows[line]
    return types.Position(line=line, character=codec.client_num_units(row[: max(location.column - 1, 0)]))


def text_range(rows: list[str], start: Location, end: Location, codec: PositionCodec) -> types.Range:
    return types.Range(start=position(rows, start, codec), end=position(rows, end, codec))


def related_information(
    diagnostic: Diagnostic, uri: str, rows: list[str], codec: PositionCodec
) -> list[types.DiagnosticRelatedInformation] | None:
    """The places the finding rests on: in the open document (its rows as the editor has them)
    or in other files of the project (as saved). Notes on notebook cells stay in the message."""
    information = []
    for note in diagnostic.related:
        if note.cell is not None:
            continue
        same_file = note.filename == diagnostic.filename
        note_rows = rows if same_file else list(source_lines(note.filename)) or [""]
        location = types.Location(
            uri=uri if same_file else from_fs_path(os.path.abspath(note.filename)),
            range=text_range(note_rows, note.location, note.end_location, codec),
        )
        information.append(types.DiagnosticRelatedInformation(location=location, message=note.message))
    return information or None


def lsp_diagnostic(diagnostic: Diagnostic, uri: str, rows: list[str], codec: PositionCodec) -> types.Diagnostic:
    rule = get_rule(diagnostic.code)
    return types.Diagnostic(
        related_information=related_information(diagnostic, uri, rows, codec),
        range=text_range(rows, diagnostic.location, diagnostic.end_location, codec),
        message=diagnostic.message,
        severity=_SEVERITIES[diagnostic.severity],
        code=diagnostic.code,
        code_description=types.CodeDescription(href=rule.url()) if rule else None,
        source=SOURCE,
        tags=[types.DiagnosticTag.Deprecated] if rule and "deprecated" in rule.name else None,
    )


def fix_edits(fix: Fix, rows: list[str], codec: PositionCodec) -> list[types.TextEdit]:
    return [
        types.TextEdit(range=text_range(rows, edit.location, edit.end_location, codec), new_text=edit.content)
        for edit in fix.edits
    ]


def fix_title(diagnostic: Diagnostic) -> str:
    fix = diagnostic.fix
    unsafe = " (unsafe fix: check the result)" if fix.applicability == Applicability.UNSAFE else ""
    return f"{fix.message} ({diagnostic.code}){unsafe}"


def row_edit(rows: list[str], row: int, new_line: str, codec: PositionCodec) -> types.TextEdit:
    """Replace the text of 1-based row `row` (not its line break) by `new_line`."""
    end = Location(row, len(rows[row - 1]) + 1)
    return types.TextEdit(range=text_range(rows, Location(row, 1), end, codec), new_text=new_line)


def changed_rows_edit(old: str, new: str, codec: PositionCodec) -> types.TextEdit | None:
    """One edit that turns `old` into `new`, replacing only the rows between what they share at
    their start and at their end (so that the editor keeps the cursor and folds elsewhere)."""
    if old == new:
        return None
    before, after = rows_with_breaks(old), rows_with_breaks(new)
    first, end = touched_rows(before, after)
    if end < len(before):
        end_position = types.Position(line=end, character=0)
    elif not before or LINE_BREAK.search(before[-1]):
        end_position = types.Position(line=len(before), character=0)
    else:  # the old text's last row, which has no line break
        end_position = types.Position(line=len(before) - 1, character=codec.client_num_units(before[-1]))
    kept_at_end = len(before) - end
    return types.TextEdit(
        range=types.Range(start=types.Position(line=first, character=0), end=end_position),
        new_text="".join(after[first: len(after) - kept_at_end]),
    )


def hover_markdown(diagnostic: Diagnostic) -> str:
    """The rule's summary and the fix, for a hover on the finding."""
    rule = get_rule(diagnostic.code)
    lines = [f"**{diagnostic.code}** `{rule.name}` ({rule.severity.value})", "", diagnostic.message, "", rule.summary]
    if diagnostic.fix is not None:
        safety = "safe" if diagnostic.fix.applicability == Applicability.SAFE else "unsafe"
        lines += ["", f"**Fix** ({safety}): {diagnostic.fix.message}"]
    use_instead = rule.doc_sections().get("Use instead")
    if use_instead:
        lines += ["", "**Use instead:**", "", use_instead]
    lines += ["", f"[{diagnostic.code} documentation]({rule.url()})"]
    return "\n".join(lines)
