"""Verdicts that mean what they say: syncs per loop iteration, device findings under --device
cpu, torch.load by torch version, runtime-only findings at the line that caused them."""

import pytest
from conftest import finding, line_of

from torchlint.runtime import run_script
from torchlint.runtime.checks import NOT_OBSERVED, VERIFY_ON_DEVICE

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
