"""Verdicts that mean what they say: syncs per loop iteration, device findings under --device
cpu, torch.load by torch version, runtime-only findings at the line that caused them."""

import pytest
from conftest import finding, line_of

from torchlint.runtime import run_script
from torchlint.runtime.checks import NOT_CHECKED, NOT_OBSERVED, STOPPED_EARLY, VERIFY_ON_DEVICE

SCRIPT = """
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
w = torch.randn(4, device=device, requires_grad=True)
opts = [torch.optim.SGD([torch.nn.Parameter(torch.randn(2, device=device))], lr=0.1) for _ in range(3)]
for i in range(6):  # three optimizers per iteration
    loss = (w ** 2).sum()
    for opt in opts:
        opt.step()
    seen = loss.item()
for i in range(6):  # no optimizer: manual SGD
    loss = (w ** 2).sum()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad = None
    seen = loss.item()
for i in range(12):  # a throttled evaluation that syncs twice
    loss = (w ** 2).sum()
    if i % 6 == 0:
        acc, total = loss.item(), w.sum().item()

model = torch.nn.Linear(8, 8).to(device)
x = torch.randn(4, 8)
x.to(device)
mask = torch.ones(4, 8, device=x.device)
out = model(torch.randn(4, 8, device=device)) * mask

torch.save({"w": torch.ones(2)}, "ckpt.pt")
default = torch.load("ckpt.pt")
unsafe = torch.load("ckpt.pt", weights_only=False)
y = torch.randn(3, 4).transpose(0, 1).view(12)
"""


@pytest.fixture
def judged(script):
    path = script(SCRIPT)
    findings = [finding(path, "TL302", "loss.item()", occurrence=n) for n in (1, 2, 3)] + [
        finding(path, "TL502", 'torch.load("ckpt.pt")'),
        finding(path, "TL502", 'torch.load("ckpt.pt", weights_only=False)'),
        finding(path, "TL304", "x.to(device)"),  # its probe wraps the call: the blame must see through it
    ]

    def run(device):
        report = run_script(str(path), [], findings, device=device)
        assert "view size is not compatible" in report.exception
        return {(d.code, d.location.row): d for d in report.diagnostics}

    return path, run


def test_logical_cuda_run(judged):
    path, run = judged
    found = run("logical:cuda")
    three, manual, throttled = (found[("TL302", line_of(path, "loss.item()", n))] for n in (1, 2, 3))
    assert (three.runtime, three.runtime_detail) == ("confirmed", "host sync: .item(): 6 syncs in 6 of 6 iterations")
    assert (manual.runtime, manual.runtime_detail) == ("confirmed", "host sync: .item(): 6 syncs in 6 of 6 iterations")
    assert (throttled.runtime, throttled.runtime_detail) == ("refuted", "host sync: .item(): 2 sync(s) in 2 of 12 iterations")
    # The mix is blamed on the discarded .to() that left `x` behind, not on the correct
    # `device=x.device` factory that inherited its device.
    mixed = found[("TL301", line_of(path, "x.to(device)"))]
    assert mixed.runtime == "confirmed" and "discarded" in mixed.runtime_detail
    assert ("TL301", line_of(path, "mask = torch.ones")) not in found
    assert found[("TL304", line_of(path, "x.to(device)"))].runtime == "confirmed"
    assert found[("TL502", line_of(path, "default = "))].runtime == "refuted"
    assert "weights_only=True by default" in found[("TL502", line_of(path, "default = "))].runtime_detail
    assert found[("TL502", line_of(path, "unsafe = "))].runtime == "confirmed"
    # A stride error at a view static analysis did not flag is a finding of its own.
    assert found[("TL101", line_of(path, ".view(12)"))].runtime == "confirmed"


def test_cpu_run_leaves_device_findings_unjudged(judged):
    path, run = judged
    found = run("cpu")
    for n in (1, 2, 3):
        sync = found[("TL302", line_of(path, "loss.item()", n))]
        assert (sync.runtime, sync.runtime_detail) == (NOT_OBSERVED, VERIFY_ON_DEVICE)
    assert not any(code == "TL301" for code, _ in found)


# A verdict of `refuted` means the run proved the finding wrong: never a line that did not get
# the chance to show it, and never a pitfall that the instrumentation itself caused.

