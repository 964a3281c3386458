"""`--runtime --dry-run`: the script on meta tensors, for one optimizer step, writing nothing.

Each shape-bug program raises under plain python with real tensors; the dry run must report
that error at the line that raised it (or confirm the static finding it explains), and its
corrected look-alike must give no shape finding and stop after the first optimizer step.
"""

import os
import subprocess
import sys
import textwrap

import pytest
from conftest import finding, line_of

from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import all_rules
from torchlint.runtime import run_script
from torchlint.runtime.checks import NOT_CHECKED

PRELUDE = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

images = TensorDataset(torch.randn(16, 3, 28, 28), torch.randint(0, 10, (16,)))
loader = DataLoader(images, batch_size=4, shuffle=True, num_workers=2)
"""

# name: (the bug, the line that raises, its fix)
PROGRAMS = {
    "features": (
        """
        model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 28 * 28, 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        """,
        "model(x)", ("8 * 28 * 28", "8 * 26 * 26"),
    ),
    "channels": (
        """
        model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))
        optimizer = torch.optim.Adam(model.parameters())
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        """,
        "model(x)", ("nn.Conv2d(1, 4, 3)", "nn.Conv2d(3, 4, 3)"),
    ),
    "concat": (
        """
        head = nn.Linear(3 * 28 * 28 + 5, 10)
        optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
        extra = torch.zeros(3, 5)
        for x, y in loader:
            features = torch.cat([x.flatten(1), extra], dim=1)
            loss = F.cross_entropy(head(features), y)
            loss.backward()
            optimizer.step()
        """,
        "torch.cat([x.flatten(1), extra], dim=1)", ("torch.zeros(3, 5)", "torch.zeros(4, 5)"),
    ),
    "targets": (
        """
        model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 28 * 28, 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = F.cross_entropy(model(x), y[:-1])
            loss.backward()
            optimizer.step()
        """,
        "F.cross_entropy(model(x), y[:-1])", ("y[:-1]", "y"),
    ),
    "heads": (
        """
        attention = nn.Linear(3 * 28, 3 * 28)
        optimizer = torch.optim.SGD(attention.parameters(), lr=0.1)
        for x, y in loader:
            rows = x.view(4, 3 * 28, 28).transpose(1, 2)
            heads = attention(rows).reshape(4, 28, 5, -1)
            heads.sum().backward()
            optimizer.step()
        """,
        "attention(rows).reshape(4, 28, 5, -1)", ("(4, 28, 5, -1)", "(4, 28, 4, -1)"),
    ),
}


def _program(script, name: str, fixed: bool):
    body, _, (bug, fix) = PROGRAMS[name]
    source = PRELUDE + textwrap.dedent(body)
    return script(source.replace(bug, fix) if fixed else source, name=f"{name}.py")


def _static(path) -> list:
    return check_source(path.read_text(), str(path), Settings(rules=all_rules()))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_shape_bug_is_reported_where_it_raises(script, name):
    path = _program(script, name, fixed=False)
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert plain.returncode != 0 and "Error" in plain.stderr  # real tensors raise too

    report = run_script(str(path), [], [d for d in _static(path) if d.code in ("TL103", "TL104")], device="meta")
    raising = line_of(path, PROGRAMS[name][1])
    confirmed = [d for d in report.diagnostics if d.runtime == "confirmed"]
    assert confirmed, report.diagnostics
    places = {row for d in confirmed for row in (d.location.row, *(note.location.row for note in d.related))}
    assert raising in places


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_corrected_program_runs_one_step_with_no_shape_finding(script, name):
    path = _program(script, name, fixed=True)
    report = run_script(str(path), [], _static(path), device="meta")
    assert report.exit_status == 0, report.exception
    assert not [d for d in report.diagnostics if d.code in ("TL103", "TL104", "TL105") and d.runtime == "confirmed"]
    assert report.notes == ("the dry run stopped after the first optimizer step",)


def test_values_stop_the_run_with_the_line_that_asked(script):
    path = script("""
        import torch
        scores = torch.randn(8, 3)
        best = scores.argmax(1)
        print(f"first: {best[0].item()}")
        print("not reached")
    """)
    report = run_script(str(path), [], [], device="meta")
    assert report.exit_status == 0
    row = line_of(path, "best[0].item()")
    assert report.notes == (f"the dry run stopped at `.item()` (train.py:{row}): it needs values, which meta tensors do not have",)


def test_nothing_is_written_to_disk(script, tmp_path):
    path = script("""
        import os
        import torch
        model = torch.nn.Linear(4, 2)
        os.makedirs("runs", exist_ok=True)
        with open("runs/log.txt", "w") as log:
            log.write("start\\n")
        torch.save(model.state_dict(), "model.pt")
        with open("train.py") as own:
            assert own.read().startswith("import os")
    """)
    before = sorted(os.listdir(tmp_path))
    report = run_script(str(path), [], [], device="meta")
    assert report.exit_status == 0, report.exception
    assert sorted(os.listdir(tmp_path)) == before


def test_other_rules_are_not_checked_by_a_dry_run(script):
    path = script("""
        import torch
        x = torch.randn(4, 3).cuda()
        print(x.shape)
    """)
    report = run_script(str(path), [], [finding(path, "TL305", ".cuda()")], device="meta")
    assert report.exit_status == 0
    assert [(d.runtime, d.runtime_detail) for d in report.diagnostics] == [(NOT_CHECKED, "a dry run checks shapes only")]


def test_a_shape_error_names_the_layer_that_made_its_operand_and_the_one_that_failed(script):
    path = script(PRELUDE + textwrap.dedent("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 32, 3, padding=1)
                self.pool = nn.AdaptiveAvgPool2d(1)
                self.fc = nn.Linear(32, 10)

            def forward(self, x):
                return self.fc(self.pool(self.conv(x)))

        model = Net()
        for x, y in loader:
            F.cross_entropy(model(x), y).backward()
        """), name="pooled.py")
    report = run_script(str(path), [], [], device="meta")
    found = [d for d in report.diagnostics if d.code == "TL104"]
    assert [d.location.row for d in found] == [line_of(path, "return self.fc(")]
    assert [(note.location.row, note.message) for note in found[0].related] == [
        (line_of(path, "nn.AdaptiveAvgPool2d(1)"), "a layer built here made the operand of shape (4, 32, 1, 1)"),
        (line_of(path, "nn.Linear(32, 10)"), "the layer that failed, `Linear`, is built here"),
    ]


def test_a_shape_error_the_script_catches_is_reported_and_the_run_goes_on(script):
    path = script(textwrap.dedent("""
        import torch

        a, b = torch.randn(4, 3), torch.randn(5, 3)
        try:
            scores = a @ b
        except RuntimeError:
            scores = a @ b.t()
        joined = torch.cat([scores, b.t()], dim=1)
        """), name="caught.py")
    report = run_script(str(path), [], [], device="meta")
    assert sorted(d.location.row for d in report.diagnostics if d.code == "TL104") == [
        line_of(path, "scores = a @ b\n"), line_of(path, "torch.cat([scores, b.t()], dim=1)"),
    ]
