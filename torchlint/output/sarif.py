"""SARIF 2.1.0 for GitHub code scanning."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from torchlint import __version__
from torchlint.diagnostics import Diagnostic, Related
from torchlint.output import OutputContext, repository_path, repository_root
from torchlint.output.notebooks import cell_label, json_rows
from torchlint.output.text import source_lines

_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {"error": "error", "warning": "warning", "note": "note", "hint": "note"}


def _rule_descriptor(rule) -> dict:
    sections = rule.doc_sections()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": sections.get("What it does", rule.summary)},
        "helpUri": rule.url(),
        "help": {"text": rule.summary, "markdown": rule.doc()},
        "defaultConfiguration": {"level": _LEVELS[rule.severity.value], "enabled": rule.default_enabled},
        "properties": {"tags": [rule.code[:3]]},
    }


def _fingerprint(diagnostic: Diagnostic, path: str, seen: Counter) -> str:
    """Stable across re-runs and line moves: the code, the path and the flagged line's text."""
    lines = source_lines(diagnostic.filename, diagnostic.cell)
    row = diagnostic.location.row
    text = lines[row - 1].strip() if 0 < row <= len(lines) else ""
    digest = hashlib.sha256(f"{diagnostic.code}\0{path}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    seen[digest] += 1
    return f"{digest}:{seen[digest]}"


def _invocation(run: dict) -> dict:
    """The `--runtime` run record as SARIF's invocation of the checked program."""
    command = [run["script"]] if run["script"] else ["-m", run["module"]]
    return {
        "commandLine": " ".join(["python", *command, *run["args"]]),
        "arguments": run["args"],
        "exitCode": run["exit_status"],
        "executionSuccessful": run["exit_status"] == 0 and not run["timed_out"],
        "properties": {"torchlintRun": run},
    }


def _physical_location(finding: Diagnostic | Related, root) -> dict:
    return {
        "artifactLocation": {"uri": repository_path(finding.filename, root), "uriBaseId": "%SRCROOT%"},
        "region": _region(finding),
    }


def _related_locations(d: Diagnostic, root) -> dict:
    """The places the finding rests on; a chain of several steps is also a code flow, ending at
    the finding, so that code scanning can walk it."""
    if not d.related:
        return {}
    notes = [
        {"id": number, "physicalLocation": _physical_location(note, root), "message": {"text": note.message}}
        for number, note in enumerate(d.related, start=1)
    ]
    if len(notes) == 1:
        return {"relatedLocations": notes}
    steps = [{"location": {key: note[key] for key in ("physicalLocation", "message")}} for note in notes]
    steps.append({"location": {"physicalLocation": _physical_location(d, root), "message": {"text": d.message}}})
    return {"relatedLocations": notes, "codeFlows": [{"threadFlows": [{"locations": steps}]}]}


def _region(d: Diagnostic | Related) -> dict:
    """The finding's lines; for a notebook cell, the JSON file's rows that hold them, with the
    position within the cell in the region's properties."""
    if d.cell is None:
        return {
            "startLine": d.location.row, "startColumn": d.location.column,
            "endLine": d.end_location.row, "endColumn": d.end_location.column,
        }
    first, last = json_rows(d)
    return {
        "startLine": first, "endLine": last,
        "properties": {
            "cell": d.cell, "row": d.location.row, "column": d.location.column,
            "endRow": d.end_location.row, "endColumn": d.end_location.column,
        },
    }


def render(diagnostics: list[Diagnostic], context: OutputContext) -> str:
    root = repository_root()
    rules = sorted({*context.rules}, key=lambda rule: rule.code)
    index = {rule.code: position for position, rule in enumerate(rules)}
    seen: Counter = Counter()
    results = []
    for d in diagnostics:
        path = repository_path(d.filename, root)
        result = {
            "ruleId": d.code,
            "level": _LEVELS[d.severity.value],
            "message": {"text": d.message if d.cell is None else f"{d.message} ({cell_label(d)})"},
            "locations": [{"physicalLocation": _physical_location(d, root)}],
            "partialFingerprints": {"primaryLocationLineHash": _fingerprint(d, path, seen)},
            **_related_locations(d, root),
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.runtime is not None:
            if d.runtime == "refuted":
                result["level"] = "note"  # the run proved the finding wrong
            result["properties"] = {"runtimeVerdict": d.runtime, "runtimeObserved": d.runtime_detail}
        results.append(result)
    log = {
        "$schema": _SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "torchlint", "version": __version__,
                "informationUri": "https://github.com/torchlint/torchlint",
                "rules": [_rule_descriptor(rule) for rule in rules],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
            "results": results,
            **({"invocations": [_invocation(context.run)]} if context.run else {}),
        }],
    }
    return json.dumps(log, indent=2) + "\n"
