"""A new user's first runs: stdin, empty folders, colour, statistics, rule names, help, pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO, run_torchlint

LEGACY = "import torch\nx = torch.Tensor(3)\n"


def test_stdin_with_the_files_own_configuration(project) -> None:
    (project / "pyproject.toml").write_text('[tool.torchlint.per-file-ignores]\n"tests/*" = ["TL102"]\n')
    result = run_torchlint("check", "-", "--stdin-filename", "src/train.py", "--output-format", "concise",
                           cwd=project, stdin=LEGACY)
    assert result.returncode == 1
    assert result.stdout.startswith("src/train.py:2:5: TL102 ")
    ignored = run_torchlint("check", "-", "--stdin-filename", "tests/t.py", cwd=project, stdin=LEGACY)
    assert ignored.returncode == 0, ignored.stdout
    values = LEGACY.replace("torch.Tensor(3)", "torch.Tensor([3.0])")  # a TL102 with a safe fix
    fixed = run_torchlint("check", "--show-hints", "-", "--fix", cwd=project, stdin=values)
    assert (fixed.returncode, fixed.stdout) == (0, "import torch\nx = torch.tensor([3.0])\n")


def test_no_files_found_is_said_on_stderr(project) -> None:
    (project / "empty").mkdir()
    result = run_torchlint("check", "empty", cwd=project)
    assert result.returncode == 0
    assert result.stderr == "torchlint: warning: no Python files found under empty\n"


def test_color_options_and_variables(project) -> None:
    (project / "a.py").write_text(LEGACY)
    colored = "\033[1m"
    assert colored in run_torchlint("check", "--color", "always", cwd=project).stdout
    assert colored not in run_torchlint("check", cwd=project).stdout  # a pipe
    assert colored in run_torchlint("check", cwd=project, env={"FORCE_COLOR": "1"}).stdout
    assert colored not in run_torchlint("check", cwd=project, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert colored not in run_torchlint("check", "--color", "never", cwd=project, env={"FORCE_COLOR": "1"}).stdout


def test_statistics_in_json(project) -> None:
    (project / "a.py").write_text(LEGACY + "y = torch.LongTensor([2])\n")
    result = run_torchlint("check", "--show-hints", "--statistics", "--output-format", "json", cwd=project)
    assert json.loads(result.stdout) == [  # integers have no automatic fix, values do
        {"code": "TL102", "name": "legacy-tensor-constructor", "count": 2, "fixable": True}
    ]


def test_rule_by_name_and_runtime_only_rules_marked(project) -> None:
    by_name = run_torchlint("rule", "view-after-permute", cwd=project)
    assert by_name.returncode == 0 and by_name.stdout.startswith("# view-after-permute (TL101)")
    listing = run_torchlint("rule", "--all", cwd=project).stdout.splitlines()
    assert any(line.startswith("TL601") and line.endswith("(runtime only: --runtime)") for line in listing)
    assert not any(line.startswith("TL101") and "runtime only" in line for line in listing)
    rules = json.loads(run_torchlint("rule", "--all", "--output-format", "json", cwd=project).stdout)
    assert {rule["code"] for rule in rules if rule["runtime_only"]} >= {"TL601", "TL602"}


def test_top_level_help_is_not_cut(project) -> None:
    help_text = run_torchlint("--help", cwd=project).stdout
    assert "Explain a rule (by code or name), or list every rule with --all." in help_text
    commands = help_text.split("Commands:")[1].splitlines()
    assert not any(line.rstrip().endswith("...") for line in commands)


def test_a_closed_pipe_ends_quietly(project) -> None:
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-m", "torchlint", "rule", "--all"], cwd=project, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before the first line is written (`| head -0`)
    stderr = process.stderr.read().decode()
    assert (process.wait(timeout=60), stderr) == (141, "")
