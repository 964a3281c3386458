"""Runtime-mode overhead: small training scripts, plain vs under `run_script`.

    python benchmarks/runtime_overhead.py [--steps 300] [--width 64]

Three scripts: an MLP classifier (few ops, each of some size), an RL-style actor-critic loop
(many tiny ops per step: per-op instrumentation cost dominates there) and 100k tiny ops alone,
also under an empty TorchFunctionMode (`empty mode`: the floor of any function-mode
instrumentation). Prints wall times and
ratios measured in this run: plain `python script`, `device="cpu"` (no tagging), the real
accelerator when present, and logical devices (`logical:cuda`). Each script reports the time of
its training loop, so interpreter and torch start-up (paid once by both) is shown separately
from the per-step cost. Goal: <= 1.5x on every kind.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SCRIPT = """
import sys, time, torch
import torch.nn as nn
import torch.nn.functional as F
steps, width = int(sys.argv[1]), int(sys.argv[2])
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                      nn.Linear(width, 10)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.randn(512, 32)
labels = torch.randint(0, 10, (512,))
start = time.perf_counter()
for step in range(steps):
    i = (step * 64) % 512
    x, y = data[i:i + 64].to(device), labels[i:i + 64].to(device)
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if step % 100 == 0:
        last = loss.item()
print(f"LOOP {time.perf_counter() - start:.4f}")
"""


# A TD actor-critic on a made-up 4-state environment: dozens of ops on tensors of a few numbers
# each step, as in RL code, plus the `.item()` an environment step needs.
RL_SCRIPT = """
import sys, time, torch
import torch.nn as nn
steps, width = int(sys.argv[1]), int(sys.argv[2])
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(4, width), nn.Tanh(), nn.Linear(width, 2)).to(device)
critic = nn.Sequential(nn.Linear(4, width), nn.Tanh(), nn.Linear(width, 1)).to(device)
opt = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=1e-3)
state = torch.zeros(4, device=device)
start = time.perf_counter()
for step in range(steps * 4):
    logits = actor(state)
    dist = torch.distributions.Categorical(logits=logits)
    action = dist.sample()
    next_state = torch.tanh(state + (action.float() - 0.5) * 0.1 + torch.randn(4, device=device) * 0.01)
    reward = -next_state.pow(2).sum()
    target = reward + 0.99 * critic(next_state).detach()
    advantage = target - critic(state)
    loss = -(dist.log_prob(action) * advantage.detach()).sum() + advantage.pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    state = next_state.detach() if action.item() >= 0 else state
print(f"LOOP {time.perf_counter() - start:.4f}")
"""

# The per-op cost alone: 100k elementwise ops on 4-element tensors (`steps` x 333 of them). With
# `floor` it runs inside an empty TorchFunctionMode: what any function-mode instrumentation
# costs before doing anything.
MICRO_SCRIPT = """
import sys, time, torch
from torch.overrides import TorchFunctionMode
steps = int(sys.argv[1])
x, w = torch.randn(4), torch.randn(4)


class Empty(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def loop():
    start = time.perf_counter()
    for _ in range(steps * 333 // 3):
        y = x * w + 1.0
        y = y.relu()
    return time.perf_counter() - start


if sys.argv[3:] == ["floor"]:
    with Empty():
        print(f"LOOP {loop():.4f}")
else:
    print(f"LOOP {loop():.4f}")
"""
SCRIPTS = {"MLP": SCRIPT, "RL": RL_SCRIPT, "100k small ops": MICRO_SCRIPT}


def _loop_time(output: str) -> float:
    for line in output.splitlines():
        if line.startswith("LOOP "):
            return float(line.split()[1])
    raise RuntimeError(f"no timing in output:\n{output}")


def plain(path: str, args: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, path, *args], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, _loop_time(out.stdout)


def instrumented(path: str, args: list[str], device: str) -> tuple[float, float]:
    from torchlint.runtime import run_script

    read, write = os.pipe()
    saved = os.dup(1)
    os.dup2(write, 1)  # the child inherits stdout: capture its LOOP line
    try:
        start = time.perf_counter()
        report = run_script(path, args, [], device=device)
        total = time.perf_counter() - start
    finally:
        os.dup2(saved, 1)
        os.close(write)
    output = os.read(read, 1 << 20).decode()
    os.close(read)
    if report.exit_status != 0:
        raise RuntimeError(report.exception)
    return total, _loop_time(output)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--width", type=int, default=64)
    options = parser.parse_args()
    args = [str(options.steps), str(options.width)]
    import importlib.util

    from torchlint.runtime import _probe_devices

    modes = ["cpu", "logical:cuda"]
    present = _probe_devices()
    if present["cuda"]:
        modes.insert(1, "cuda")
    print(f"torch spec {importlib.util.find_spec('torch').origin}")
    with tempfile.TemporaryDirectory() as workdir:
        for name, source in SCRIPTS.items():
            path = os.path.join(workdir, f"train_{name.lower()}.py")
            with open(path, "w") as handle:
                handle.write(source)
            plain(path, args)  # warm the file cache
            base_total, base_loop = plain(path, args)
            print(f"{name}, width {options.width}, {options.steps} steps")
            print(f"{'mode':<14}{'total s':>10}{'loop s':>10}{'total x':>10}{'loop x':>10}")
            print(f"{'plain':<14}{base_total:>10.2f}{base_loop:>10.3f}{1:>10.2f}{1:>10.2f}")
            if source is MICRO_SCRIPT:
                total, loop = plain(path, [*args, "floor"])
                print(f"{'empty mode':<14}{total:>10.2f}{loop:>10.3f}{total / base_total:>10.2f}{loop / base_loop:>10.2f}")
            for mode in modes:
                total, loop = instrumented(path, args, mode)
                print(f"{mode:<14}{total:>10.2f}{loop:>10.3f}{total / base_total:>10.2f}{loop / base_loop:>10.2f}")


if __name__ == "__main__":
    main()
