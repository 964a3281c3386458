"""Rules confirmed at the flagged expression itself (site probes), and not-reached sites."""

from conftest import finding, line_of

from torchlint.runtime import run_script


def test_legal_view_after_permute_is_refuted_illegal_one_confirmed(script):
    path = script("""
        import torch
        images = torch.randn(2, 5, 3, 3)
        tokens = images.permute(0, 2, 3, 1).view(2, -1, 5)  # merges adjacent dims: legal
        x = torch.randn(2, 3, 4)
        bad = x.permute(0, 2, 1).view(2, 12)
        print("never printed")
    """)
    findings = [
        finding(path, "TL101", "images.permute(0, 2, 3, 1).view(2, -1, 5)"),
        finding(path, "TL101", "x.permute(0, 2, 1).view(2, 12)"),
    ]
    report = run_script(str(path), [], findings, device="cpu")
    legal, illegal = report.diagnostics
    assert legal.runtime == "refuted" and "strides" in legal.runtime_detail
    assert illegal.runtime == "confirmed"
    assert report.exit_status == 1
    # The traceback is the script's, at the user's line, without torchlint's frames.
    assert f'train.py", line {line_of(path, "bad =")}' in report.exception
    assert "torchlint" not in report.exception
    assert "view size is not compatible" in report.exception


def test_branch_never_taken_is_not_reached(script):
    path = script("""
        import sys, torch
        x = torch.randn(2, 3)
        if len(sys.argv) > 5:
            y = torch.Tensor(2, 3)
        z = torch.Tensor(4)
    """)
    findings = [finding(path, "TL102", "torch.Tensor(2, 3)"), finding(path, "TL102", "torch.Tensor(4)")]
    report = run_script(str(path), [], findings, device="cpu")
    assert [d.runtime for d in report.diagnostics] == ["not-reached", "confirmed"]


def test_only_files_the_run_loaded_get_verdicts(script):
    sibling = script("import torch\nt = torch.Tensor(3)\n", name="sibling.py")
    helper = script("import torch\ndef never():\n    return torch.Tensor(3)\n", name="helper.py")
    path = script("import helper\nprint('hello')\n")
    findings = [finding(sibling, "TL102", "torch.Tensor(3)"), finding(helper, "TL102", "torch.Tensor(3)")]
    report = run_script(str(path), [], findings, device="cpu")
    # The sibling never ran: the run says nothing about it. The imported helper did.
    assert [(d.filename, d.runtime) for d in report.diagnostics] == [(str(helper), "not-reached")]


def test_legacy_constructor_with_ints_confirmed_with_data_refuted(script):
    path = script("""
        import torch
        a = torch.Tensor(2, 3)
        b = torch.Tensor([1.0, 2.0])
    """)
    findings = [finding(path, "TL102", "torch.Tensor(2, 3)"), finding(path, "TL102", "torch.Tensor([1.0, 2.0])")]
    report = run_script(str(path), [], findings, device="cpu")
    first, second = report.diagnostics
    assert first.runtime == "confirmed" and "(2, 3)" in first.runtime_detail
    assert second.runtime == "refuted"


def test_log_of_softmax_confirmed_only_when_minus_inf_appears(script):
    path = script("""
        import torch
        big = torch.tensor([[0.0, 200.0]])
        small = torch.tensor([[0.0, 1.0]])
        a = torch.softmax(big, dim=-1).log()
        b = torch.log(torch.softmax(small, dim=-1))
    """)
    findings = [
        finding(path, "TL201", "torch.softmax(big, dim=-1).log()"),
        finding(path, "TL201", "torch.log(torch.softmax(small, dim=-1))"),
    ]
    report = run_script(str(path), [], findings, device="cpu")
    # No underflow this time is not innocence: other data may underflow.
    assert [d.runtime for d in report.diagnostics] == ["confirmed", "not observed in this run"]
    assert "-inf" in report.diagnostics[0].runtime_detail
    assert "underflow" in report.diagnostics[1].runtime_detail


