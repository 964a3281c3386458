"""`torchlint check --runtime`: findings from the real engine, verdicts in text and JSON."""

import json
import os
import subprocess
import sys

from conftest import finding, line_of

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
pred = torch.stack([torch.randn(1) for i in range(16) if i % 2])  # (8, 1), a shape the code does not show
target = torch.randn(8)
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
    found = {(d["code"], d["location"]["row"], d["runtime"]["verdict"]) for d in json.loads(machine.stdout)}
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


def test_a_silent_broadcast_is_confirmed_by_the_shapes_the_run_gives_its_operands(script):
    """TL104's silent case raises nothing: the (16, 1) column and the (16,) returns it meets
    make a (16, 16) table. The operands' shapes at the flagged line confirm it."""
    from torchlint.config import Settings
    from torchlint.engine import check_source
    from torchlint.rules import get_rule
    from torchlint.runtime import run_script

    path = script("""
        import torch
        import torch.nn as nn
        critic = nn.Linear(4, 1)
        returns = torch.randn(16)
        values = critic(torch.randn(16, 4))
        advantage = returns - values
        print(advantage.shape)
    """)
    findings = check_source(path.read_text(), str(path), Settings(rules=(get_rule("TL104"),)))
    assert [(d.code, d.location.row) for d in findings] == [("TL104", line_of(path, "returns - values"))]
    report = run_script(str(path), [], findings, device="cpu")
    [checked] = report.diagnostics
    assert checked.runtime == "confirmed"
    assert "(16,) and (16, 1) broadcast to (16, 16) here" in checked.runtime_detail


def test_runtime_options_need_runtime(tmp_path):
    result = _torchlint("check", "--timeout", "3", ".", cwd=tmp_path)
    assert result.returncode == 2 and "--runtime" in result.stderr
    dry = _torchlint("check", "--dry-run", ".", cwd=tmp_path)
    assert dry.returncode == 2 and "--dry-run needs --runtime" in dry.stderr


def test_dry_run_from_the_command_line(script, tmp_path):
    path = script("""
        import torch
        model = torch.nn.Linear(6, 2)
        print(model(torch.randn(4, 5)).shape)
    """)
    result = _torchlint("check", "--runtime", "--dry-run", "--output-format", "concise", "train.py", cwd=tmp_path)
    assert result.returncode == 1
    row = line_of(path, "model(torch.randn(4, 5))")
    assert f"train.py:{row}:" in result.stdout and "TL104 [confirmed]" in result.stdout
    assert "operands (4, 5) and (2, 6)" in result.stdout


CI_SCRIPT = """
import sys
import torch
w = torch.Tensor([1.0, 2.0])
if "--never" in sys.argv:
    b = torch.Tensor(5)
print("done", sys.argv[1:])
"""
SCHEMA = os.path.join(ROOT, "tests", "data", "sarif", "sarif-schema-2.1.0.json")


def test_sarif_carries_verdicts_and_the_run_record_and_fail_on_lets_ci_pass(script, tmp_path):
    import jsonschema

    path = script(CI_SCRIPT)
    (tmp_path / "sibling.py").write_text("import torch\nt = torch.Tensor(2)\n")  # never runs
    result = _torchlint("check", "--show-hints", "--runtime", "--device", "cpu", "--output-format", "sarif",
                        "--run-record", "run.json", "--fail-on", "confirmed", "train.py", "--", "--epochs", "2",
                        cwd=tmp_path)
    # Only refuted and not-reached findings: `--fail-on confirmed` lets the run pass.
    assert result.returncode == 0, result.stderr
    log = json.loads(result.stdout)
    with open(SCHEMA) as handle:
        jsonschema.validate(log, json.load(handle))
    run = log["runs"][0]
    found = {(r["locations"][0]["physicalLocation"]["region"]["startLine"], r["level"], r["properties"]["runtimeVerdict"])
             for r in run["results"]}
    # The sibling file never ran: no verdict, no finding.
    assert found == {(line_of(path, "torch.Tensor([1.0, 2.0])"), "note", "refuted"),
                     (line_of(path, "torch.Tensor(5)"), "warning", "not-reached")}
    [invocation] = run["invocations"]
    assert invocation["exitCode"] == 0 and invocation["executionSuccessful"] is True
    assert invocation["arguments"] == ["--epochs", "2"]
    record = json.loads((tmp_path / "run.json").read_text())
    assert record == invocation["properties"]["torchlintRun"]
    assert record["script"] == "train.py" and record["timed_out"] is False and record["device"] == "cpu"
    assert record["verdicts"] == {"refuted": 1, "not-reached": 1}


def test_github_annotation_shows_the_verdict_and_a_refuted_finding_is_a_notice(tmp_path):
    from torchlint.output import OutputContext
    from torchlint.output.github import render

    base = finding(script_file(tmp_path), "TL102", "torch.Tensor(2)")
    refuted = base.with_runtime("refuted", "called with data (list)")
    confirmed = base.with_runtime("confirmed", "called with ints (2,)")
    lines = render([refuted, confirmed], OutputContext(color=False, rules=())).splitlines()
    assert lines[0].startswith("::notice ") and lines[0].endswith("::TL102 [refuted] static finding (called with data (list))")
    assert lines[1].startswith("::error ") and "TL102 [confirmed] static finding" in lines[1]


def script_file(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\nt = torch.Tensor(2)\n")
    return path


def test_hints_for_script_arguments_without_double_dash(script, tmp_path):
    script(CI_SCRIPT)
    option = _torchlint("check", "--runtime", "train.py", "--epochs", "2", cwd=tmp_path)
    assert option.returncode == 2
    assert "arguments for the script go after `--`" in option.stderr
    extra = _torchlint("check", "--runtime", "train.py", "data.txt", cwd=tmp_path)
    assert extra.returncode == 2
    assert "data.txt would be its arguments: put them after `--`" in extra.stderr


def test_a_script_that_crashed_never_prints_all_checks_passed(script, tmp_path):
    script("import torch\nraise SystemExit('diverged')\n")
    result = _torchlint("check", "--runtime", "--device", "cpu", "train.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "All checks passed" not in result.stdout
    assert "the script did not finish" in result.stdout and "exited with status 1" in result.stderr
