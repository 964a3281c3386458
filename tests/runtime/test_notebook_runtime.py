"""`torchlint check --runtime nb.ipynb`: the code cells run in order in one namespace, IPython
commands skipped with a note each, verdicts by cell and row, a raising cell stops the run."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CELLS = [
    ["%matplotlib inline\n", "import torch\n", "import torch.nn.functional as F\n"],
    ["!echo hello\n", "files = !ls\n", "a = torch.Tensor(2, 3)\n", "print('files is', files)\n", "display(a.shape)"],
    ["%%time\n", "pred, target = torch.randn(8, 1), torch.randn(8)\n", "loss = F.mse_loss(pred, target)"],
    ["%%bash\n", "echo never\n"],
    ["if False:\n", "    b = torch.Tensor(5)\n", "raise ValueError('stop here')"],
    ["c = torch.Tensor(7)"],
]


def _run(tmp_path, *args):
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
             for source in CELLS]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    return subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--runtime", "--device", "cpu", *args, "nb.ipynb"],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, timeout=120,
    )


def test_cells_run_in_one_namespace_with_verdicts_by_cell(tmp_path):
    result = _run(tmp_path, "--output-format", "json")
    verdicts = [(d["code"], d["cell"], d["location"]["row"], d["location"]["column"], d["runtime"]["verdict"])
                for d in json.loads(result.stdout)]
    assert verdicts == [
        ("TL102", 2, 3, 5, "confirmed"),  # `torch` imported by cell 1: one namespace
        # The body of a `%%time` cell runs: torch's broadcast warning confirms TL104 there, and
        # TL601 (which reports that warning where no static finding does) adds nothing.
        ("TL104", 3, 3, 8, "confirmed"),
        ("TL102", 5, 2, 9, "not-reached"),
        ("TL102", 6, 1, 5, "not-reached"),  # after the cell that raised: never ran
    ]
    assert result.returncode == 1


def test_ipython_commands_are_skipped_with_a_note_and_a_raising_cell_stops_the_run(tmp_path):
    result = _run(tmp_path, "--output-format", "concise")
    notes = [line for line in result.stderr.splitlines() if line.startswith("torchlint: nb.ipynb: cell")]
    assert notes == [
        "torchlint: nb.ipynb: cell 1, row 1: skipped `%matplotlib inline`",
        "torchlint: nb.ipynb: cell 2, row 1: skipped `!echo hello`",
        "torchlint: nb.ipynb: cell 2, row 2: skipped `!ls`; None assigned instead",
        "torchlint: nb.ipynb: cell 3, row 1: `%%time` ignored, its body run as Python",
        "torchlint: nb.ipynb: cell 4, row 1: skipped the cell: `%%bash`",
        "torchlint: nb.ipynb: cell 5, row 3: raised; the cells after it did not run",
    ]
    assert "files is None" in result.stdout and "never" not in result.stdout
    assert "torch.Size([2, 3])" in result.stdout  # `display` needs no import, as in a kernel
    assert "ValueError: stop here" in result.stderr
    assert "nb.ipynb:cell 2:3:5: TL102 [confirmed]" in result.stdout
