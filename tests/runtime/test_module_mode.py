"""`torchlint check --runtime -m pytest -- tests/`: a package's own test suite drives the run."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_test_suite_of_a_package_gives_its_findings_verdicts(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text(
        "import torch\n\n\n"
        "def scratch(rows):\n    return torch.Tensor(rows, 3)\n\n\n"
        "def never_called():\n    return torch.Tensor(4)\n"
    )
    (tmp_path / "tests" / "test_ops.py").write_text(
        "from pkg.ops import scratch\n\n\ndef test_scratch():\n    assert scratch(2).shape == (2, 3)\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--runtime", "--device", "cpu", "--output-format", "json",
         "-m", "pytest", "--", "-q", "-p", "no:cacheprovider", "tests/"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert "1 passed" in result.stderr  # pytest's own report (stdout goes to stderr with JSON)
    found = {(os.path.relpath(d["filename"], tmp_path), d["location"]["row"], d["runtime"]["verdict"])
             for d in json.loads(result.stdout)}
    assert found == {("pkg/ops.py", 5, "confirmed"), ("pkg/ops.py", 9, "not-reached")}
