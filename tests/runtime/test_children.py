"""Scripts that run under `python` run under `--runtime` too: DataLoader workers with pinned
memory, torch.multiprocessing children, torch.compile, and a timeout that stops them all."""

import os
import subprocess
import sys

import pytest
from conftest import finding, line_of

from torchlint.runtime import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_dataloader_workers_with_pinned_memory_on_logical_cuda(script):
    path = script("""
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Pairs(Dataset):
            def __len__(self):
                return 16

            def __getitem__(self, index):
                scratch = torch.Tensor(4)
                return torch.randn(4), index % 2

        if __name__ == "__main__":
            device = "cuda" if torch.cuda.is_available() else "cpu"
            model = torch.nn.Linear(4, 2).to(device)
            loader = DataLoader(Pairs(), batch_size=4, num_workers=2, pin_memory=True)
            for x, y in loader:
                out = model(x.to(device, non_blocking=True))
            print("done on", out.device)
    """)
    report = run_script(str(path), [], [finding(path, "TL102", "torch.Tensor(4)")], device="logical:cuda")
    assert report.exit_status == 0, report.exception
    # The site ran in the worker processes only: their observations reached the parent.
    assert [(d.code, d.runtime) for d in report.diagnostics] == [("TL102", "confirmed")]


def test_spawned_children_are_instrumented_and_see_the_logical_device(script, capfd):
    path = script("""
        import torch
        import torch.multiprocessing as mp

        def worker(rank):
            scratch = torch.Tensor(2)
            x = torch.ones(2, device="cuda")
            print("child", rank, x.device, flush=True)

        if __name__ == "__main__":
            mp.spawn(worker, nprocs=1)
    """)
    report = run_script(str(path), [], [finding(path, "TL102", "torch.Tensor(2)")], device="logical:cuda")
    out, _ = capfd.readouterr()
    assert report.exit_status == 0, report.exception
    assert "child 0 cuda:0" in out
    assert [(d.code, d.runtime) for d in report.diagnostics] == [("TL102", "confirmed")]


def test_torch_compile_runs_eagerly_under_logical_devices_and_says_so(script):
    path = script("""
        import torch
        model = torch.compile(torch.nn.Linear(4, 2).cuda())
        x = torch.randn(3, 4)
        print(model(x).sum())
    """)
    report = run_script(str(path), [], [], device="logical:cuda")
    assert report.exit_status == 0, report.exception
    from torchlint.runtime.instrument import COMPILE_NOTE  # imports torch: the test is skipped without it

    assert report.notes == (COMPILE_NOTE,)
    # Checked although compiled: the input left on the CPU is a mixed-device finding.
    assert [(d.code, d.location.row) for d in report.diagnostics] == [("TL301", line_of(path, "torch.randn(3, 4)"))]


def test_timeout_stops_the_workers_too(script, tmp_path):
    path = script("""
        import os, time, torch
        from torch.utils.data import DataLoader, Dataset

        class Slow(Dataset):
            def __len__(self):
                return 1000

            def __getitem__(self, index):
                with open(f"worker.{os.getpid()}", "w"):
                    pass
                time.sleep(0.2)
                return torch.zeros(1)

        if __name__ == "__main__":
            for batch in DataLoader(Slow(), num_workers=2, persistent_workers=True):
                pass
    """)
    report = run_script(str(path), [], [], device="cpu", timeout=8)
    assert report.timed_out
    workers = [int(name.split(".")[1]) for name in os.listdir(tmp_path) if name.startswith("worker.")]
    assert workers and not any(_alive(pid) for pid in workers)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as handle:
            return "\nState:\tZ" not in handle.read()
    except FileNotFoundError:
        return False


COMPILED_FULL_GRAPH = """
import torch
import torch._dynamo

model = torch.compile(torch.nn.Linear(4, 2), fullgraph=True, backend="eager")
print(model(torch.randn(3, 4)).shape)
scaled = torch.compile(lambda x: x.half().float().to(torch.float64) * 2, fullgraph=True, backend="eager")
print(scaled(torch.ones(2)).dtype)
partial = torch.compile(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), backend="eager")
for _ in range(3):
    partial(torch.randn(2, 4))
print("graph breaks", sum(torch._dynamo.utils.counters["graph_break"].values()))
"""


def test_torch_compile_with_fullgraph_runs_as_under_python_on_the_cpu(script, capfd):
    # torchlint's module hooks and Tensor methods are invisible to Dynamo: no Unsupported error,
    # no graph break.
    path = script(COMPILED_FULL_GRAPH)
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and "graph breaks 0" in plain.stdout, plain.stderr
    report = run_script(str(path), [], [], device="cpu")
    assert report.exit_status == 0, report.exception
    assert "graph breaks 0" in capfd.readouterr().out


COMPILED_FLAGGED = """
import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F

critic = nn.Linear(4, 1)


@torch.compile(fullgraph=True, backend="eager")
def step(returns, states):
    weights = F.softmax(states)
    advantage = returns - critic(states)
    return advantage, weights


print([tuple(t.shape) for t in step(torch.randn(16), torch.randn(16, 4))])
print("graph breaks", sum(torch._dynamo.utils.counters["graph_break"].values()))
"""


def test_flagged_code_inside_a_compiled_function_runs_as_under_python(script, capfd):
    """The probes of findings inside a `torch.compile(fullgraph=True)` function (a call, an
    operation) are invisible to Dynamo: the script runs, with no graph break, as under python."""
    from torchlint.config import Settings
    from torchlint.engine import check_source
    from torchlint.rules import get_rule

    path = script(COMPILED_FLAGGED)
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and "graph breaks 0" in plain.stdout, plain.stderr
    findings = check_source(path.read_text(), str(path), Settings(rules=(get_rule("TL104"), get_rule("TL202"))))
    assert sorted(d.code for d in findings) == ["TL104", "TL202"]
    report = run_script(str(path), [], findings, device="cpu")
    assert report.exit_status == 0, report.exception
    assert capfd.readouterr().out.splitlines()[-2:] == plain.stdout.splitlines()


def test_torch_compile_with_fullgraph_runs_eagerly_under_logical_devices(script):
    path = script(COMPILED_FULL_GRAPH)
    report = run_script(str(path), [], [], device="logical:cuda")
    assert report.exit_status == 0, report.exception
    from torchlint.runtime.instrument import COMPILE_NOTE  # imports torch: the test is skipped without it

    assert report.notes == (COMPILE_NOTE,)


START_METHOD_SCRIPT = """
import sys
import torch
import torch.multiprocessing as mp


def work(rank, out):
    out.put(torch.ones(2).sum().item() + rank)


if __name__ == "__main__":
    context = mp.get_context(sys.argv[1])
    results = context.Queue()
    workers = [context.Process(target=work, args=(rank, results)) for rank in range(2)]
    for worker in workers:
        worker.start()
    print(sorted(results.get() for _ in workers))
    for worker in workers:
        worker.join()
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_every_start_method_ends_as_under_python(script, tmp_path, method):
    # The helpers a start method leaves running (the resource tracker, the fork server) end after
    # the script: torchlint waits for them, and none of them writes after the run is over.
    path = script(START_METHOD_SCRIPT)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=ROOT, TMPDIR=str(scratch))
    for _ in range(2):
        result = subprocess.run([sys.executable, "-m", "torchlint", "check", "--runtime", "--device", "cpu",
                                 str(path), "--", method], cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr
        assert "[2.0, 3.0]" in result.stdout
        assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr
    assert list(scratch.iterdir()) == []
