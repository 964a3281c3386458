"""`--runtime --report run.html`: one self-contained HTML page of a run, checked as text and as
headless Chromium renders it."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import line_of

from torchlint.runtime import RuntimeReport
from torchlint.runtime.report import render_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTIONS = ("Gradient flow", "First non-finite value", "Parameters that never learned",
            "Host syncs per iteration", "Findings")

# Two trained layers and a frozen one; one `.item()` per step (a TL302 sync, counted on logical
# CUDA devices); `{poison}` may make the loss NaN at a chosen step.
TRAINING = """
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.frozen = nn.Linear(8, 16)
        self.frozen.requires_grad_(False)
        self.hidden = nn.Linear(16, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        return self.out(F.relu(self.hidden(self.frozen(x))))


model = MLP().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 8, device=device)
y = torch.randint(0, 4, (32,), device=device)
for step in range(5):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y){poison}
    loss.backward()
    optimizer.step()
    print(step, loss.item())
"""


def _run_with_report(directory, poison: str = ""):
    (directory / "train.py").write_text(TRAINING.format(poison=poison))
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--runtime", "--report", "run.html", "train.py"],
        cwd=directory, env=env, capture_output=True, text=True, timeout=120,
    )
    return result, directory / "run.html"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One run of the healthy script with --report, shared by the tests that read its page."""
    return _run_with_report(tmp_path_factory.mktemp("report"))


def _section(page: str, heading: str) -> str:
    return page.split(f"<h2>{heading}</h2>", 1)[1].split("</section>", 1)[0]


def test_the_report_shows_gradient_flow_frozen_layers_syncs_and_findings(report):
    result, path = report
    # The .item() per step is a confirmed TL302: a note, which does not fail the run.
    assert result.returncode == 0, result.stderr
    page = path.read_text()
    for heading in SECTIONS:
        assert f"<h2>{heading}</h2>" in page
    assert "python train.py" in page and "logical:cuda" in page
    # One series per trained layer, each a drawn line; the frozen layer is not among them.
    series = re.findall(r'<g class="series" data-layer="([^"]+)">.*?<path d="([^"]*)"', page)
    assert [layer for layer, _ in series] == ["hidden (Linear)", "out (Linear)"]
    assert all(path.count("L") == 4 for _, path in series)  # five steps
    never_learned = _section(page, "Parameters that never learned")
    assert "frozen.weight" in never_learned and "frozen.bias" in never_learned
    assert "hidden.weight" not in never_learned
    assert "None: every parameter and gradient stayed finite over 5 optimizer steps" in page
    row = line_of(path.parent / "train.py", "loss.item()")
    syncs = _section(page, "Host syncs per iteration")
    assert f"train.py:{row}</a>" in syncs and ".item()" in syncs and "in 5 of 5 iterations" in syncs
    findings = _section(page, "Findings")
    assert "TL302" in findings and "confirmed" in findings
    assert re.search(rf'href="file:///[^"]*/train\.py#L{row}"', findings)
    # Self-contained: nothing is fetched.
    assert not re.search(r"https?://|src=|<link|<script|@import|url\(", page)


def test_the_report_names_the_first_non_finite_value_and_its_step(tmp_path):
    poison = "\n    if step == 2:\n        loss = loss * float('nan')"
    result, path = _run_with_report(tmp_path, poison)
    assert result.returncode == 1, result.stderr
    first = _section(path.read_text(), "First non-finite value")
    assert "Step 3</span>" in first
    assert "<code>gradient of hidden.weight</code>" in first and "<code>gradient of out.bias</code>" in first
    assert "first NaN/Inf: step 3" in path.read_text()  # marked on the chart


