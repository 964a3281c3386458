"""The flake8 plugin reports what `torchlint check` reports (a real flake8 run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from tests.conftest import REPO, run_torchlint

# flake8 finds the plugin through the `flake8.extension` entry point of the installed torchlint
# (`pip install -e .`); where this checkout is not installed, it is named as a local plugin instead
# (naming it both ways would load it twice). tests/test_install.py runs flake8 against a wheel.
INSTALLED = any(point.name == "TL" for point in entry_points(group="flake8.extension"))
LOCAL_PLUGIN = "[flake8]\nselect = TL\n" + (
    "" if INSTALLED else "[flake8:local-plugins]\nextension =\n    TL = torchlint.flake8:Plugin\n"
)
_FLAKE8_LINE = re.compile(r"^(?P<file>.+?):(?P<row>\d+):(?P<column>\d+): (?P<code>TL\d{3}) ")


def test_flake8_findings_equal_torchlint_check(project: Path) -> None:
    for example in sorted((REPO / "examples").glob("*.py")):
        shutil.copy(example, project / example.name)
    (project / "suppressed.py").write_text("import torch\nx = torch.Tensor(3)  # noqa: TL102\ny = torch.Tensor(2)\n")
    (project / "pyproject.toml").write_text('[tool.torchlint]\nextend-select = ["TL1"]\nignore = ["TL202"]\n')
    (project / ".flake8").write_text(LOCAL_PLUGIN)
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "."], cwd=project, env=environment, capture_output=True,
                            text=True, timeout=300)
    assert flake8.returncode == 1, flake8.stderr
    reported = sorted(
        (os.path.normpath(match["file"]), int(match["row"]), int(match["column"]), match["code"])
        for match in map(_FLAKE8_LINE.match, flake8.stdout.splitlines()) if match
    )
    checked = run_torchlint("check", "--output-format", "json", ".", cwd=project)
    expected = sorted(
        (os.path.relpath(d["filename"], project), d["location"]["row"], d["location"]["column"], d["code"])
        for d in json.loads(checked.stdout)
    )
    assert reported == expected
    assert {code for *_, code in expected} >= {"TL102"} and "TL202" not in {code for *_, code in expected}
    assert ("suppressed.py", 3, 5, "TL102") in reported and ("suppressed.py", 2, 5, "TL102") not in reported


def test_flake8_selection_turns_on_a_rule_that_is_off_by_default(project: Path) -> None:
    (project / "train.py").write_text("import torch\nx = torch.load('x.pt', weights_only=True).cuda()\ny = torch.Tensor(3)\n")
    (project / ".flake8").write_text(LOCAL_PLUGIN)
    environment = {**os.environ, "PYTHONPATH": str(REPO)}

    def codes(*args: str) -> list[str]:
        run = subprocess.run([sys.executable, "-m", "flake8", *args, "train.py"], cwd=project, env=environment,
                             capture_output=True, text=True, timeout=300)
        return sorted(match["code"] for match in map(_FLAKE8_LINE.match, run.stdout.splitlines()) if match)

    assert codes() == ["TL102"]  # the bare prefix: torchlint's defaults, where TL305 is off
    assert codes("--select", "TL305") == ["TL305"]
    assert codes("--extend-select", "TL3") == ["TL102", "TL305"]
