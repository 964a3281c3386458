"""The pre-commit hook works as users install it: `pre-commit try-repo` against this checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("pre-commit") is None, reason="pre-commit is not installed")
def test_pre_commit_try_repo(tmp_path):
    # try-repo needs a git repository; snapshot the working tree (uncommitted changes included).
    hook_repo = tmp_path / "torchlint"
    shutil.copytree(REPO, hook_repo, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".pytest_cache"))
    _git("init", "-q", cwd=hook_repo)
    _git("add", "-A", cwd=hook_repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "snapshot", cwd=hook_repo)

    user = tmp_path / "user"
    (user / "vendored").mkdir(parents=True)
    (user / "pyproject.toml").write_text('[tool.torchlint]\nextend-exclude = ["vendored"]\n')
    (user / "train.py").write_text("import torch\nx = torch.Tensor(3)\n")
    (user / "vendored" / "old.py").write_text("import torch\ny = torch.Tensor(3)\n")
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
             for source in (["!pip install torch\n", "import torch"], ["%%time\n", "z = torch.Tensor(3)"])]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (user / "nb.ipynb").write_text(json.dumps(notebook, indent=1))
    _git("init", "-q", cwd=user)
    _git("add", "-A", cwd=user)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    result = subprocess.run(
        ["pre-commit", "try-repo", str(hook_repo), "torchlint", "--all-files", "--color", "never"],
        cwd=user, env=env, capture_output=True, text=True, timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "train.py:2:5: TL102" in output
    # Notebooks go through the hook too, IPython syntax masked, findings by cell.
    assert "nb.ipynb:cell 2:2:5: TL102" in output and "TL901" not in output
    # --force-exclude: the configured exclude applies to the files pre-commit passes explicitly.
    assert "old.py" not in output
