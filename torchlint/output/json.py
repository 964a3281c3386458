"""JSON: one array of objects with ruff's fields (plus `runtime`).

`runtime` is null in static mode; with `--runtime` it is `{"verdict": ..., "observed": ...}`. The
array stays ruff's shape, so the run record (exit status, timed out, device) is not in it: it is
written with `--run-record FILE`, and SARIF carries it as its invocation.
"""

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
        "runtime": None if diagnostic.runtime is None else {
            "verdict": diagnostic.runtime, "observed": diagnostic.runtime_detail,
        },
        "related": [
            {
                "filename": os.path.abspath(note.filename), "location": _location(note.location),
                "end_location": _location(note.end_location), "cell": note.cell, "message": note.message,
            }
            for note in diagnostic.related
        ],
    }


def render(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    return json.dumps([to_dict(d) for d in diagnostics], indent=2) + "\n"


def render_statistics(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    """`--statistics --output-format json`: one object per rule, most frequent first (as ruff)."""
    from torchlint.output.text import is_fixable

    counts: dict[str, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        counts.setdefault(diagnostic.code, []).append(diagnostic)
    rows = [
        {"code": code, "name": found[0].name, "count": len(found),
         "fixable": any(is_fixable(d, context) for d in found)}
        for code, found in sorted(counts.items(), key=lambda item: (-len(item[1]), item[0]))
    ]
    return json.dumps(rows, indent=2) + "\n"
