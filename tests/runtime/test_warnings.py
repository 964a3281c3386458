"""Rules confirmed by PyTorch's own warnings, captured at the user's line."""

from conftest import finding, line_of

from torchlint.runtime import run_script


def test_deprecated_cuda_amp_and_use_reentrant(script):
    path = script("""
        import torch
        from torch.utils.checkpoint import checkpoint
        with torch.cpu.amp.autocast():
            pass
        layer = torch.nn.Linear(3, 3)
        x = torch.randn(2, 3, requires_grad=True)
        y = checkpoint(layer, x)
        z = checkpoint(layer, x, use_reentrant=False)
    """)
    findings = [
        finding(path, "TL501", "torch.cpu.amp.autocast()"),
        finding(path, "TL503", "checkpoint(layer, x)"),
        finding(path, "TL503", "checkpoint(layer, x, use_reentrant=False)"),
    ]
    report = run_script(str(path), [], findings, device="cpu")
    assert report.exit_status == 0, report.exception
    assert [d.runtime for d in report.diagnostics] == ["confirmed", "confirmed", "refuted"]


def test_scheduler_before_optimizer_step(script):
    path = script("""
        import torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
        for _ in range(2):
            opt.zero_grad()
            model(torch.randn(4, 2)).sum().backward()
            sched.step()
            opt.step()
    """)
    report = run_script(str(path), [], [finding(path, "TL011", "sched.step()")], device="cpu")
    assert report.diagnostics[0].runtime == "confirmed"


def test_loss_target_broadcast_is_a_runtime_only_finding(script, capfd):
    path = script("""
        import torch
        import torch.nn.functional as F
        # (8, 1) against (8,): shapes the code does not show, so only the run sees them.
        pred = torch.stack([torch.randn(1) for i in range(16) if i % 2])
        target = torch.randn(8)
        for _ in range(3):
            loss = F.mse_loss(pred, target)
        ok = F.mse_loss(pred, target.unsqueeze(1))
    """)
    report = run_script(str(path), [], [], device="cpu")
    [added] = report.diagnostics
    assert (added.code, added.runtime) == ("TL601", "confirmed")
    assert added.location.row == line_of(path, "loss = F.mse_loss(pred, target)")
    # The user still sees PyTorch's warning, blamed on their own line.
    assert f"train.py:{added.location.row}: UserWarning" in capfd.readouterr().err
