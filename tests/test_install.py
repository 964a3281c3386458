"""Installing as the README says: a wheel built with `python -m build` installs and runs in a clean
virtual environment (its console script and its flake8 entry point), and the GitHub Action's
composite steps install and run torchlint as a workflow would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
# `::error title=...,file=...,line=N,...::message`, the properties escaped as GitHub requires.
WORKFLOW_COMMAND = re.compile(r"^::(error|warning|notice) (?:[a-zA-Z]+=[^,:\n]*)(?:,[a-zA-Z]+=[^,:\n]*)*::\S.*$")


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(arg) for arg in args], capture_output=True, text=True, timeout=600, **kwargs)


def _build_leftovers_and(destination: Path):
    """What the copy of the checkout leaves out: build leftovers, and the directory holding the
    copy itself (a `--basetemp` inside the checkout would otherwise be copied into itself
    without end)."""
    leftovers = shutil.ignore_patterns(
        ".git", "__pycache__", "*.egg-info", ".pytest_cache", ".torchlint_cache", "build", "dist")
    destination = destination.resolve()

    def ignore(directory: str, names: list[str]) -> set[str]:
        holders = {name for name in names if destination.is_relative_to(Path(directory, name).resolve())}
        return set(leftovers(directory, names)) | holders

    return ignore


def build_wheel(root: Path) -> tuple[Path, Path]:
    """(the wheel built from a copy of the checkout, that copy), both under `root`."""
    source = root / "torchlint"
    shutil.copytree(REPO, source, ignore=_build_leftovers_and(root))
    # --no-isolation: the build backend (setuptools) of this interpreter, no download.
    built = run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", root / "dist", source)
    assert built.returncode == 0, built.stdout + built.stderr
    return next((root / "dist").glob("torchlint-*.whl")), source


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the venv's bin directory, a copy of the checkout) with the built wheel installed."""
    root = tmp_path_factory.mktemp("install")
    wheel, source = build_wheel(root)
    entry_points = next(name for name in zipfile.ZipFile(wheel).namelist() if name.endswith("entry_points.txt"))
    declared = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[flake8.extension]\nTL = torchlint.flake8:Plugin" in declared
    assert "torchlint = torchlint.cli:main" in declared
    venv.create(root / "venv", with_pip=True)
    bin_directory = root / "venv" / ("Scripts" if os.name == "nt" else "bin")
    # From a clean directory with no PYTHONPATH: `python -m pip` puts its working directory first on
    # sys.path, and a checkout's torchlint.egg-info there would pass for an installed torchlint.
    pip = run(bin_directory / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel, "flake8",
              cwd=root, env={key: value for key, value in os.environ.items() if key != "PYTHONPATH"})
    assert pip.returncode == 0, pip.stderr
    return bin_directory, source


def test_the_wheel_runs_torchlint_and_flake8_in_a_clean_venv(installed, tmp_path) -> None:
    bin_directory, source = installed
    shutil.copytree(source / "examples", tmp_path / "examples")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    checked = run(bin_directory / "torchlint", "check", "--output-format", "json", "examples", cwd=tmp_path,
                  env=environment)
    assert checked.returncode == 1, checked.stderr
    findings = sorted((d["location"]["row"], d["code"]) for d in json.loads(checked.stdout))
    assert findings and all(code.startswith("TL") for _, code in findings)
    flake8 = run(bin_directory / "python", "-m", "flake8", "--select", "TL", "examples", cwd=tmp_path, env=environment)
    rows = sorted((int(line.split(":")[1]), line.split(": ")[1].split()[0]) for line in flake8.stdout.splitlines())
    assert rows == findings


def _steps(inputs: dict[str, str], action_path: Path) -> list[tuple[str, dict[str, str]]]:
    """Each composite step's script and environment, with `${{ ... }}` expressions filled in."""
    action = yaml.safe_load((REPO / "action.yml").read_text())
    defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    values = {**{f"inputs.{k}": v for k, v in {**defaults, **inputs}.items()}, "github.action_path": str(action_path)}

    def fill(text: str) -> str:
        return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda match: values[match.group(1)], text)

    assert action["runs"]["using"] == "composite"
    return [(fill(step["run"]), {k: fill(str(v)) for k, v in step.get("env", {}).items()})
            for step in action["runs"]["steps"]]


