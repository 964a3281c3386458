"""Runtime mode on whole scripts of different kinds: same behaviour as python, verdicts, overhead.

    python benchmarks/runtime_scripts.py [--examples DIR] [--devices cpu,auto] [--only NAMES] [--dry-run]
        [--repeat 2] [--report FILE]

Each script runs in a fresh copy of its folder under plain `python`, then under
`torchlint check --runtime` with each `--device`: best of 2 whole-process wall times in this run,
after one unmeasured run that warms the caches (files, torch.compile's kernels). A run must
behave exactly as under python: the same exit status, the same stdout (numbers masked, since
timings and unseeded losses differ from run to run; torchlint's report follows the script's
output) and the same files written. The report gives the overhead per device and every
finding's verdict.

Scripts of eight kinds are written here (RL, GAN, ViT with AMP, DataLoader workers with
pin_memory, torch.compile with fullgraph, a gloo two-rank DDP script, a notebook, and the 100k
small ops of runtime_overhead.py). `--examples` adds public ones from pytorch/examples (a
checkout, or the git directory of a `fetch` snapshot, extracted at run time): word_language_model
(an LSTM), dcgan on FakeData and mnist on generated MNIST files (DataLoader workers,
pin_memory), the last two where torchvision imports. `auto` is the real accelerator when
present, else logical CUDA.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.runtime_overhead import MICRO_SCRIPT, RL_SCRIPT  # noqa: E402

GAN = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
critic = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)).to(device)
opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(critic.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()


def ring(n):
    angle = torch.rand(n, 1) * 6.2832
    return torch.cat([angle.cos(), angle.sin()], 1) * 2 + 0.05 * torch.randn(n, 2)


for step in range(300):
    real = ring(128).to(device)
    fake = generator(torch.randn(128, 8, device=device))
    ones = torch.ones(128, 1, device=device)
    zeros = torch.zeros(128, 1, device=device)
    opt_d.zero_grad()
    loss_d = bce(critic(real), ones) + bce(critic(fake.detach()), zeros)
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g = bce(critic(fake), ones)
    loss_g.backward()
    opt_g.step()
    if step % 100 == 0:
        print(f"step {step} loss_d {loss_d.item():.3f} loss_g {loss_g.item():.3f}")
torch.save(generator.state_dict(), "generator.pt")
"""

VIT_AMP = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
amp_dtype = torch.float16 if device == "cuda" else torch.bfloat16
torch.manual_seed(0)


class ViT(nn.Module):
    def __init__(self, image=32, patch=4, dim=128, depth=4, heads=4, classes=10):
        super().__init__()
        self.patches = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.1, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, images):
        x = self.patches(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


model = ViT().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
scaler = torch.amp.GradScaler(device, enabled=device == "cuda")
images, labels = torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,))
for epoch in range(2):
    model.train()
    for i in range(0, 512, 64):
        x, y = images[i:i + 64].to(device), labels[i:i + 64].to(device)
        with torch.autocast(device, dtype=amp_dtype):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print(f"epoch {epoch} loss {loss.item():.3f}")
"""

LOADER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Noise(Dataset):
    def __len__(self):
        return 2048

    def __getitem__(self, index):
        x = torch.randn(3, 32, 32, generator=torch.Generator().manual_seed(index))
        return x, int(x.mean() > 0)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(Noise(), batch_size=64, shuffle=True, num_workers=2, pin_memory=True,
                        persistent_workers=True)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(16, 2)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(2):
        correct = 0
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (out.argmax(1) == y).sum().item()
        print(f"epoch {epoch} accuracy {correct / 2048:.3f}")
"""

COMPILE = """
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)).to(device)
compiled = torch.compile(model, fullgraph=True)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(1024, 64)
for step in range(200):
    x = data[(step * 32) % 1024:][:32].to(device)
    loss = (compiled(x) - x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(step, round(loss.item(), 4))
"""

GLOO = """
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


def worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(rank)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(100):
        x = torch.randn(32, 16)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        print(f"final loss {loss.item():.3f}")
        torch.save(model.module.state_dict(), "ddp.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(probe.getsockname()[1]))
    mp.spawn(worker, args=(2,), nprocs=2)
"""

