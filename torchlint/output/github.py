"""GitHub Actions workflow commands, so that a pull request is annotated at each finding."""

from __future__ import annotations

from torchlint.diagnostics import Diagnostic
from torchlint.output import OutputContext, repository_path, repository_root


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _level(diagnostic: Diagnostic) -> str:
    """A finding the run proved wrong is a notice, not an error or a warning."""
    return "notice" if diagnostic.runtime == "refuted" else diagnostic.severity.value


def _message(diagnostic: Diagnostic) -> str:
    if diagnostic.runtime is None:
        return f"{diagnostic.code} {diagnostic.message}"
    observed = f" ({diagnostic.runtime_detail})" if diagnostic.runtime_detail else ""
    return f"{diagnostic.code} [{diagnostic.runtime}] {diagnostic.message}{observed}"


def render(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    root = repository_root()
    lines = []
    for d in diagnostics:
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
        rendered = ",".join(f"{key}={_escape_property(value)}" for key, value in properties)
        lines.append(f"::{_level(d)} {rendered}::{_escape_data(_message(d))}")
    return "".join(line + "\n" for line in lines)
