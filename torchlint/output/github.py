"""GitHub Actions workflow commands, so that a pull request is annotated at each finding."""

from __future__ import annotations

from torchlint.diagnostics import Diagnostic, Severity
from torchlint.output import OutputContext, repository_path, repository_root
from torchlint.output.notebooks import cell_label, json_rows


# The other characters Python reads as line breaks (a form feed is whitespace in source code, so
# code quoted in a message may hold one): each command must stay one line for any reader.
_OTHER_LINE_BREAKS = str.maketrans(dict.fromkeys("\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "))


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").translate(_OTHER_LINE_BREAKS)


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _level(diagnostic: Diagnostic) -> str:
    """A note or hint, or a finding the run proved wrong, is a notice, not an error or a warning."""
    if diagnostic.runtime == "refuted" or diagnostic.severity in (Severity.NOTE, Severity.HINT):
        return "notice"
    return diagnostic.severity.value


def _message(diagnostic: Diagnostic) -> str:
    if diagnostic.runtime is None:
        return f"{diagnostic.code} {diagnostic.message}"
    observed = f" ({diagnostic.runtime_detail})" if diagnostic.runtime_detail else ""
    return f"{diagnostic.code} [{diagnostic.runtime}] {diagnostic.message}{observed}"


def render(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    root = repository_root()
    lines = []
    for d in diagnostics:
        lines.append(_cell_annotation(d, root) if d.cell is not None else _annotation(d, root))
    return "".join(line + "\n" for line in lines)


def _annotation(d: Diagnostic, root) -> str:
    properties = [
        ("title", f"torchlint ({d.code})"),
        ("file", repository_path(d.filename, root)),
        ("line", str(d.location.row)),
    ]
    single_line = d.end_location.row == d.location.row
    if single_line:
        properties.append(("col", str(d.location.column)))
    properties.append(("endLine", str(d.end_location.row)))
    if single_line:
        properties.append(("endColumn", str(d.end_location.column)))
    return _command(d, properties, _message(d) + _notes(d, root))


def _cell_annotation(d: Diagnostic, root) -> str:
    """GitHub cannot address a cell: the annotation goes on the JSON rows holding the flagged
    lines, and the title and message name the cell."""
    first, last = json_rows(d)
    properties = [
        ("title", f"torchlint ({d.code}) in cell {d.cell}"),
        ("file", repository_path(d.filename, root)),
        ("line", str(first)),
        ("endLine", str(last)),
    ]
    return _command(d, properties, f"{_message(d)} ({cell_label(d)})" + _notes(d, root))


def _notes(d: Diagnostic, root) -> str:
    """The places the finding rests on, one line each under the message."""
    return "".join(
        f"\n= note: {repository_path(note.filename, root)}:"
        f"{f'cell {note.cell}:' if note.cell is not None else ''}{note.location.row}: {note.message}"
        for note in d.related
    )


def _command(d: Diagnostic, properties: list[tuple[str, str]], message: str) -> str:
    rendered = ",".join(f"{key}={_escape_property(value)}" for key, value in properties)
    return f"::{_level(d)} {rendered}::{_escape_data(message)}"
