"""`--runtime` after a regular install: the wheel installed into a fresh virtual environment, in
the same site-packages as torch, runs a script and a notebook and confirms their findings.

The environment gets this test environment's packages (torch and what it needs) by links, in
place of a download of torch, and torchlint from the wheel alone: no checkout on any path."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.test_install import build_wheel

SCRIPT = "import torch\nx = torch.randn(4)\nw = torch.Tensor(2, 3)\nprint('ran', x.shape)\n"


def _not_torchlint(name: str) -> bool:
    return not name.lower().startswith(("torchlint", "__editable__", "__pycache__"))


@pytest.fixture(scope="module")
def installed_beside_torch(tmp_path_factory) -> Path:
    """The bin directory of a new venv whose site-packages hold torch and the installed wheel."""
    root = tmp_path_factory.mktemp("installed")
    wheel, _ = build_wheel(root)
    venv.create(root / "venv", with_pip=True)
    python = root / "venv" / "bin" / "python"
    site_packages = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        capture_output=True, text=True, check=True).stdout.strip())
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if _not_torchlint(entry.name) and not (site_packages / entry.name).exists():
            (site_packages / entry.name).symlink_to(entry)
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    pip = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], cwd=root,
                         env=clean, capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr
    located = subprocess.run([python, "-c", "import torch, torchlint; print(torchlint.__file__, torch.__file__)"],
                             cwd=root, env=clean, capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(path).is_relative_to(site_packages) for path in located), located
    return python.parent


def _check(bin_directory: Path, target: str, cwd: Path) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([bin_directory / "torchlint", "check", "--runtime", "--device", "cpu", "--output-format",
                           "json", target], cwd=cwd, env=clean, capture_output=True, text=True, timeout=300)


def test_runtime_confirms_a_script_after_a_regular_install(installed_beside_torch, tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    result = _check(installed_beside_torch, "train.py", tmp_path)
    assert "ModuleNotFoundError" not in result.stderr, result.stderr
    assert "ran torch.Size([4])" in result.stderr  # the script's output, beside JSON on stdout
    verdicts = [(d["code"], d["location"]["row"], d["runtime"]["verdict"]) for d in json.loads(result.stdout)]
    assert verdicts == [("TL102", 3, "confirmed")]


def test_runtime_confirms_a_notebook_after_a_regular_install(installed_beside_torch, tmp_path):
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": [line]}
             for line in SCRIPT.splitlines(keepends=True)]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook))
    result = _check(installed_beside_torch, "nb.ipynb", tmp_path)
    assert "ModuleNotFoundError" not in result.stderr, result.stderr
    verdicts = [(d["code"], d["cell"], d["runtime"]["verdict"]) for d in json.loads(result.stdout)]
    assert verdicts == [("TL102", 3, "confirmed")]