STOPS_BEFORE_THE_MIX = """
import sys
import torch
w = torch.randn(3, device="cuda")
for step in range(2):
    bias = torch.ones(3)
    if "--broken-loader" in sys.argv:
        raise OSError("cannot read batch 0")
    out = w + bias
"""


def test_a_mix_that_a_crash_kept_from_running_is_not_refuted(script):
    path = script(STOPS_BEFORE_THE_MIX)
    findings = [finding(path, "TL301", "torch.ones(3)")]
    stopped = run_script(str(path), ["--broken-loader"], findings, device="logical:cuda")
    assert stopped.exit_status != 0
    assert [(d.runtime, d.runtime_detail) for d in stopped.diagnostics] == [(NOT_OBSERVED, STOPPED_EARLY)]
    fixed = run_script(str(path), [], findings, device="logical:cuda")
    assert [d.runtime for d in fixed.diagnostics] == ["confirmed"]


def test_a_load_that_torch_refused_to_unpickle_is_confirmed(script):
    path = script("""
        import torch
        class Config:
            lr = 0.1
        torch.save({"w": torch.ones(2), "config": Config()}, "ckpt.pt")
        state = torch.load("ckpt.pt")
    """)
    report = run_script(str(path), [], [finding(path, "TL502", 'torch.load("ckpt.pt")')], device="cpu")
    assert "UnpicklingError" in report.exception
    [load] = report.diagnostics
    assert load.runtime == "confirmed" and "refused to unpickle" in load.runtime_detail


def test_a_softmax_module_never_called_is_not_observed(script):
    path = script("""
        import torch
        act = torch.nn.Softmax()
        print(act)
    """)
    report = run_script(str(path), [], [finding(path, "TL202", "torch.nn.Softmax()")], device="cpu")
    assert [(d.runtime, d.runtime_detail) for d in report.diagnostics] == [
        (NOT_OBSERVED, "the softmax module built here was never called in this run")]


