from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import run_torchlint

SCHEMA = Path(__file__).resolve().parent / "data" / "sarif" / "sarif-schema-2.1.0.json"
BAD = "import torch\nimport torch.nn.functional as F\n\nx = torch.Tensor([3, 4])\ny = F.softmax(\n    x\n)\n"


@pytest.fixture
def repo(project):
    (project / ".git").mkdir()
    (project / "src").mkdir()
    (project / "src" / "bad,name.py").write_text(BAD)
    return project


def test_json_has_ruff_fields(repo):
    result = run_torchlint("check", "--show-hints", "--output-format", "json", cwd=repo)
    findings = json.loads(result.stdout)
    first = findings[0]
    assert set(first) == {
        "code", "name", "message", "filename", "location", "end_location", "severity", "fix", "url",
        "noqa_row", "cell", "runtime", "related",
    }
    assert first["filename"] == str(repo / "src" / "bad,name.py")
    assert (first["location"], first["end_location"]) == ({"row": 4, "column": 5}, {"row": 4, "column": 25})
    assert first["fix"]["applicability"] == "safe"
    assert first["fix"]["edits"] == [
        {"content": "torch.tensor([3, 4], dtype=torch.get_default_dtype())", "location": {"row": 4, "column": 5},
         "end_location": {"row": 4, "column": 25}}
    ]
    assert first["url"].endswith("docs/rules/TL102.md") and first["runtime"] is None
    assert findings[1]["severity"] == "error" and findings[1]["end_location"] == {"row": 7, "column": 2}


def test_json_is_an_empty_array_when_clean(project):
    (project / "ok.py").write_text("x = 1\n")
    assert run_torchlint("check", "--output-format", "json", cwd=project).stdout == "[]\n"


def test_github_annotations(repo):
    lines = run_torchlint("check", "--show-hints", "--output-format", "github", cwd=repo).stdout.splitlines()
    # A note (legacy spelling of working code) is a notice: annotated, never a failure's colour.
    assert lines[0] == (
        "::notice title=torchlint (TL102),file=src/bad%2Cname.py,line=4,col=5,endLine=4,endColumn=25::"
        "TL102 `torch.Tensor(...)` builds a tensor of these values through a legacy constructor; "
        "`torch.tensor(..., dtype=...)` says the same"
    )
    # A finding over several lines leaves out the columns (GitHub rejects them).
    assert lines[1].startswith("::error title=torchlint (TL202),file=src/bad%2Cname.py,line=5,endLine=7::TL202 ")


def test_github_escapes_percent_and_newlines():
    from torchlint.output.github import _escape_data, _escape_property

    assert _escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    # Code quoted in a message may hold a form feed, which Python (and other readers) split lines at.
    assert _escape_data("torch.\fByteTensor\u2028x").splitlines() == ["torch. ByteTensor x"]
    assert _escape_property("a:b,c") == "a%3Ab%2Cc"


def test_sarif_validates_and_has_what_code_scanning_needs(repo):
    result = run_torchlint("check", "--show-hints", "--output-format", "sarif", cwd=repo)
    log = json.loads(result.stdout)
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "torchlint" and driver["version"] and driver["informationUri"]
    rule = next(r for r in driver["rules"] if r["id"] == "TL102")
    assert rule["defaultConfiguration"]["level"] == "warning"
    assert "## What it does" in rule["help"]["markdown"] and rule["helpUri"].endswith("TL102.md")
    first = run["results"][0]
    assert first["ruleId"] == "TL102" and first["level"] == "note"  # working code in a legacy spelling
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "src/bad,name.py"
    assert location["region"] == {"startLine": 4, "startColumn": 5, "endLine": 4, "endColumn": 25}
    fingerprints = [r["partialFingerprints"]["primaryLocationLineHash"] for r in run["results"]]
    assert len(set(fingerprints)) == len(fingerprints)


def test_sarif_file_is_written_beside_the_chosen_output_in_one_run(repo):
    result = run_torchlint("check", "--show-hints", "--output-format", "github", "--sarif-file", "out.sarif", cwd=repo)
    assert result.returncode == 1
    annotations = result.stdout.splitlines()
    log = json.loads((repo / "out.sarif").read_text())
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["TL102", "TL202"]
    assert len(annotations) == 2 and "TL102" in annotations[0] and "TL202" in annotations[1]


def test_sarif_fingerprints_survive_moved_lines(repo):
    before = json.loads(run_torchlint("check", "--show-hints", "--output-format", "sarif", cwd=repo).stdout)
    (repo / "src" / "bad,name.py").write_text("# a new first line\n" + BAD)
    after = json.loads(run_torchlint("check", "--show-hints", "--output-format", "sarif", cwd=repo).stdout)

    def prints(log):
        return [r["partialFingerprints"]["primaryLocationLineHash"] for r in log["runs"][0]["results"]]

    assert prints(before) == prints(after)
    assert after["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
