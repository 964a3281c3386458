"""TL001 / TL002: optimizer hooks and gradient versions decide (one run, one loop per case)."""

import pytest
from conftest import finding

from torchlint.runtime import run_script

CASES = {
    # name: (loop body, rule, flagged call, expected verdict)
    "no_zero_grad": ("loss.backward(); opt.step()", "TL001", "opt.step()", "confirmed"),
    "accumulation": ("loss.backward()\n    if i % 2 == 1:\n        opt.step(); opt.zero_grad()", "TL001", "opt.step()", "refuted"),
    "set_to_none_false": ("opt.zero_grad(set_to_none=False); loss.backward(); opt.step()", "TL001", "opt.step()", "refuted"),
    "model_zero_grad": ("model.zero_grad(); loss.backward(); opt.step()", "TL001", "opt.step()", "refuted"),
    "zero_between": ("loss.backward(); opt.zero_grad(); opt.step()", "TL002", "opt.zero_grad()", "confirmed"),
    "zero_before": ("opt.zero_grad(); loss.backward(); opt.step()", "TL002", "opt.zero_grad()", "refuted"),
}


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    parts = ["import torch\n"]
    for name, (body, *_rest) in CASES.items():
        parts.append(
            f"# case {name}\n"
            "model = torch.nn.Linear(4, 2)\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "x, y = torch.randn(8, 4), torch.randn(8, 2)\n"
            "for i in range(6):\n"
            "    loss = ((model(x) - y) ** 2).mean()\n"
            f"    {body}\n"
        )
    path = tmp_path_factory.mktemp("loops") / "train.py"
    path.write_text("".join(parts))
    source = path.read_text()
    findings = {}
    for name, (_body, code, call, _verdict) in CASES.items():
        occurrence = source[: source.index(f"# case {name}")].count(call) + 1
        findings[name] = finding(path, code, call, occurrence)
    report = run_script(str(path), [], list(findings.values()), device="cpu")
    assert report.exit_status == 0, report.exception
    return dict(zip(findings, report.diagnostics))


@pytest.mark.parametrize("name", CASES)
def test_verdict(judged, name):
    expected = CASES[name][3]
    assert judged[name].runtime == expected, judged[name].runtime_detail


def test_confirmation_says_what_was_seen(judged):
    assert "carried over" in judged["no_zero_grad"].runtime_detail
