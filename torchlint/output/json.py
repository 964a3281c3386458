"""JSON: one array of objects with ruff's fields (plus `runtime`)."""

from __future__ import annotations

import json
import os

from torchlint.diagnostics import Diagnostic, Location
from torchlint.output import OutputContext
from torchlint.rules import get_rule


def _location(location: Location) -> dict:
    return {"row": location.row, "column": location.column}


def to_dict(diagnostic: Diagnostic) -> dict:
    fix = diagnostic.fix
    rule = get_rule(diagnostic.code)
    return {
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "filename": os.path.abspath(diagnostic.filename),
        "location": _location(diagnostic.location),
        "end_location": _location(diagnostic.end_location),
        "severity": diagnostic.severity.value,
        "fix": None if fix is None else {
            "applicability": fix.applicability.value,
            "message": fix.message,
            "edits": [
                {"content": edit.content, "location": _location(edit.location), "end_location": _location(edit.end_location)}
                for edit in fix.edits
            ],
        },
        "url": rule.url() if rule else None,
        "noqa_row": diagnostic.noqa_row,
        "cell": diagnostic.cell,
        "runtime": diagnostic.runtime,
    }


def render(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    return json.dumps([to_dict(d) for d in diagnostics], indent=2) + "\n"
