"""A finding's notes on the places it rests on (`Diagnostic.related`), in every output format,
through the cache and in notebooks. TL002 is the example: the `zero_grad()` between a
`backward()` and a `step()` is reported with both of them as notes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.conftest import run_torchlint
from torchlint import engine
from torchlint.config import Options, resolve_settings

SCHEMA = Path(__file__).resolve().parent / "data" / "sarif" / "sarif-schema-2.1.0.json"
TRAIN = """\
import torch

for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
"""
NOTES = [(5, 5, "the gradients are computed here"), (7, 5, "the step that should use them runs here")]


def _project(project: Path) -> Path:
    (project / ".git").mkdir()
    (project / "train.py").write_text(TRAIN)
    return project


def test_text_prints_a_note_line_per_related_place(project):
    output = run_torchlint("check", "--select", "TL002", "train.py", cwd=_project(project)).stdout
    notes = [line.strip() for line in output.splitlines() if "= note:" in line]
    assert notes == [f"= note: train.py:{row}:{column}: {message}" for row, column, message in NOTES]


def test_concise_text_stays_one_line_per_finding(project):
    output = run_torchlint(
        "check", "--select", "TL002", "--output-format", "concise", "train.py", cwd=_project(project)
    ).stdout
    assert "note" not in output and output.splitlines()[0].startswith("train.py:6:5: TL002")


def test_json_carries_a_related_list(project):
    repo = _project(project)
    [finding] = json.loads(run_torchlint("check", "--select", "TL002", "--output-format", "json", cwd=repo).stdout)
    assert [(n["location"]["row"], n["location"]["column"], n["message"]) for n in finding["related"]] == NOTES
    assert {n["filename"] for n in finding["related"]} == {str(repo / "train.py")}
    assert finding["related"][0]["end_location"] == {"row": 5, "column": 20}


def test_sarif_has_related_locations_and_a_code_flow_ending_at_the_finding(project):
    log = json.loads(run_torchlint("check", "--select", "TL002", "--output-format", "sarif", cwd=_project(project)).stdout)
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    [result] = log["runs"][0]["results"]
    related = result["relatedLocations"]
    assert [r["id"] for r in related] == [1, 2]
    assert [(r["physicalLocation"]["region"]["startLine"], r["message"]["text"]) for r in related] == [
        (row, message) for row, _, message in NOTES
    ]
    steps = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [step["location"]["physicalLocation"]["region"]["startLine"] for step in steps] == [5, 7, 6]


def test_github_annotation_lists_the_notes_under_the_message(project):
    [line] = run_torchlint("check", "--select", "TL002", "--output-format", "github", cwd=_project(project)).stdout.splitlines()
    assert line.endswith(
        "%0A= note: train.py:5: the gradients are computed here%0A= note: train.py:7: the step that should use them runs here"
    )


def test_notes_come_back_from_the_cache(project):
    repo = _project(project)
    settings = resolve_settings(Options(select=["TL002"]), cwd=repo)
    files = [(str(repo / "train.py"), "train.py")]
    cold = engine.check_files(files, settings, 1, use_cache=True)
    warm = engine.check_files(files, settings, 1, use_cache=True)
    assert warm == cold and len(warm[0].related) == 2


def test_notes_in_a_notebook_name_their_cell_and_cell_row(project):
    cells = [
        "import torch\n",
        "%matplotlib inline\nfor x, y in loader:\n    loss = model(x).sum()\n    loss.backward()\n"
        "    optimizer.zero_grad()\n    optimizer.step()\n",
    ]
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": text, "outputs": [], "execution_count": None}
                  for text in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    (project / "train.ipynb").write_text(json.dumps(notebook))
    [finding] = json.loads(
        run_torchlint("check", "--select", "TL002", "--output-format", "json", "train.ipynb", cwd=project).stdout
    )
    assert (finding["cell"], finding["location"]["row"]) == (2, 5)
    assert [(n["cell"], n["location"]["row"]) for n in finding["related"]] == [(2, 4), (2, 6)]