NOTEBOOK_CELLS = [
    "import torch\nimport torch.nn as nn\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'",
    "torch.manual_seed(0)\nx = torch.linspace(-3, 3, 256).unsqueeze(1)\ny = torch.sin(x) + 0.1 * torch.randn_like(x)",
    "model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)\n"
    "opt = torch.optim.Adam(model.parameters(), lr=0.01)",
    "losses = []\nfor epoch in range(300):\n    pred = model(x.to(device))\n"
    "    loss = nn.functional.mse_loss(pred, y.to(device))\n    opt.zero_grad()\n"
    "    loss.backward()\n    opt.step()\n    losses.append(loss.item())\nprint(f'final loss {losses[-1]:.4f}')",
    "with torch.no_grad():\n    print(model(torch.zeros(1, 1, device=device)).item())",
]


def _notebook() -> str:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": source.splitlines(keepends=True)} for source in NOTEBOOK_CELLS]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@dataclass(eq=False)
class Script:
    name: str
    kind: str
    folder: str  # a folder of pytorch/examples to copy, or "" for a script written here
    main: str
    args: list[str] = field(default_factory=list)
    accel_args: list[str] = field(default_factory=list)  # with --device auto (and its baseline)
    cpu_args: list[str] = field(default_factory=list)  # with --device cpu (and its baseline)
    needs: tuple[str, ...] = ()
    source: str = ""
    prepare: object = None


def _fake_mnist(folder: Path) -> None:
    """MNIST's four files in its idx format, 1024 training and 512 test images of noise, so that
    torchvision finds them and downloads nothing."""
    import random

    raw = folder.parent / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    generator = random.Random(0)
    for prefix, count in (("train", 1024), ("t10k", 512)):
        pixels = bytes(generator.randrange(256) for _ in range(count * 28 * 28))
        labels = bytes(generator.randrange(10) for _ in range(count))
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(struct.pack(">iiii", 2051, count, 28, 28) + pixels)
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">ii", 2049, count) + labels)


def _small_corpus(folder: Path) -> None:
    """wikitext-2 cut to a few hundred kB per split, so that a run takes seconds. A snapshot
    lacks its train.txt: validation text stands in (the vocabulary is built from all three
    splits, so any text of their words serves)."""
    data = folder / "data" / "wikitext-2"
    valid = (data / "valid.txt").read_bytes()
    for split, text, size in (("train", valid, 300_000), ("valid", valid, 200_000),
                              ("test", (data / "test.txt").read_bytes(), 200_000)):
        (data / f"{split}.txt").write_bytes(text[:text.rindex(b"\n", 0, size) + 1])


SCRIPTS = [
    Script("rl", "RL: actor-critic, many tiny ops", "", "train.py", ["150", "64"], source=RL_SCRIPT),
    Script("gan", "GAN: two models, two optimizers", "", "train.py", source=GAN),
    Script("vit-amp", "ViT with AMP (autocast, GradScaler)", "", "train.py", source=VIT_AMP),
    Script("loader", "DataLoader workers, pin_memory", "", "train.py", source=LOADER),
    Script("compile", "torch.compile(fullgraph=True)", "", "train.py", source=COMPILE),
    Script("gloo", "gloo two-rank DDP (mp.spawn)", "", "train.py", source=GLOO),
    Script("notebook", "notebook", "", "train.ipynb", source=_notebook()),
    Script("small-ops", "100k small ops", "", "train.py", ["300", "64"], source=MICRO_SCRIPT),
    Script("word-lm", "RNN: pytorch/examples word_language_model", "word_language_model", "main.py",
           ["--dry-run", "--epochs", "1"], accel_args=["--accel"], prepare=_small_corpus),
    Script("dcgan", "GAN: pytorch/examples dcgan", "dcgan", "main.py",
           ["--dataset", "fake", "--niter", "1", "--workers", "2", "--manualSeed", "1"],
           accel_args=["--accel"], needs=("torchvision",)),
    Script("mnist", "CNN, DataLoader workers, pin_memory: pytorch/examples mnist", "mnist", "main.py",
           ["--epochs", "1"], cpu_args=["--no-accel"], needs=("torchvision",), prepare=_fake_mnist),
]