def test_a_hand_written_softmax_is_confirmed_where_its_probabilities_are_not_finite(script):
    path = script("""
        import torch
        big = torch.tensor([[1.0, 2.0, 100.0]])
        small = torch.tensor([[1.0, 2.0, 3.0]])
        a = torch.exp(big) / torch.exp(big).sum(dim=-1, keepdim=True)
        b = torch.exp(small) / torch.exp(small).sum(dim=-1, keepdim=True)
    """)
    findings = [
        finding(path, "TL209", "torch.exp(big) / torch.exp(big).sum(dim=-1, keepdim=True)"),
        finding(path, "TL209", "torch.exp(small) / torch.exp(small).sum(dim=-1, keepdim=True)"),
    ]
    report = run_script(str(path), [], findings, device="cpu")
    # A binary operation is probed through its value, not as a call.
    assert [d.runtime for d in report.diagnostics] == ["confirmed", "not observed in this run"]
    assert report.diagnostics[0].runtime_detail == "exp() overflowed: 1 of 3 probabilities are NaN or inf"


def test_a_uint8_mask_is_confirmed_by_what_torch_says_of_it(script):
    path = script("""
        import torch
        x = torch.arange(4.0)
        mask = torch.tensor([1, 0, 1, 0]).byte()
        kept = x[mask]
        flags = torch.tensor([True, False, True, False])
        also_kept = x[flags]
        filled = x.masked_fill(mask, 0.0)
    """)
    # `mask` in `x[mask]`, `flags` in `x[flags]`, `mask` in `masked_fill(mask, ...)` (after `masked`).
    findings = [finding(path, "TL106", "mask", 2), finding(path, "TL106", "flags", 2), finding(path, "TL106", "mask", 4)]
    report = run_script(str(path), [], findings, device="cpu")
    # The deprecation warning, then the error that ends the script. The bool mask warned of
    # nothing, but a script that stopped early refutes nothing.
    assert [d.runtime for d in report.diagnostics] == ["confirmed", "not observed in this run", "confirmed"]
    assert "uint8" in report.diagnostics[0].runtime_detail and "boolean" in report.diagnostics[2].runtime_detail


def test_softmax_without_dim_function_and_module(script):
    path = script("""
        import torch
        import torch.nn.functional as F
        class Head(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.act = torch.nn.Softmax()
            def forward(self, x):
                return self.act(x)
        x = torch.randn(2, 3, 4)
        p = F.softmax(x)
        q = F.softmax(x, dim=-1)
        h = Head()(x)
    """)
    findings = [
        finding(path, "TL202", "F.softmax(x)"),
        finding(path, "TL202", "F.softmax(x, dim=-1)"),
        finding(path, "TL202", "torch.nn.Softmax()"),
    ]
    report = run_script(str(path), [], findings, device="cpu")
    assert [d.runtime for d in report.diagnostics] == ["confirmed", "refuted", "confirmed"]


def test_discarded_to_on_tensor_confirmed_on_module_refuted(script):
    path = script("""
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = torch.nn.Linear(3, 3)
        x = torch.randn(2, 3)
        model.to(device)
        x.to(device)
        out = model(x)
    """)
    findings = [finding(path, "TL304", "model.to(device)"), finding(path, "TL304", "x.to(device)")]
    report = run_script(str(path), [], findings, device="logical:cuda")
    assert [d.runtime for d in report.diagnostics[:2]] == ["refuted", "confirmed"]
    # The discarded move also leaves x on the CPU: logical devices see the mix it causes, and
    # blame the line that left it behind.
    mixes = [d for d in report.diagnostics if d.code == "TL301"]
    assert [d.location.row for d in mixes] == [finding(path, "X", "x.to(device)").location.row]


def test_local_module_with_findings_is_probed(script):
    script("""
        import torch
        def make():
            return torch.Tensor(5)
        def unused():
            return torch.Tensor(6)
    """, name="helpers.py")
    path = script("""
        import helpers
        helpers.make()
    """)
    helpers = path.parent / "helpers.py"
    findings = [finding(helpers, "TL102", "torch.Tensor(5)"), finding(helpers, "TL102", "torch.Tensor(6)")]
    report = run_script(str(path), [], findings, device="cpu")
    assert [d.runtime for d in report.diagnostics] == ["confirmed", "not-reached"]
