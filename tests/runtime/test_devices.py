"""Logical devices (TL301, TL302, TL306), CUDA/MPS API stubs, real CUDA when present."""

import pytest
from conftest import finding, line_of

from torchlint.runtime import run_script

TRAIN = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        h = F.relu(self.fc1(x))
{forward_extra}
        return self.fc2(h)

model = Net().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
data = torch.randn(64, 8)
labels = torch.randint(0, 2, (64,))
for step in range(20):
    x = data{move}
    y = labels.to(device)
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
{after}
"""


def _train(script, forward_extra="", move=".to(device)", after=""):
    return script(TRAIN.format(forward_extra=forward_extra or "        pass", move=move, after=after))


def test_correct_training_loop_is_clean_on_logical_cuda(script):
    path = _train(script, after="print(loss.item())")
    report = run_script(str(path), [], [], device="logical:cuda")
    assert report.exit_status == 0, report.exception
    assert report.diagnostics == []


def test_input_not_moved_is_reported_at_its_factory(script):
    path = _train(script, move="")
    static = finding(path, "TL301", "torch.randn(64, 8)")
    report = run_script(str(path), [], [static], device="logical:cuda")
    assert report.exit_status == 0, report.exception
    [diagnostic] = report.diagnostics
    assert diagnostic.runtime == "confirmed" and "linear" in diagnostic.runtime_detail


def test_input_not_moved_without_static_finding_is_added(script):
    path = _train(script, move="")
    report = run_script(str(path), [], [], device="logical:cuda")
    [added] = report.diagnostics
    assert (added.code, added.runtime) == ("TL301", "confirmed")
    assert added.location.row == line_of(path, "torch.randn(64, 8)")
    assert added.location.column == 8  # `data = torch.randn(...)`: the factory call itself


def test_factory_inside_forward_without_device(script):
    path = _train(script, forward_extra="        h = h + torch.zeros(16)")
    report = run_script(str(path), [], [], device="logical:cuda")
    rows = {(d.code, d.location.row) for d in report.diagnostics}
    assert rows == {("TL301", line_of(path, "torch.zeros(16)"))}


def test_same_script_on_cpu_device_has_no_device_findings(script):
    path = _train(script, move="")
    report = run_script(str(path), [], [], device="cpu")
    assert report.exit_status == 0
    assert report.diagnostics == []


def test_item_every_step_is_a_sync_in_loop(script):
    path = _train(script, after="    total = loss.item()\n    if step % 50 == 0:\n        print(loss.item())")
    static = finding(path, "TL302", "loss.item()", occurrence=2)
    report = run_script(str(path), [], [static], device="logical:cuda")
    by_code = {(d.code, d.location.row): d for d in report.diagnostics}
    periodic = by_code[("TL302", static.location.row)]
    assert periodic.runtime == "refuted"
    every_step = by_code[("TL302", line_of(path, "total = loss.item()"))]
    assert every_step.runtime == "confirmed" and "20 syncs" in every_step.runtime_detail


def test_cuda_api_a_training_script_touches_does_not_crash(script):
    path = script("""
        import torch
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1
        torch.cuda.manual_seed_all(0)
        print(torch.cuda.get_device_name(0))
        torch.cuda.set_sync_debug_mode("warn")
        model = torch.nn.Linear(4, 1).cuda()
        assert next(model.parameters()).is_cuda
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cuda")
        x = torch.randn(8, 4, device="cuda")
        assert x.device.type == "cuda" and x.cpu().device.type == "cpu"
        for _ in range(3):
            opt.zero_grad()
            with torch.autocast("cuda"):
                loss = model(x).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        print("peak", torch.cuda.max_memory_allocated())
    """)
    report = run_script(str(path), [], [], device="logical:cuda")
    assert report.exit_status == 0, report.exception
    assert [d.code for d in report.diagnostics] == []


def test_float64_on_logical_mps(script):
    path = script("""
        import torch
        assert torch.backends.mps.is_available()
        device = torch.device("mps")
        a = torch.ones(3, device=device)
        b = torch.ones(3, dtype=torch.float64).to(device)
        print(a.device, b.is_mps)
    """)
    static = finding(path, "TL306", 'torch.ones(3, dtype=torch.float64).to(device)')
    report = run_script(str(path), [], [static], device="logical:mps")
    assert report.exit_status == 0, report.exception
    assert [(d.code, d.runtime) for d in report.diagnostics] == [("TL306", "confirmed")]


def test_mps_cpu_fallback_warning_becomes_a_finding(script):
    # A stand-in for PyTorch's C++ warning on a real MPS machine (this one has no MPS).
    path = script("""
        import warnings
        import torch
        def fallback_op(x):
            warnings.warn("The operator 'aten::foo' is not currently supported on the MPS backend "
                          "and will fall back to run on the CPU. This may have performance implications.")
            return x
        fallback_op(torch.ones(2, device="mps"))
    """)
    report = run_script(str(path), [], [], device="logical:mps")
    [added] = report.diagnostics
    assert added.code == "TL602" and added.location.row == line_of(path, "warnings.warn(")


@pytest.fixture
def cuda_only():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")


def test_real_cuda_mixed_devices_and_syncs(script, cuda_only):
    path = _train(script, move="", after="    print(loss.item())")
    report = run_script(str(path), [], [], device="cuda")
    codes = {d.code for d in report.diagnostics}
    assert report.exit_status == 1 and "same device" in report.exception
    assert "TL301" in codes


def test_data_parallel_runs_its_module_on_one_logical_device(script):
    path = script("""
        import torch
        import torch.nn as nn
        model = nn.DataParallel(nn.Linear(4, 2)).cuda()
        out = model(torch.randn(3, 4).cuda())
        bias = torch.ones(2)
        total = out + bias
    """)
    report = run_script(str(path), [], [finding(path, "TL301", "torch.ones(2)")], device="logical:cuda")
    assert report.exit_status == 0, report.exception
    from torchlint.runtime.instrument import DATA_PARALLEL_NOTE  # imports torch: the test is skipped without it

    assert DATA_PARALLEL_NOTE in report.notes
    assert [(d.code, d.runtime) for d in report.diagnostics] == [("TL301", "confirmed")]


def test_recurrent_layers_on_logical_cuda_warn_as_on_a_gpu(script):
    """flatten_parameters() (called by scripts, and by torch.load of a whole RNN) asks cuDNN
    whether it takes the CUDA weights: under logical CUDA the CPU build warned "compiled without
    cuDNN" where python on either machine is silent."""
    path = script("""
        import warnings
        import torch
        import torch.nn as nn
        warnings.simplefilter("error")
        lstm = nn.LSTM(4, 8).cuda()
        lstm.flatten_parameters()
        out, _ = lstm(torch.randn(5, 2, 4).cuda())
    """)
    report = run_script(str(path), [], [], device="logical:cuda")
    assert report.exit_status == 0, report.exception


def test_cpu_device_hides_accelerators_from_the_script_and_its_processes(script, tmp_path):
    """On a GPU machine --device cpu ran the script on the GPU, where nothing watched devices."""
    path = script("""
        import os, subprocess, sys
        import torch
        child = subprocess.run([sys.executable, "-c", "import os; print(repr(os.environ.get('CUDA_VISIBLE_DEVICES')))"],
                               capture_output=True, text=True).stdout.strip()
        seen = (os.environ.get("CUDA_VISIBLE_DEVICES"), child, torch.cuda.is_available(),
                torch.backends.mps.is_available(), torch.accelerator.is_available())
        open("seen.txt", "w").write(repr(seen))
    """)
    report = run_script(str(path), [], [], device="cpu")
    assert report.exit_status == 0, report.exception
    assert (path.parent / "seen.txt").read_text() == repr(("", "''", False, False, False))