def _examples(source: str, destination: Path) -> Path:
    """A checkout of pytorch/examples as is, or the tree at HEAD of its git directory."""
    if (Path(source) / ".git").exists() or not (Path(source) / "HEAD").is_file():
        return Path(source)
    folders = sorted({script.folder for script in SCRIPTS if script.folder})
    git = ["git", "--git-dir", source]
    names = subprocess.run([*git, "ls-tree", "-r", "--name-only", "HEAD", *folders],
                           capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        # A snapshot may lack its largest files (wikitext-2's train.txt): `prepare` stands in.
        blob = subprocess.run([*git, "cat-file", "blob", f"HEAD:{name}"], capture_output=True)
        if blob.returncode == 0:
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            (destination / name).write_bytes(blob.stdout)
    return destination


def _workdir(script: Script, examples: Path | None, scratch: Path) -> Path:
    """A fresh copy of the script's folder (written files are compared per run)."""
    run_dir = Path(tempfile.mkdtemp(dir=scratch)) / (script.folder or script.name)
    if script.folder:
        shutil.copytree(examples / script.folder, run_dir)
    else:
        run_dir.mkdir()
        (run_dir / script.main).write_text(script.source)
    if script.prepare:
        script.prepare(run_dir)
    return run_dir


def _files(folder: Path) -> set[str]:
    return {str(path.relative_to(folder.parent)) for path in folder.parent.rglob("*")
            if "__pycache__" not in path.parts and ".torchlint_cache" not in path.parts}


@dataclass
class Run:
    seconds: float
    status: int
    stdout: str
    files: set[str]
    stderr: str = ""
    record: dict | None = None


def _run(script: Script, examples: Path | None, scratch: Path, device: str | None, accel: bool) -> Run:
    """One run under plain python (`device` None) or runtime mode; `accel`: with the script's
    arguments for an accelerator."""
    run_dir = _workdir(script, examples, scratch)
    before = _files(run_dir)
    args = [*script.args, *(script.accel_args if accel else script.cpu_args)]
    if device is None:
        command = [sys.executable, script.main, *args]
        if script.main.endswith(".ipynb"):
            command = [sys.executable, "-c", _RUN_NOTEBOOK, script.main]
    else:
        record = run_dir.parent / "record.json"
        placement = ["--dry-run"] if device == DRY_RUN else ["--device", device]
        command = [sys.executable, "-m", "torchlint", "check", "--no-cache", "--output-format", "concise",
                   "-q", "--runtime", *placement, "--run-record", str(record), script.main, "--", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=run_dir, capture_output=True, text=True, env=env, timeout=900)
    seconds = time.perf_counter() - start
    after = _files(run_dir) - before - {"record.json"}
    result = Run(seconds, done.returncode, done.stdout, after, done.stderr)
    if device is not None:
        result.record = json.loads(record.read_text()) if record.exists() else None
    shutil.rmtree(run_dir.parent)
    return result


# A notebook under plain python: its code cells in order in one namespace, as a kernel runs them.
_RUN_NOTEBOOK = """
import json, sys
namespace = {"__name__": "__main__"}
for cell in json.load(open(sys.argv[1]))["cells"]:
    if cell["cell_type"] == "code":
        exec(compile("".join(cell["source"]), sys.argv[1], "exec"), namespace)
"""


def _masked(text: str, logical: bool) -> str:
    """Numbers masked, and the padding that aligns them (`ms/batch  5.41` and `ms/batch 12.34`);
    under logical devices also device names, which the script sees as the accelerator by design
    (`Using device: cuda` where python printed cpu)."""
    if logical:
        text = re.sub(r"\b(cuda|mps|cpu)(:\d+)?\b", "DEVICE", text)
    return re.sub(r" +", " ", re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", text))


# The `device` of a run with `--dry-run` (every tensor on meta) instead of `--device`.
DRY_RUN = "dry-run"

FINDING = re.compile(r"^(?P<path>[^\n]+?):(?P<row>\d+):\d+: (?P<code>TL\d+) \[(?P<verdict>[^\]]+)\] "
                     r"(?P<message>[^\n]*)$", re.MULTILINE)


def _findings(stdout: str) -> tuple[str, list[re.Match]]:
    """The script's own output and torchlint's findings (concise, one a line), printed after it."""
    findings = list(FINDING.finditer(stdout))
    return (stdout[:findings[0].start()] if findings else stdout), findings


def _differences(plain: Run, instrumented: Run) -> list[str]:
    output, _ = _findings(instrumented.stdout)
    record = instrumented.record or {}
    status = record.get("exit_status", instrumented.status)
    logical = record.get("resolved_device", "").startswith("logical")
    differences = []
    if status != plain.status:
        differences.append(f"exit status {status} (python: {plain.status})")
    if _masked(output, logical) != _masked(plain.stdout, logical):
        differences.append("stdout differs")
    if instrumented.files != plain.files:
        differences.append(f"files {sorted(instrumented.files ^ plain.files)}")
    return differences


def _best(runs: list[Run]) -> Run:
    return min(runs, key=lambda run: run.seconds)


def measure(script: Script, examples: Path | None, scratch: Path, devices: list[str], repeat: int) -> dict:
    result = {}
    baselines = {}
    _run(script, examples, scratch, None, "cpu" not in devices)  # warm caches (files, compiled kernels)
    for device in devices:
        accel = device != "cpu"
        if accel not in baselines:
            baselines[accel] = _best([_run(script, examples, scratch, None, accel) for _ in range(repeat)])
        plain = baselines[accel]
        runs = [_run(script, examples, scratch, device, accel) for _ in range(repeat)]
        best = _best(runs)
        result[device] = {
            "plain": plain, "best": best, "ratio": best.seconds / plain.seconds,
            "differences": sorted({difference for run in runs for difference in _differences(plain, run)}),
        }
    return result


def _verdicts(run: Run) -> list[str]:
    _, findings = _findings(run.stdout)
    lines = []
    for finding in findings:
        observed = re.search(r"\(([^()]*(\([^()]*\))?[^()]*)\)$", finding["message"])
        place = f"{Path(finding['path']).name}:{finding['row']}"
        lines.append(f"{finding['code']} [{finding['verdict']}] {place}" + (f" ({observed[1]})" if observed else ""))
    return lines


def _row(script: Script, measured: dict, devices: list[str]) -> str:
    cells = [script.name, script.kind, f"{next(iter(measured.values()))['plain'].seconds:.1f}"]
    for device in devices:
        entry = measured[device]
        same = "yes" if not entry["differences"] else "NO: " + "; ".join(entry["differences"])
        cells += [f"{entry['ratio']:.2f}x", same]
    return "| " + " | ".join(cells) + " |"


def _details(script: Script, measured: dict) -> list[str]:
    lines = []
    for device, entry in measured.items():
        best = entry["best"]
        resolved = (best.record or {}).get("resolved_device", device)
        lines.append(f"{script.name}, --device {device} ({resolved}), torchlint exit {best.status}:")
        lines += [f"    {line}" for line in _verdicts(best) or ["no findings"]]
        if (best.record is None or entry["differences"]) and best.stderr.strip():
            lines.append(f"    {best.stderr.strip().splitlines()[-1]}")
    return lines


def report(results: dict, devices: list[str], skipped: dict[str, str]) -> str:
    header = ["script", "kind", "python s"]
    for device in devices:
        header += [f"{device} x", f"{device}: as python"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [_row(script, measured, devices) for script, measured in results.items()]
    lines += [f"| {name} | skipped: {why} |" for name, why in skipped.items()]
    for script, measured in results.items():
        lines += ["", *_details(script, measured)]
    return "\n".join(lines)


def dry_run(script: Script, examples: Path | None, scratch: Path) -> str:
    """One `--dry-run` of the script: its time, exit status, what it wrote, where it stopped."""
    run = _run(script, examples, scratch, DRY_RUN, False)
    notes = [line.removeprefix("torchlint: note: ") for line in run.stderr.splitlines() if line.startswith("torchlint: note:")]
    written = ", ".join(sorted(run.files)) or "nothing"
    return "\n".join([
        f"{script.name}: {run.seconds:.1f} s, torchlint exit {run.status}, wrote {written}; {'; '.join(notes) or 'ran to its end'}",
        *[f"    {line}" for line in _verdicts(run) or ["no findings"]],
    ])


def _missing(script: Script, examples: Path | None) -> str | None:
    if script.folder and examples is None:
        return "needs --examples (a git directory of pytorch/examples)"
    absent = [name for name in script.needs if importlib.util.find_spec(name) is None]
    return f"{', '.join(absent)} not installed" if absent else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", help="pytorch/examples: a checkout or a git directory (a fetch snapshot)")
    parser.add_argument("--devices", default="cpu,auto")
    parser.add_argument("--only", help="comma-separated script names")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--report", help="also write the report to this file")
    parser.add_argument("--dry-run", action="store_true",
                        help="instead: one `--runtime --dry-run` per script (time, exit, files written, where it stopped)")
    options = parser.parse_args()
    devices = options.devices.split(",")
    chosen = [s for s in SCRIPTS if not options.only or s.name in options.only.split(",")]
    results, skipped = {}, {}
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        examples = _examples(options.examples, scratch) if options.examples else None
        for script in chosen:
            why = _missing(script, examples)
            if why:
                skipped[script.name] = why
                continue
            if options.dry_run:
                print(dry_run(script, examples, scratch), flush=True)
                continue
            results[script] = measure(script, examples, scratch, devices, options.repeat)
            print(_row(script, results[script], devices), *_details(script, results[script]), sep="\n", flush=True)
    if options.dry_run:
        return
    text = report(results, devices, skipped)
    print(text)
    if options.report:
        Path(options.report).write_text(text + "\n")


if __name__ == "__main__":
    main()
