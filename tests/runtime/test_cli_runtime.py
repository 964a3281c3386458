"""`torchlint check --runtime`: findings from the real engine, verdicts in text and JSON."""

import json
import os
import subprocess
import sys

from conftest import line_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _torchlint(*args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "torchlint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


SCRIPT = """
import sys
import torch
import torch.nn.functional as F
print("script args", sys.argv[1:])
a = torch.Tensor(2, 3)
if "--never" in sys.argv:
    b = torch.Tensor(5)
pred, target = torch.randn(8, 1), torch.randn(8)
loss = F.mse_loss(pred, target)
"""


def test_check_runtime_text_and_json(script, tmp_path):
    path = script(SCRIPT)
    text = _torchlint("check", "--runtime", "--device", "cpu", "--output-format", "concise",
                      "train.py", "--", "--epochs", "2", cwd=tmp_path)
    assert text.returncode == 1, text.stderr
    assert "script args ['--epochs', '2']" in text.stdout
    assert f"train.py:{line_of(path, 'torch.Tensor(2, 3)')}:5: TL102 [confirmed]" in text.stdout
    assert f"train.py:{line_of(path, 'torch.Tensor(5)')}:9: TL102 [not-reached]" in text.stdout
    assert f"train.py:{line_of(path, 'F.mse_loss')}:8: TL601 [confirmed]" in text.stdout

    machine = _torchlint("check", "--runtime", "--device", "cpu", "--output-format", "json", "train.py",
                         cwd=tmp_path)
    found = {(d["code"], d["location"]["row"], d["runtime"]) for d in json.loads(machine.stdout)}
    assert ("TL102", line_of(path, "torch.Tensor(2, 3)"), "confirmed") in found
    assert ("TL601", line_of(path, "F.mse_loss"), "confirmed") in found
    assert "script args" in machine.stderr  # the script's stdout cannot corrupt the JSON


def test_engine_findings_get_verdicts_through_run_script(script):
    from torchlint.config import Settings
    from torchlint.engine import check_source
    from torchlint.rules import all_rules
    from torchlint.runtime import run_script

    path = script("""
        import torch
        import torch.nn.functional as F
        x = torch.randn(2, 3, 4)
        p = F.softmax(x)
        probs = torch.softmax(torch.tensor([[0.0, 500.0]]), dim=-1)
        logp = probs.log()
    """)
    settings = Settings(rules=tuple(r for r in all_rules() if not r.runtime_only))
    findings = check_source(path.read_text(), str(path), settings)
    assert {d.code for d in findings} >= {"TL202", "TL201"}
    report = run_script(str(path), [], findings, device="cpu")
    assert {(d.code, d.runtime) for d in report.diagnostics} >= {("TL202", "confirmed"), ("TL201", "confirmed")}


def test_runtime_options_need_runtime(tmp_path):
    result = _torchlint("check", "--timeout", "3", ".", cwd=tmp_path)
    assert result.returncode == 2 and "--runtime" in result.stderr
