"""TL001 / TL002: optimizer hooks and gradient versions decide."""

from conftest import finding

from torchlint.runtime import run_script

LOOP = """
import torch
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 2)
for step in range(6):
    loss = ((model(x) - y) ** 2).mean()
{body}
"""


def _loop(script, body: str):
    return script(LOOP.format(body=body))


def test_missing_zero_grad_is_confirmed(script):
    path = _loop(script, "    loss.backward()\n    opt.step()\n")
    report = run_script(str(path), [], [finding(path, "TL001", "opt.step()")], device="cpu")
    [diagnostic] = report.diagnostics
    assert diagnostic.runtime == "confirmed"
    assert "carried over" in diagnostic.runtime_detail


def test_gradient_accumulation_is_refuted(script):
    body = "    loss.backward()\n    if step % 2 == 1:\n        opt.step()\n        opt.zero_grad()\n"
    path = _loop(script, body)
    report = run_script(str(path), [], [finding(path, "TL001", "opt.step()")], device="cpu")
    assert report.diagnostics[0].runtime == "refuted"


def test_zero_grad_set_to_none_false_is_refuted(script):
    body = "    opt.zero_grad(set_to_none=False)\n    loss.backward()\n    opt.step()\n"
    path = _loop(script, body)
    report = run_script(str(path), [], [finding(path, "TL001", "opt.step()")], device="cpu")
    assert report.diagnostics[0].runtime == "refuted"


def test_model_zero_grad_is_refuted(script):
    body = "    model.zero_grad()\n    loss.backward()\n    opt.step()\n"
    path = _loop(script, body)
    report = run_script(str(path), [], [finding(path, "TL001", "opt.step()")], device="cpu")
    assert report.diagnostics[0].runtime == "refuted"


def test_zero_grad_between_backward_and_step_is_confirmed(script):
    body = "    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"
    path = _loop(script, body)
    report = run_script(str(path), [], [finding(path, "TL002", "opt.zero_grad()")], device="cpu")
    assert report.diagnostics[0].runtime == "confirmed"


def test_zero_grad_before_backward_is_refuted(script):
    body = "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
    path = _loop(script, body)
    report = run_script(str(path), [], [finding(path, "TL002", "opt.zero_grad()")], device="cpu")
    assert report.diagnostics[0].runtime == "refuted"