def test_report_needs_runtime(tmp_path):
    (tmp_path / "train.py").write_text("print(1)\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run([sys.executable, "-m", "torchlint", "check", "--report", "run.html", "train.py"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--report need --runtime" in result.stderr
    assert not (tmp_path / "run.html").exists()


CHROMIUM = shutil.which("chromium")


def _chromium(*args, profile):
    # A profile of its own: no lock shared with another Chromium, nothing read from the user's.
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium (`chromium` on PATH) is not installed")
def test_chromium_renders_the_report(report, tmp_path):
    _, path = report
    screenshot = tmp_path / "report.png"
    shot = _chromium(f"--screenshot={screenshot}", "--window-size=1200,2000", path.as_uri(), profile=tmp_path / "p1")
    assert shot.returncode == 0, shot.stderr
    png = screenshot.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1200, 2000)

    dom = _chromium("--dump-dom", path.as_uri(), profile=tmp_path / "p2")
    assert dom.returncode == 0, dom.stderr
    for heading in SECTIONS:
        assert f"<h2>{heading}</h2>" in dom.stdout
    assert dom.stdout.count('<g class="series"') == 2 and "<svg" in dom.stdout


def test_the_page_escapes_names_and_draws_zero_and_non_finite_norms():
    flow = {"steps": [1, 2, 3], "layers": ["<b>bold</b> (Linear)", "dead (Linear)"],
            "norms": [[0.5, 0.0], [float("nan"), 0.0], [0.25, 0.0]]}
    optimizer = {"position": ["/x/train.py", 9, 9, 0, 5], "steps": 3, "no_gradient": ["dead.weight"],
                 "first_non_finite": {"step": 2, "what": ["gradient of <i>w</i>"]}, "gradient_flow": flow}
    run = {"script": "train.py", "module": None, "args": ["--lr", "<1>"], "exit_status": 0, "timed_out": False,
           "device": "auto", "resolved_device": "logical:cuda", "notes": [], "verdicts": {}}
    report = RuntimeReport(diagnostics=[], exit_status=0, exception=None, timed_out=False, device="logical:cuda",
                           steps=3, training={"optimizers": [optimizer], "frozen": []})
    page = render_report(run, report, [])
    assert "<b>" not in page and "<i>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page and "&lt;1&gt;" in page
    paths = re.findall(r'<path d="([^"]*)"', page)
    # The NaN step breaks the first layer's line in two; the dead layer lies on the zero row.
    assert paths[0].count("M") == 2 and "L" not in paths[0]
    assert ">0</text>" in page and paths[1].count("L") == 2
    assert "first NaN/Inf: step 2" in page and "dead.weight" in page
    assert "never waited for the device" in _section(page, "Host syncs per iteration")


def test_a_long_run_keeps_a_bounded_evenly_spaced_history():
    import torch

    from torchlint.runtime.health import HISTORY_STEPS, _NormHistory

    history = _NormHistory()
    for step in range(1000):
        history.add(step, torch.tensor([float(step)]))
    assert len(history.steps) <= HISTORY_STEPS and history.steps[0] == 0
    spacing = {b - a for a, b in zip(history.steps, history.steps[1:])}
    assert spacing == {history.stride} and history.steps[-1] >= 1000 - history.stride
    assert history.by_layer([0], 1) == [[float(step)] for step in history.steps]



def test_a_run_without_training_or_syncs_to_count_says_so():
    run = {"script": None, "module": "pytest", "args": ["-q"], "exit_status": 0, "timed_out": False,
           "device": "cpu", "resolved_device": "cpu", "notes": ["a note"], "verdicts": {}}
    report = RuntimeReport(diagnostics=[], exit_status=0, exception=None, timed_out=False, device="cpu")
    page = render_report(run, report, [])
    assert "python -m pytest -q" in page and "a note" in page and "<svg" not in page
    for heading in ("First non-finite value", "Parameters that never learned"):
        assert "No optimizer step was recorded." in _section(page, heading)
    assert "Not counted" in _section(page, "Host syncs per iteration")


def test_layers_are_modules_named_by_path_and_class():
    import torch

    from torchlint.runtime.health import _layer

    linear = torch.nn.Linear(2, 2)
    assert _layer("encoder.fc1.weight", (linear, ())) == "encoder.fc1 (Linear)"
    assert _layer("weight", (linear, ())) == "Linear"  # the model is the layer
    assert _layer("encoder.fc1.weight", None) == "encoder.fc1"
