"""The child runs the script as `python SCRIPT ARGS` would, and its verdicts survive failures."""

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import finding, line_of

import torchlint.runtime as runtime
from torchlint.runtime import RuntimeUnavailable, run_script


def test_script_sees_argv_main_cwd_and_its_directory_on_sys_path(script, capfd, tmp_path):
    path = script("""
        import os, sys
        print("argv", sys.argv)
        print("name", __name__)
        print("cwd", os.getcwd())
        print("path0", sys.path[0])
        print("err", file=sys.stderr)
    """)
    report = run_script(str(path), ["--epochs", "2"], [], device="cpu")
    out, err = capfd.readouterr()
    assert report.exit_status == 0 and report.exception is None
    assert f"argv ['{path}', '--epochs', '2']" in out
    assert "name __main__" in out
    assert f"cwd {tmp_path}" in out
    assert f"path0 {tmp_path}" in out
    assert "err" in err


def test_exception_half_way_keeps_verdicts_so_far(script):
    path = script("""
        import torch
        a = torch.Tensor(2, 2)
        def step():
            raise ValueError("diverged")
        step()
        b = torch.Tensor(3)
    """)
    findings = [finding(path, "TL102", "torch.Tensor(2, 2)"), finding(path, "TL102", "torch.Tensor(3)")]
    report = run_script(str(path), [], findings, device="cpu")
    assert report.exit_status == 1
    assert "ValueError: diverged" in report.exception
    assert f'line {line_of(path, "raise ValueError")}, in step' in report.exception
    assert [d.runtime for d in report.diagnostics] == ["confirmed", "not-reached"]


def test_sys_exit_status_is_the_scripts(script):
    path = script("""
        import sys, torch
        t = torch.Tensor(2)
        sys.exit(3)
    """)
    report = run_script(str(path), [], [finding(path, "TL102", "torch.Tensor(2)")], device="cpu")
    assert report.exit_status == 3 and report.exception is None
    assert report.diagnostics[0].runtime == "confirmed"


def test_timeout_kills_the_script_and_keeps_what_it_saw(script):
    path = script("""
        import time, torch
        t = torch.Tensor(2)
        while True:
            time.sleep(0.05)
    """)
    report = run_script(str(path), [], [finding(path, "TL102", "torch.Tensor(2)")], device="cpu", timeout=10)
    assert report.timed_out
    assert report.exit_status != 0
    assert report.diagnostics[0].runtime == "confirmed"


def test_ctrl_c_keeps_verdicts(script, tmp_path):
    path = script("""
        import os, signal, torch
        t = torch.Tensor(2)
        os.kill(os.getpid(), signal.SIGINT)
        u = torch.Tensor(3)
    """)
    findings = [finding(path, "TL102", "torch.Tensor(2)"), finding(path, "TL102", "torch.Tensor(3)")]
    # As from a terminal: a job a shell starts in the background has SIGINT ignored, and so
    # would its script (plain python too).
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        report = run_script(str(path), [], findings, device="cpu")
    finally:
        signal.signal(signal.SIGINT, ignored)
    assert report.exit_status == 128 + signal.SIGINT
    assert "KeyboardInterrupt" in report.exception
    assert [d.runtime for d in report.diagnostics] == ["confirmed", "not-reached"]


def test_missing_torch_raises_runtime_unavailable(script, monkeypatch):
    path = script("print('hi')\n")
    monkeypatch.setattr(runtime, "_torch_installed", lambda: False)
    with pytest.raises(RuntimeUnavailable, match=r"pip install torch \(the CPU build is enough\)"):
        run_script(str(path), [], [])


def test_runtime_package_does_not_import_torch():
    code = "import sys, torchlint.runtime, torchlint.runtime.verdicts; print('torch' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


def test_sources_are_read_as_python_reads_them(tmp_path, monkeypatch):
    # A UTF-8 BOM on the script, and a latin-1 coding cookie on a module it imports: both with a
    # finding, so both are compiled with probes by torchlint rather than by Python.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_bytes(
        "\ufeffimport torch\nimport helpers\nw = torch.Tensor(2, 3)\nprint(helpers.NAME)\n".encode("utf-8"))
    helpers = "# -*- coding: latin-1 -*-\nimport torch\nNAME = 'caf\xe9'\nb = torch.Tensor(4)\n"
    (tmp_path / "helpers.py").write_text(helpers, encoding="utf-8")  # where the finding is, by characters
    findings = [finding(tmp_path / "train.py", "TL102", "torch.Tensor(2, 3)"),
                finding(tmp_path / "helpers.py", "TL102", "torch.Tensor(4)")]
    (tmp_path / "helpers.py").write_bytes(helpers.encode("latin-1"))
    report = run_script(str(tmp_path / "train.py"), [], findings, device="cpu")
    assert report.exit_status == 0, report.exception
    assert [(d.filename.rsplit("/", 1)[1], d.runtime) for d in report.diagnostics] == [
        ("train.py", "confirmed"), ("helpers.py", "confirmed")]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_torchlint_stops_the_script_and_leaves_nothing(tmp_path, stop):
    # A cancelled CI job sends SIGTERM; a closed terminal, SIGHUP.
    (tmp_path / "train.py").write_text(
        "import os, time\nimport torch\nopen('pid', 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(__file__))), TMPDIR=str(scratch))
    # torchlint ends as the signal's default has it, which a suite run under `nohup` inherits as
    # "ignore SIGHUP": the run is given the default, as a terminal gives it.
    torchlint = subprocess.Popen([sys.executable, "-m", "torchlint", "check", "--runtime", "--device", "cpu", "train.py"],
                                 cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 preexec_fn=lambda: signal.signal(stop, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text():
        assert time.monotonic() < deadline and torchlint.poll() is None
        time.sleep(0.1)
    script_pid = int((tmp_path / "pid").read_text())
    torchlint.send_signal(stop)
    assert torchlint.wait(timeout=30) == -stop
    with pytest.raises(ProcessLookupError):
        os.kill(script_pid, 0)
    assert list(scratch.iterdir()) == []