def _run_action(installed, workspace: Path, inputs: dict[str, str]) -> list[subprocess.CompletedProcess]:
    bin_directory, source = installed
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment.update({
        "PATH": f"{bin_directory}{os.pathsep}{environment['PATH']}", "CI": "true", "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace), "GITHUB_ACTION_PATH": str(source),
        # The dependencies are in the venv already: only the action's checkout is built.
        "PIP_NO_DEPS": "1",
    })
    results = []
    for script, step_environment in _steps(inputs, source):
        # How GitHub runs `shell: bash`.
        result = run("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script, cwd=workspace,
                     env={**environment, **step_environment})
        results.append(result)
        if result.returncode != 0:
            break
    return results


def test_the_action_annotates_findings_writes_sarif_and_fails_on_usage_errors(installed, tmp_path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("import torch\nx = torch.Tensor(3)\ny = torch.Tensor(2)\n")
    results = _run_action(installed, tmp_path, {"src": "src", "sarif-file": "torchlint.sarif"})
    assert len(results) == 2, results[-1].stdout + results[-1].stderr
    install, check = results
    assert install.returncode == 0, install.stderr
    assert check.returncode == 1, check.stderr
    annotations = check.stdout.splitlines()
    assert len(annotations) == 2 and all(WORKFLOW_COMMAND.match(line) for line in annotations), annotations
    assert annotations[0].startswith("::warning title=torchlint (TL102),file=src/train.py,line=2,col=5,")
    sarif = json.loads((tmp_path / "torchlint.sarif").read_text())
    assert len(sarif["runs"][0]["results"]) == 2
    check_script = _steps({"sarif-file": "torchlint.sarif"}, REPO)[-1][0]
    assert check_script.count("torchlint check") == 1  # annotations and SARIF from one run, not two

    (tmp_path / "torchlint.sarif").unlink()
    *_, failed = _run_action(installed, tmp_path, {"args": "--select TL999", "sarif-file": "torchlint.sarif"})
    assert failed.returncode == 2 and "unknown rule selector 'TL999'" in failed.stderr
    assert not (tmp_path / "torchlint.sarif").exists()  # no empty SARIF file that looks like success


def test_the_action_annotates_notes_as_notices_that_fail_only_under_its_fail_on(installed, tmp_path) -> None:
    source = "import torch\nx = torch.rand(3)\ngrowth = torch.exp(x) - 1\nback = torch.log1p(growth)\n"
    (tmp_path / "train.py").write_text(source)
    check = _run_action(installed, tmp_path, {})[-1]
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("::notice title=torchlint (TL206),file=train.py,line=3,")
    assert _run_action(installed, tmp_path, {"fail-on": "note"})[-1].returncode == 1


def test_the_action_splits_its_args_as_a_shell_does(installed, tmp_path) -> None:
    (tmp_path / "src dir").mkdir()
    (tmp_path / "src dir" / "train.py").write_text(
        "import torch\nimport torch.nn.functional as F\nx = torch.Tensor(2, 3, 4)\ny = F.softmax(x)\n")
    results = _run_action(installed, tmp_path, {"args": "--config 'select = [\"TL2\"]'", "src": "'src dir'"})
    check = results[-1]
    assert check.returncode == 1, check.stderr
    assert [line.split(" ", 2)[1] for line in check.stdout.splitlines()] == ["title=torchlint"]
    assert "(TL202)" in check.stdout and "(TL102)" not in check.stdout


def test_the_readme_workflow_is_a_complete_workflow_using_the_actions_inputs() -> None:
    readme = (REPO / "README.md").read_text()
    snippet = next(block for block in re.findall(r"```yaml\n(.*?)```", readme, re.S) if "torchlint/torchlint@" in block)
    workflow = yaml.safe_load(snippet)
    inputs = set(yaml.safe_load((REPO / "action.yml").read_text())["inputs"])
    (job,) = workflow["jobs"].values()
    assert workflow[True] == ["push", "pull_request"]  # YAML 1.1 reads the key `on` as true
    assert job["runs-on"] and workflow["permissions"]["security-events"] == "write"
    step = next(step for step in job["steps"] if step.get("uses", "").startswith("torchlint/torchlint@"))
    assert set(step.get("with", {})) <= inputs
