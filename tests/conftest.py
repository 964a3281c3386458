from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Samples for the linter to read, not tests to run: a fixture named like a test module
# (`TL007_calibration_test.py`, which the rule must see as test code) would otherwise run.
collect_ignore_glob = ["fixtures/*", "data/*"]


def run_torchlint(*args: str, cwd: Path, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run the CLI as a user would (`python -m torchlint`), from `cwd`, with this checkout's code."""
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    environment.pop("NO_COLOR", None) if env is None or "NO_COLOR" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "torchlint", *args], cwd=cwd, env=environment,
        capture_output=True, text=True, input=stdin, timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory with its own pyproject.toml, so no outer config leaks in."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return tmp_path


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch) -> Path:
    """Each test has its own result cache (inherited by the torchlint it runs), never the user's."""
    directory = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("TORCHLINT_CACHE_DIR", str(directory))
    return directory