def test_a_line_that_ran_is_no_confirmation_for_a_rule_without_a_runtime_test(script):
    path = script("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mask = torch.ones(3)
                self.layers = [torch.nn.Linear(3, 3)]
        net = Net()
    """)
    findings = [finding(path, "TL401", "self.mask = torch.ones(3)"),
                finding(path, "TL402", "self.layers = [torch.nn.Linear(3, 3)]")]
    report = run_script(str(path), [], findings, device="cpu")
    assert [d.runtime for d in report.diagnostics] == [NOT_CHECKED, NOT_CHECKED]


def test_adam_with_weight_decay_is_confirmed_when_it_steps(script):
    path = script("""
        import sys
        import torch
        w = torch.nn.Parameter(torch.ones(3))
        opt = torch.optim.Adam([w], lr=0.1, weight_decay=0.01)
        if "--train" in sys.argv:
            (w ** 2).sum().backward()
            opt.step()
    """)
    findings = [finding(path, "TL016", "torch.optim.Adam([w], lr=0.1, weight_decay=0.01)")]
    trained = run_script(str(path), ["--train"], findings, device="cpu")
    assert [(d.runtime, d.runtime_detail) for d in trained.diagnostics] == [
        ("confirmed", "Adam stepped with weight_decay=0.01 added to the gradient (L2, not decoupled)")]
    built = run_script(str(path), [], findings, device="cpu")
    assert [(d.runtime, d.runtime_detail) for d in built.diagnostics] == [
        (NOT_OBSERVED, "the optimizer built here never stepped in this run")]


def test_a_probes_own_sync_is_not_counted_as_the_users(script):
    path = script("""
        import torch
        import torch.nn.functional as F
        x = torch.randn(4, 3).cuda()
        for step in range(10):
            p = F.softmax(x, dim=-1).log()
    """)
    report = run_script(str(path), [], [finding(path, "TL201", "F.softmax(x, dim=-1).log()")], device="logical:cuda")
    assert [d.code for d in report.diagnostics] == ["TL201"]


def test_an_error_a_check_knows_is_read_off_the_uncaught_exception_on_the_cpu(script):
    """--device cpu watches Tensor methods only (no function mode): the stride error of a view
    after permute still confirms TL101, at the innermost line of the script that raised it."""
    path = script("""
        import torch

        def flatten(x):
            return x.view(x.shape[0], -1)

        y = flatten(torch.randn(2, 3, 4).permute(0, 2, 1))
    """)
    report = run_script(str(path), [], [], device="cpu")
    assert report.exit_status == 1
    assert [(d.code, d.runtime, d.location.row) for d in report.diagnostics] == [
        ("TL101", "confirmed", line_of(path, "x.view("))]


def test_an_epoch_schedule_is_confirmed_when_it_steps_with_every_batch(script):
    path = script("""
        import sys
        import torch
        w = torch.nn.Parameter(torch.ones(3))
        opt = torch.optim.SGD([w], lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=30)
        per_batch = "--per-batch" in sys.argv
        for epoch in range(2):
            for batch in range(4):
                opt.zero_grad()
                (w ** 2).sum().backward()
                opt.step()
                if per_batch or batch == 3:
                    sched.step()
    """)
    findings = [finding(path, "TL017", "sched.step()")]
    per_batch = run_script(str(path), ["--per-batch"], findings, device="cpu")
    assert [(d.runtime, d.runtime_detail) for d in per_batch.diagnostics] == [
        ("confirmed", "the schedule stepped 2 times in 2 optimizer steps: once per batch")]
    per_epoch = run_script(str(path), [], findings, device="cpu")
    assert [(d.runtime, d.runtime_detail) for d in per_epoch.diagnostics] == [
        ("refuted", "the schedule stepped 1 time in 4 optimizer steps: not once per batch")]


def test_evaluation_in_training_mode_is_confirmed_by_the_models_mode(script):
    path = script("""
        import sys
        import torch
        from torch import nn
        model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))
        if "--eval" in sys.argv:
            model.eval()
        with torch.no_grad():
            scores = model(torch.randn(8, 4))
        plain = nn.Linear(4, 2)
        with torch.no_grad():
            out = plain(torch.randn(8, 4))
    """)
    findings = [finding(path, "TL019", "model(torch.randn(8, 4))"), finding(path, "TL019", "plain(torch.randn(8, 4))")]
    training = run_script(str(path), [], findings, device="cpu")
    assert [(d.runtime, d.runtime_detail) for d in training.diagnostics] == [
        ("confirmed", "the model ran in training mode: 2 layers (BatchNorm1d, Dropout) acted as in training"),
        ("refuted", "the model has no Dropout or BatchNorm layers: its mode changes nothing")]
    evaluating = run_script(str(path), ["--eval"], findings, device="cpu")
    assert [d.runtime for d in evaluating.diagnostics] == ["refuted", "refuted"]
    assert evaluating.diagnostics[0].runtime_detail == "the model was in eval mode when this ran"


def test_an_optimizer_built_in_the_loop_is_confirmed_when_it_is_built_again(script):
    path = script("""
        import sys
        import torch
        w = torch.nn.Parameter(torch.ones(3))
        for step in range(int(sys.argv[1])):
            opt = torch.optim.Adam([w], lr=0.1)
            opt.zero_grad()
            (w ** 2).sum().backward()
            opt.step()
    """)
    findings = [finding(path, "TL021", "torch.optim.Adam([w], lr=0.1)")]
    twice = run_script(str(path), ["2"], findings, device="cpu")
    assert [(d.runtime, d.runtime_detail) for d in twice.diagnostics] == [
        ("confirmed", "`Adam` was built again on the next iteration: its state restarted")]
    once = run_script(str(path), ["1"], findings, device="cpu")
    assert [(d.runtime, d.runtime_detail) for d in once.diagnostics] == [
        (NOT_OBSERVED, "built once in this run: the loop ran one iteration")]


def test_logits_into_nll_loss_are_told_from_log_probabilities(script):
    path = script("""
        import torch
        import torch.nn.functional as F
        torch.manual_seed(0)
        logits = torch.randn(4, 3) * 3
        raw = F.nll_loss(logits, torch.tensor([0, 1, 2, 0]))
        normalised = F.nll_loss(F.log_softmax(logits, dim=1), torch.tensor([0, 1, 2, 0]))
    """)
    findings = [finding(path, "TL210", "F.nll_loss(logits, torch.tensor([0, 1, 2, 0]))"),
                finding(path, "TL210", "F.nll_loss(F.log_softmax(logits, dim=1), torch.tensor([0, 1, 2, 0]))")]
    report = run_script(str(path), [], findings, device="cpu")
    assert [d.runtime for d in report.diagnostics] == ["confirmed", "refuted"]
    assert report.diagnostics[0].runtime_detail.startswith("the input's rows are not log-probabilities: their exp sums to")
    assert report.diagnostics[1].runtime_detail == "the input's rows are log-probabilities: their exp sums to 1"
