"""Project-wide knowledge: what the other files of a project define (torchlint/project/)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from torchlint import engine
from torchlint.config import Options, resolve_settings
from torchlint.project.index import ProjectView
from torchlint.project.layout import Layout
from torchlint.project.summary import summarize, summarize_lazily

MODEL = """\
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        return x
"""
UTILS = """\
import torch
from torch import optim


def causal_mask(n):
    mask = torch.triu(torch.ones(n, n), diagonal=1)
    return mask.bool()


def make_opt(model):
    return optim.AdamW(model.parameters(), lr=1e-3)
"""
ENGINE = """\
def train_step(model, batch, opt):
    loss = model(batch).sum()
    loss.backward()
    opt.step()
"""
TRAIN = """\
import torch
from pkg.model import Net
from pkg.utils import causal_mask, make_opt
from pkg.engine import train_step

m = Net().to("cuda")
o = make_opt(m)
x = torch.randn(4, 4, device="cuda")
y = x + causal_mask(4)
m.forward(x)
for batch in range(10):
    train_step(m, batch, o)
for batch in range(10):
    loss = m(batch).sum()
    loss.backward()
    o.step()
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _findings(project: Path, names: list[str], jobs: int = 1, use_cache: bool = False) -> list[tuple[str, str, int]]:
    settings = resolve_settings(Options(), cwd=project)
    found = engine.check_files([(str(project / name), name) for name in names], settings, jobs, use_cache=use_cache)
    return [(d.filename, d.code, d.location.row) for d in found]


def _package(project: Path, train: str = TRAIN) -> None:
    _write(project, {"pkg/__init__.py": "", "pkg/model.py": MODEL, "pkg/utils.py": UTILS,
                     "pkg/engine.py": ENGINE, "train.py": train})


def test_imported_names_are_known_through_the_other_files(project):
    _package(project)
    assert _findings(project, ["train.py"]) == [
        ("train.py", "TL301", 9),  # causal_mask(4): a CPU tensor made in pkg/utils.py
        ("train.py", "TL005", 10),  # m is a Net, a Module of pkg/model.py
        ("train.py", "TL001", 12),  # train_step calls backward() and step(), nothing clears
        ("train.py", "TL001", 16),  # o is an optimizer: make_opt returns optim.AdamW
    ]


def test_without_the_other_files_the_names_stay_unknown(project):
    _write(project, {"train.py": TRAIN})
    assert _findings(project, ["train.py"]) == []


def test_relative_imports_and_reexports_in_a_package(project):
    _write(project, {
        "pkg/__init__.py": "from .nets import Net\n",
        "pkg/nets/__init__.py": "from .base import *\nfrom .net import Net\n",
        "pkg/nets/base.py": "from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n",
        "pkg/nets/net.py": "from .base import Base\n\n\nclass Net(Base):\n    pass\n",
        "pkg/run.py": "import torch\nfrom . import Net\n\nm = Net()\nm.forward(torch.ones(1))\n",
    })
    assert _findings(project, ["pkg/run.py"]) == [("pkg/run.py", "TL005", 5)]


def test_a_circular_import_is_cut(project):
    _write(project, {
        "a.py": "from b import B, helper\n\n\nclass A(B):\n    pass\n\n\ndef make():\n    return helper()\n",
        "b.py": "from a import A, make\n\n\nclass B(A):\n    pass\n\n\ndef helper():\n    return make()\n",
        "run.py": "import torch\nfrom a import A, make\n\nm = A()\nm.forward(torch.ones(2))\nn = make()\nn.forward(1)\n",
    })
    view = ProjectView(str(project / "run.py"), str(project))
    assert view.lookup("a.A").kind == "class" and view.lookup("a.make").kind == "function"
    assert _findings(project, ["run.py"]) == []


def test_a_src_layout_and_a_namespace_package(project):
    _write(project, {
        "src/lib/models/net.py": MODEL,  # lib and lib/models have no __init__.py
        "scripts/train.py": "import torch\nfrom lib.models.net import Net\n\nm = Net()\nm.forward(torch.ones(2))\n",
    })
    assert _findings(project, ["scripts/train.py"]) == [("scripts/train.py", "TL005", 5)]


def test_files_outside_the_project_are_never_read(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(MODEL)
    _write(tmp_path / "proj", {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/run.py": "from ...outside import Net\n"})
    view = ProjectView(str(tmp_path / "proj" / "pkg" / "run.py"), str(tmp_path / "proj"))
    assert view.lookup("...outside.Net") is None and view.lookup("..outside.Net") is None
    assert all(path.startswith(str(tmp_path / "proj")) for path in view.dependencies())


def test_a_changed_helper_rechecks_its_importers_and_no_others(project, monkeypatch, tmp_path):
    _package(project)
    _write(project, {"other.py": "import torch\nx = torch.Tensor([3])\n"})
    names = ["other.py", "train.py"]
    first = _findings(project, names, use_cache=True)
    checked = tmp_path / "checked.txt"
    real_check_source = engine.check_source

    def recording(source, filename, *args, **kwargs):
        with open(checked, "a") as stream:  # workers may be other processes
            stream.write(filename + "\n")
        return real_check_source(source, filename, *args, **kwargs)

    monkeypatch.setattr(engine, "check_source", recording)
    assert _findings(project, names, use_cache=True) == first and not checked.exists()
    (project / "pkg" / "utils.py").write_text(UTILS.replace("torch.ones(n, n)", "torch.ones(n, n, device='cuda')"))
    second = _findings(project, names, use_cache=True)
    assert checked.read_text().split() == ["train.py"]
    assert ("train.py", "TL301", 9) in first and ("train.py", "TL301", 9) not in second


def test_output_is_the_same_for_any_jobs_and_with_the_cache(project):
    _package(project)
    names = ["pkg/engine.py", "pkg/model.py", "pkg/utils.py", "train.py"]
    alone = _findings(project, names, jobs=1)
    assert _findings(project, names, jobs=2) == alone
    assert _findings(project, names, jobs=2, use_cache=True) == alone
    assert _findings(project, names, jobs=1, use_cache=True) == alone


def test_summaries_are_plain_picklable_data():
    summary = summarize(UTILS + ENGINE)
    assert pickle.loads(pickle.dumps(summary)) == summary
    assert summary.functions["causal_mask"].returns[0].kind == "tensor"
    assert summary.functions["make_opt"].returns[0].kind == "optimizer"
    assert [event for event, _, _, _ in summary.functions["train_step"].events if event != "call"] == [
        "backward", "optimizer step"]
    assert summarize("def broken(:\n") is None


def test_findings_resting_on_other_files_name_the_places(project):
    _package(project)
    settings = resolve_settings(Options(select=["TL001", "TL301"]), cwd=project)
    found = engine.check_files([(str(project / "train.py"), "train.py")], settings, 1)
    notes = {d.code: [(r.filename, r.location.row, r.message) for r in d.related] for d in found if d.related}
    assert notes == {
        "TL301": [("pkg/utils.py", 6, "created on the default device (CPU) here (`torch.ones` without `device=`)"),
                  ("pkg/utils.py", 5, "returned by `causal_mask`"), ("train.py", 9, "meets `x` here")],
        "TL001": [("pkg/engine.py", 3, "`train_step` calls `backward()` here"),
                  ("pkg/engine.py", 4, "`train_step` steps the optimizer here")],
    }


TRICKY = '''\
"""Module docstring
from fake import Net
"""
import torch
try:
    from torch import optim
except ImportError:  # pragma: no cover
    optim = None
BLOCK = 256


@torch.no_grad()
def mask(n):
    m = torch.ones(n, n)
    return m.tril()


def documented():
    """A docstring whose lines
start in column 0, so the function cannot be parsed alone."""
    return optim.SGD([], lr=0.1)


if torch.cuda.is_available():
    class Net(torch.nn.Module):
        def forward(self, x):
            return x
'''


def test_lazy_summaries_read_what_whole_ones_do():
    whole, lazy = summarize(TRICKY), summarize_lazily(TRICKY.encode())
    assert lazy.imports == whole.imports == {"torch": "torch", "optim": "torch.optim"}
    assert lazy.constants == whole.constants == {"BLOCK": 256}
    for kind in ("classes", "functions"):
        table = getattr(whole, kind)
        assert {name: getattr(lazy, kind)[name] for name in table} == table
    assert whole.functions["mask"].returns[0].row == 14  # the factory's row in the file
    assert whole.functions["documented"].returns[0].kind == "optimizer"


TRAINERS = """\
import torch
from torch import nn


class Base:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(self, batch):
        loss = self.model(batch).sum()
        self._apply(loss)
        return loss.detach()

    def _apply(self, loss):
        loss.backward()
        self.optimizer.step()


class Trainer(Base):
    pass


class Careful(Base):
    def train_step(self, batch):
        self.optimizer.zero_grad()
        return super().train_step(batch)


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Linear(width, width)
        self.register_buffer("scale", torch.ones(width))

    def forward(self, x, mask=None):
        return self.body(x) * self.scale

    def solver(self):
        return torch.optim.AdamW(self.parameters())
"""
METHOD_CALLS = """\
from pkg.trainers import Careful, Net, Trainer

net = Net(4)
trainer = Trainer(net)
for batch in range(10):
    trainer.train_step(batch)
careful = Careful(net)
for batch in range(10):
    careful.train_step(batch)
tool = net.solver()
for batch in range(10):
    net(batch).sum().backward()
    tool.step()
"""


def test_methods_of_classes_of_other_files_are_known(project):
    _write(project, {"pkg/__init__.py": "", "pkg/trainers.py": TRAINERS, "train.py": METHOD_CALLS})
    settings = resolve_settings(Options(select=["TL001"]), cwd=project)
    found = engine.check_files([(str(project / "train.py"), "train.py")], settings, 1)
    assert [(d.location.row, [(r.filename, r.location.row) for r in d.related]) for d in found] == [
        # Trainer inherits train_step, which steps through another method: nothing clears.
        (6, [("pkg/trainers.py", 16), ("pkg/trainers.py", 17)]),
        # `tool` is an optimizer: Net.solver returns AdamW. (Careful clears: no finding at row 9.)
        (13, []),
    ]


def test_class_summaries_hold_methods_buffers_and_attributes():
    for summary in (summarize(TRAINERS), summarize_lazily(TRAINERS.encode())):
        net = summary.classes["Net"]
        assert net.defines_forward and net.methods["forward"].params == ("self", "x", "mask")
        assert net.buffers == ("scale",)
        assert net.attributes == {"body": "torch.nn.Linear"}
        assert net.methods["solver"].returns[0].kind == "optimizer"
        assert summary.classes["Base"].attributes == {"optimizer": "torch.optim.SGD"}
        assert summary.classes["Trainer"].methods == {}


EVALUATION = """\
import torch


@torch.no_grad()
def evaluate(net, loader):
    net.eval()
    return [net(x) for x in loader]


def evaluate_and_restore(net, loader):
    net.eval()
    outputs = evaluate(net, loader)
    net.train()
    return outputs


class Validator:
    def run(self, net, loader):
        net.eval()
        return [net(x) for x in loader]
"""
VALIDATED_LOOPS = """\
import torch
from pkg.evaluation import Validator, evaluate, evaluate_and_restore

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
validator = Validator()
model.train()
for epoch in range(10):
    for x in range(10):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    evaluate(model, None)
for epoch in range(10):
    for x in range(10):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    evaluate_and_restore(model, None)
for epoch in range(10):
    model.train()
    for x in range(10):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    evaluate(loader=None, net=model)
for epoch in range(10):
    for x in range(10):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    validator.run(model, None)
"""


def test_a_validation_helper_of_another_file_that_leaves_eval_mode_on(project):
    _write(project, {"pkg/__init__.py": "", "pkg/evaluation.py": EVALUATION, "train.py": VALIDATED_LOOPS})
    settings = resolve_settings(Options(select=["TL015"]), cwd=project)
    found = engine.check_files([(str(project / "train.py"), "train.py")], settings, 1)
    assert [(d.location.row, [(r.filename, r.location.row, r.message) for r in d.related]) for d in found] == [
        (13, [("pkg/evaluation.py", 6, "`evaluate` puts `net` in eval mode here")]),
        # evaluate_and_restore switches back; the third loop calls model.train() at its top.
        (32, [("pkg/evaluation.py", 19, "`Validator.run` puts `net` in eval mode here")]),
    ]


CLASSIFIER = """\
import torch


class Classifier(torch.nn.Module):
    def label_sentences(self, batches):
        self.eval()
        labels = []
        for batch in batches:
            labels.append(self(batch).argmax(-1))
        return labels

    def score_documents(self, batches):
        self.eval()
        scores = []
        for batch in batches:
            scores.append(self(batch).max(-1).values)
        return scores
"""
PIPELINE = """\
import torch


class SentimentProcessor:
    def __init__(self, model):
        self._model = model

    def process(self, batches):
        with torch.no_grad():
            labels = self._model.label_sentences(batches)
        return labels, self._model.score_documents(batches)


@torch.inference_mode()
def label_corpus(model, corpus):
    return [model.label_sentences(document) for document in corpus]
"""


def test_a_method_every_caller_of_another_file_runs_without_autograd(project):
    _write(project, {"pkg/__init__.py": "", "pkg/classifier.py": CLASSIFIER, "pkg/pipeline.py": PIPELINE})
    settings = resolve_settings(Options(select=["TL007"]), cwd=project)
    found = engine.check_files([(str(project / "pkg/classifier.py"), "pkg/classifier.py")], settings, 1)
    # label_sentences runs under no_grad and inference_mode wherever it is called; score_documents does not.
    assert [(d.code, d.location.row) for d in found] == [("TL007", 16)]


BLOCKS = """\
import torch


class Block(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x).relu()


if __name__ == "__main__":
    print(Block(8).cuda()(torch.randn(2, 8).cuda()).shape)
"""
NETWORK = """\
import torch

from pkg.blocks import Block


class Network(torch.nn.Sequential):
    def __init__(self, dim, depth):
        super().__init__(*(Block(dim) for _ in range(depth)))
"""
SCRIPT = """\
import torch

from pkg.network import Network

if __name__ == "__main__":
    model = Network(8, 2).cuda()
    print(model(torch.randn(2, 8, device="cuda")).shape)
"""


def test_the_main_block_of_a_module_other_files_import_is_a_demo(project):
    _write(project, {"pkg/__init__.py": "", "pkg/blocks.py": BLOCKS, "pkg/network.py": NETWORK, "train.py": SCRIPT})
    settings = resolve_settings(Options(select=["TL305"]), cwd=project)
    names = ["pkg/blocks.py", "train.py"]
    found = engine.check_files([(str(project / name), name) for name in names], settings, 1)
    # The program's own `__main__` block is still checked: it is what users run.
    assert [(d.filename, d.location.row) for d in found] == [("train.py", 6), ("train.py", 7)]


FLAGGED_EVALUATION = """\
import torch


def evaluate_model(model, loader, is_training=False):
    if not is_training:
        model.eval()
    with torch.no_grad():
        return [model(x) for x in loader]


def validate(model, loader, *, keep_mode=False):
    if keep_mode:
        return None
    else:
        model.eval()
    return [model(x) for x in loader]
"""
FLAGGED_LOOP = """\
import torch.nn.functional as F
from pkg.evaluation import evaluate_model, validate


def fit(model, loader, optimizer, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        evaluate_model(model, loader, is_training=True)
        evaluate_model(model, loader, True)
        validate(model, loader, keep_mode=True)
        evaluate_model(model, loader, is_training=epoch > 5)
        validate(model, loader)
"""


def test_a_flag_of_a_helper_of_another_file_decides_whether_it_leaves_eval_mode_on(project):
    """stanza's trainers call `evaluate_model(..., is_training=True)`, which switches to eval mode
    only `if not is_training:`. A flag the call computes, or a default that switches, is reported."""
    _write(project, {"pkg/__init__.py": "", "pkg/evaluation.py": FLAGGED_EVALUATION, "train.py": FLAGGED_LOOP})
    settings = resolve_settings(Options(select=["TL015"]), cwd=project)
    found = engine.check_files([(str(project / "train.py"), "train.py")], settings, 1)
    assert [d.location.row for d in found] == [16, 17]


EARLY_RETURN_TRAINER = """\
class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def update(self, batch, eval=False):
        if eval:
            self.model.eval()
        else:
            self.model.train()
            self.optimizer.zero_grad()
        loss = self.model(batch).sum()
        if eval:
            return loss.item()
        loss.backward()
        self.optimizer.step()
        return loss.item()
"""
EARLY_RETURN_LOOPS = """\
from torch import optim

from pkg.trainer import Trainer


def fit(model, train_batches, dev_batches):
    trainer = Trainer(model, optim.SGD(model.parameters(), lr=0.1))
    for epoch in range(3):
        for batch in train_batches:
            trainer.update(batch, eval=False)
        dev_loss = 0.0
        for batch in dev_batches:
            dev_loss += trainer.update(batch, eval=True)
"""


def test_a_flag_that_returns_early_in_a_helper_of_another_file_skips_what_follows(project):
    """stanza's `Trainer.update(batch, eval=True)` clears gradients only `if not eval`, and returns
    before `backward()` and `step()` `if eval:`: the dev loop runs no step, and misses no zero_grad."""
    _write(project, {"pkg/__init__.py": "", "pkg/trainer.py": EARLY_RETURN_TRAINER, "train.py": EARLY_RETURN_LOOPS})
    settings = resolve_settings(Options(select=["TL001", "TL015"]), cwd=project)
    assert engine.check_files([(str(project / "train.py"), "train.py")], settings, 1) == []


PLOTS = """\
import numpy as np
import torch


def plot_images(imgs, targets, fname="images.jpg"):
    for i in range(imgs.shape[0]):
        np.save(fname, imgs[i].numpy())
    return targets.numpy()
"""


def test_a_helper_is_checked_with_what_its_callers_in_other_files_pass(project):
    train = "from utils.plots import *\n\nfor imgs, targets in loader:\n    imgs = imgs.to(device)\n    plot_images(imgs, targets)\n"
    _write(project, {"utils/__init__.py": "", "utils/plots.py": PLOTS, "train.py": train})
    settings = resolve_settings(Options(select=["TL303"]), cwd=project)
    found = engine.check_files([(str(project / "utils/plots.py"), "utils/plots.py")], settings, 1)
    # `imgs` comes on the GPU from train.py; `targets` is passed as loaded (CPU).
    assert [(d.location.row, [(r.filename, r.location.row) for r in d.related]) for d in found] == [
        (7, [("train.py", 5)])]
    assert "`imgs[i]` is on the GPU when a caller passes it there" in found[0].message


def test_callers_that_keep_the_tensor_on_the_cpu_place_nothing(project):
    calls = ("import utils.plots as P\nfrom utils.plots import plot_images\n\n"
             "x = x.cpu()\nplot_images(x, x)\nP.plot_images(x.to('cpu'), None)\nplot_images = print\n")
    _write(project, {"utils/__init__.py": "", "utils/plots.py": PLOTS, "eval.py": calls,
                     "other.py": "def plot_images(imgs, targets):\n    pass\n\nplot_images(x.cuda(), x.cuda())\n"})
    assert _findings(project, ["utils/plots.py"]) == []


NMS = """\
import torch


def keep_classes(prediction, classes):
    for pred in prediction:
        scores, labels = pred[:, 5:].max(1)
        pred = pred[(labels.view(-1, 1) == torch.Tensor(classes)).any(1)]
    return pred
"""


def test_a_helper_making_cpu_tensors_is_checked_with_the_model_outputs_its_callers_pass(project):
    detect = ("import torch\nfrom utils.nms import keep_classes\n\nmodel = Net().to(device)\n"
              "for img in loader:\n    img = img.to(device)\n    pred = model(img)[0]\n    keep_classes(pred, [0, 2])\n")
    _write(project, {"utils/__init__.py": "", "utils/nms.py": NMS, "detect.py": detect})
    settings = resolve_settings(Options(select=["TL301"]), cwd=project)
    found = engine.check_files([(str(project / "utils/nms.py"), "utils/nms.py")], settings, 1)
    assert [(d.location.row, [(r.filename, r.location.row) for r in d.related]) for d in found] == [
        (7, [("detect.py", 8), ("utils/nms.py", 7)])]
    assert "on the GPU when a caller passes it there" in found[0].message


def test_objects_built_from_a_placed_tensor_are_not_placed_tensors(project):
    detect = ("from utils.nms import keep_classes\n\nnet = net.cuda()\n"
              "keep_classes(DataParallel(net), [0])\nkeep_classes(len(net), [0])\n")
    _write(project, {"utils/__init__.py": "", "utils/nms.py": NMS, "detect.py": detect})
    settings = resolve_settings(Options(select=["TL301"]), cwd=project)
    assert engine.check_files([(str(project / "utils/nms.py"), "utils/nms.py")], settings, 1) == []


def test_a_file_too_large_to_check_is_not_read_for_callers_either(project):
    padding = "# " + "x" * 98 + "\n"
    huge = "from utils.nms import keep_classes\n" + padding * 41_000 + "keep_classes(pred.cuda(), [0])\n"
    _write(project, {"utils/__init__.py": "", "utils/nms.py": NMS, "huge.py": huge})
    settings = resolve_settings(Options(select=["TL301"]), cwd=project)
    assert engine.check_files([(str(project / "utils/nms.py"), "utils/nms.py")], settings, 1) == []
    (project / "huge.py").write_text(huge.replace(padding * 41_000, ""))
    assert len(engine.check_files([(str(project / "utils/nms.py"), "utils/nms.py")], settings, 1)) == 1


def test_a_forward_over_a_project_base_that_is_no_module_makes_no_module(project):
    base = "from abc import ABC\n\n\nclass BaseTransform(ABC):\n    def __call__(self, data):\n        return self.forward(data)\n"
    transform = ("import torch\nfrom pkg.base import BaseTransform\n\n\nclass ToSlic(BaseTransform):\n"
                 "    def forward(self, img):\n        return img.numpy()\n\n\n"
                 "def apply(t, img):\n    return t.forward(img)\n")
    _write(project, {"pkg/__init__.py": "", "pkg/base.py": base, "pkg/slic.py": transform})
    assert _findings(project, ["pkg/slic.py"]) == []
    # Over a base from outside the project, `forward` still makes a Module: `.numpy()` of its input is TL303.
    _write(project, {"pkg/slic.py": transform.replace("from pkg.base import", "from elsewhere import")})
    assert ("pkg/slic.py", "TL303", 7) in _findings(project, ["pkg/slic.py"])


SOFTMAX_NETWORK = '''\
import torch.nn as nn
import torch.nn.functional as F


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(9, 6)

    def forward(self, x):
        out = self.fc(x)
        out = F.softmax(out, dim=1)
        return out


class Scores(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(9, 6)

    def forward(self, x, probabilities=False):
        if probabilities:
            return self.fc(x).softmax(dim=1)
        return self.fc(x)
'''

SOFTMAX_TRAINING = '''\
import torch
import torch.nn as nn
import network as net


def train(model, optimizer, loader):
    criterion = nn.CrossEntropyLoss()
    for sample, target in loader:
        loss = criterion(model(sample), target)
        loss.backward()
        optimizer.step()


def train_either(model, loader):
    for sample, target in loader:
        nn.functional.cross_entropy(model(sample), target).backward()


def evaluate(loader):
    model = net.Network()
    scores = net.Scores()
    for sample, target in loader:
        print(nn.functional.cross_entropy(model(sample), target).item())
        print(nn.functional.cross_entropy(scores(sample), target).item())


if __name__ == "__main__":
    model = net.Network()
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), [])
    train_either(net.Network(), [])
    train_either(net.Scores(), [])
'''


def test_the_output_of_a_module_class_of_another_file_and_of_the_module_callers_pass(project):
    """A Module class whose forward ends in softmax, in another file: its output reaches a
    cross-entropy where the model is built, and in a function whose callers all pass one
    (`train(model, ...)`). Callers passing two classes, or a forward that returns logits on one
    path, tell nothing."""
    _write(project, {"network.py": SOFTMAX_NETWORK, "train.py": SOFTMAX_TRAINING})
    settings = resolve_settings(Options(select=["TL203"]), cwd=project)
    found = engine.check_files([(str(project / "train.py"), "train.py")], settings, 1)
    assert [(d.location.row, [(r.filename, r.location.row) for r in d.related]) for d in found] == [
        (9, [("network.py", 12)]), (23, [("network.py", 12)])]


def test_class_summaries_know_the_activation_forward_ends_in():
    classes = summarize(SOFTMAX_NETWORK).classes
    assert (classes["Network"].output, classes["Scores"].output) == (("softmax", 12, 15), None)


LOGITS_NETWORK = '''\
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(784, 128)
        self.out = nn.Linear(128, 10)

    def forward(self, x):
        return self.out(F.relu(self.hidden(x)))
'''

NLL_TRAINING = '''\
import torch.nn.functional as F
from classifier import Classifier

model = Classifier()


def step(x, y):
    return F.nll_loss(model(x), y)


def step_right(x, y):
    return F.nll_loss(F.log_softmax(model(x), dim=1), y)
'''


def test_raw_scores_of_a_module_class_of_another_file_reach_nll_loss(project):
    """TL210 knows a class of another file returns a Linear's output, and points at it there."""
    _write(project, {"classifier.py": LOGITS_NETWORK, "train.py": NLL_TRAINING})
    settings = resolve_settings(Options(select=["TL210"]), cwd=project)
    found = engine.check_files([(str(project / "train.py"), "train.py")], settings, 1)
    assert [(d.location.row, [(r.filename, r.location.row) for r in d.related]) for d in found] == [
        (8, [("classifier.py", 12)])]


PRIOR_BOX = '''\
import torch


class PriorBox(object):
    def __init__(self, sizes):
        self.sizes = sizes

    def forward(self):
        mean = []
        for size in self.sizes:
            mean += [size, size, size, size]
        output = torch.Tensor(mean).view(-1, 4)
        output.clamp_(max=1, min=0)
        return output
'''

SSD = '''\
import torch.nn as nn
from torch.autograd import Variable
from layers import *


class SSD(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.priorbox = PriorBox(sizes)
        self.priors = Variable(self.priorbox.forward(), volatile=True)
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x).view(x.size(0), -1, 4) - self.priors
'''

# The same names, in a file of the same directory without the `import *`: nothing is known.
SSD_WITHOUT_STAR = SSD.replace("from layers import *\n", "")


def test_names_from_star_imports_through_packages(project):
    """`from layers import *`, whose `__init__` star-imports `.functions`, whose `__all__` lists
    PriorBox: its `forward` returns a CPU tensor (a legacy constructor), so the attribute built
    from it is an unregistered tensor (TL401). A file of the same directory without the star
    import knows nothing of the name."""
    _write(project, {"layers/__init__.py": "from .functions import *\n",
                     "layers/functions/__init__.py": "from .prior_box import PriorBox\n\n__all__ = ['PriorBox']\n",
                     "layers/functions/prior_box.py": PRIOR_BOX, "ssd.py": SSD, "plain.py": SSD_WITHOUT_STAR})
    assert [(name, code, row) for name, code, row in _findings(project, ["ssd.py", "plain.py"]) if code == "TL401"] == [
        ("ssd.py", "TL401", 10)]
    assert ProjectView(str(project / "ssd.py"), "").lookup("PriorBox.forward").kind == "tensor"
    assert ProjectView(str(project / "plain.py"), "").lookup("PriorBox.forward") is None


def test_a_name_is_not_sought_through_every_chain_of_outside_stars(project, monkeypatch):
    """tsai's `imports.py` star-imports a dozen libraries outside the project: a name none of them
    is known to hold was sought again through the other stars (`fastcore.all.fastai.basics.name`),
    a search that grew with the power of their number and ran past the 30 s limit. The name the
    project's own star-imported module defines is still found."""
    outside = "".join(f"from outside{index}.all import *\n" for index in range(12))
    _write(project, {"pkg/__init__.py": "", "pkg/imports.py": outside + "from pkg.layers import *\n",
                     "pkg/layers.py": PRIOR_BOX, "pkg/model.py": "from pkg.imports import *\n"})
    resolve = Layout.resolve
    calls = []

    def counted(self, *args):
        calls.append(args)
        assert len(calls) < 5_000, "the search through star imports does not end"
        return resolve(self, *args)

    monkeypatch.setattr(Layout, "resolve", counted)
    assert ProjectView(str(project / "pkg" / "model.py"), "").lookup("unknown_helper") is None
    assert ProjectView(str(project / "pkg" / "model.py"), "").lookup("PriorBox.forward").kind == "tensor"


HEAD = '''\
import torch
import torch.nn as nn


class Detect(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, 8, 1)
        self.stride = torch.zeros(3)
        self.anchors = torch.zeros(3, 2)

    def forward(self, x):
        return self.conv(x) * self.stride[0] + self.anchors.sum()
'''
YOLO = '''\
import torch.nn as nn
from head import Detect


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Detect(16)

    def _apply(self, fn):
        super()._apply(fn)
        m = self.head
        m.stride = fn(m.stride)
        return self
'''


KEPT_DEVICE_BASES = """\
import torch.nn as nn


class Recommender(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.device = config["device"]


class Tracked(nn.Module):
    @property
    def device(self):
        return next(self.parameters()).device
"""
KEPT_DEVICE_MODELS = """\
import torch
from pkg.bases import Recommender, Tracked


class GraphModel(Recommender):
    def __init__(self, config, heads):
        super().__init__(config)
        self.heads = torch.LongTensor(heads).to(self.device)

    def forward(self, users):
        return self.heads[users]


class Masked(Tracked):
    def __init__(self, n):
        super().__init__()
        self.mask = torch.ones(n).to(self.device)

    def forward(self, x):
        return x * self.mask
"""


def test_a_tensor_made_on_the_device_a_base_of_another_file_keeps_is_a_hint(project):
    """RecBole's models place their tensors on the `self.device` their base's `__init__` sets from
    the config: a hint. A base whose `device` is a property of the parameters keeps the warning."""
    _write(project, {"pkg/__init__.py": "", "pkg/bases.py": KEPT_DEVICE_BASES, "pkg/models.py": KEPT_DEVICE_MODELS})
    settings = resolve_settings(Options(select=["TL401"], overrides=["show-hints=true"]), cwd=project)
    found = engine.check_files([(str(project / "pkg/models.py"), "pkg/models.py")], settings, 1)
    assert [(d.location.row, d.severity.value) for d in found] == [(8, "hint"), (17, "warning")]
    # The hint says where the base sets the device.
    assert [(r.filename, r.location.row) for r in found[0].related][-1] == ("pkg/bases.py", 7)


def test_an_apply_override_of_another_file_moves_the_attribute_it_names(project):
    """YOLO's Model moves its Detect head's `stride` in `_apply`: the head's `stride` is moved
    with the model, its `anchors` are not (a true TL401)."""
    _write(project, {"head.py": HEAD, "yolo.py": YOLO})
    assert [(code, row) for _, code, row in _findings(project, ["head.py"]) if code == "TL401"] == [("TL401", 10)]
    (project / "yolo.py").write_text(YOLO.replace("fn(m.stride)", "m.stride.float()"))
    assert [(code, row) for _, code, row in _findings(project, ["head.py"]) if code == "TL401"] == [
        ("TL401", 9), ("TL401", 10)]


AGENT = """\
import torch


class Agent:
    def __init__(self, net, checkpoint=None, replay_cache=None):
        self.net = net
        if checkpoint:
            self.net.load_state_dict(torch.load(checkpoint))
        self.replay = torch.load(replay_cache) if replay_cache else []
"""
RUN_AGENT = """\
import argparse

import torch

from agent import Agent

parser = argparse.ArgumentParser()
parser.add_argument("--disable-cuda", action="store_true")
args = parser.parse_args()
device = torch.device("cpu" if args.disable_cuda else "cuda")
"""


def test_a_checkpoint_loaded_in_a_module_of_a_program_that_runs_without_cuda(project):
    """Rainbow's agent.py restores a checkpoint without `map_location`; main.py, which imports
    it, has `--disable-cuda`: a GPU checkpoint fails to load on that path (TL505, with a note on
    the option). The replay cache is data, not weights trained on a GPU: not reported."""
    _write(project, {"agent.py": AGENT, "main.py": RUN_AGENT})
    settings = resolve_settings(Options(), cwd=project)
    found = engine.check_files([(str(project / "agent.py"), "agent.py")], settings, 1, use_cache=False)
    assert [(d.code, d.location.row) for d in found if d.code == "TL505"] == [("TL505", 8)]
    note = next(d for d in found if d.code == "TL505").related[0]
    assert (note.filename, note.location.row) == ("main.py", 8)
    (project / "main.py").write_text(RUN_AGENT.replace('parser.add_argument("--disable-cuda", action="store_true")\n', "")
                                     .replace('"cpu" if args.disable_cuda else "cuda"', '"cuda"'))
    assert [code for _, code, _ in _findings(project, ["agent.py"])].count("TL505") == 0


def test_a_module_created_after_a_check_is_seen_by_the_next_check_in_the_same_process(project):
    """A language server checks again in the process that answered before: `agent.py` imports
    `options`, which does not exist yet; once `options.py` is written with a `--cpu` option,
    the unchanged `agent.py` must be read with it (its import now resolves to a file)."""
    agent = project / "agent.py"
    agent.write_text("import torch\n\nimport options\n\n\ndef restore(model, path):\n"
                     "    model.load_state_dict(torch.load(path))\n")
    settings = resolve_settings(Options(), cwd=project)

    def codes():
        return [d.code for d in engine.check_source(agent.read_text(), str(agent), settings)]

    assert "TL505" not in codes()
    (project / "options.py").write_text(
        'import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument("--cpu", action="store_true")\n')
    assert "TL505" in codes()


DATA_HELPER = """\
import torch


def random_batches(count, device=torch.device("cuda")):
    return [torch.randn(4, 8, device=device) for _ in range(count)]
"""
DATA_TEST = """\
import torch

from tests.data_helpers import random_batches


def test_batches_on_the_cpu():
    assert len(random_batches(2, device=torch.device("cpu"))) == 2


class TestOnEachDevice:
    device = "cpu"

    def test_batches(self):
        assert random_batches(3, self.device)
"""


def test_a_cuda_default_of_a_test_helper_that_every_call_replaces(project):
    """opacus' tests/ helper `create_random_data(..., device=torch.device("cuda"))`: every call in
    the project passes `device`, so the default never runs. A call that leaves it to the
    default makes it a finding again, as does a helper that users call (not in a test folder)."""
    _write(project, {"tests/__init__.py": "", "tests/data_helpers.py": DATA_HELPER, "tests/test_data.py": DATA_TEST})
    settings = resolve_settings(Options(select=["TL305"]), cwd=project)

    def rows(name):
        return [d.location.row for d in engine.check_files([(str(project / name), name)], settings, 1, use_cache=False)]

    assert rows("tests/data_helpers.py") == []
    _write(project, {"tests/test_data.py": DATA_TEST + "\n\ndef test_default():\n    assert random_batches(1)\n"})
    assert rows("tests/data_helpers.py") == [4]
    calling = "from data_helpers import random_batches\n\nrandom_batches(2, device='cpu')\n"
    _write(project, {"data_helpers.py": DATA_HELPER, "train.py": calling})
    assert rows("data_helpers.py") == [4]
    # A checkout that lives in a folder named `tests` is no test folder of its own.
    _write(project, {"tests/checkout/pyproject.toml": "", "tests/checkout/data_helpers.py": DATA_HELPER,
                     "tests/checkout/train.py": calling})
    assert rows("tests/checkout/data_helpers.py") == [4]


SCRATCH_NET = """\
import torch


class NeuralNet:
    def __init__(self):
        self.w = torch.randn(3, 2)

    def forward(self, x):
        return x @ self.w
"""
ESTIMATOR = """\
from sklearn.base import BaseEstimator


class NeuralNet(BaseEstimator):
    def forward(self, X, training=False):
        return self.module_(X)


class NeuralNetClassifier(NeuralNet):
    pass
"""
EVALUATE = """\
import torch
from torch import nn


def evaluate(net, x):
    return net.forward(x)


def probe(x):
    layer = nn.Linear(3, 2)
    layer.register_forward_hook(print)
    return layer.forward(x)


def score(model, x):
    return model.forward(x)
"""


def test_a_class_named_like_a_module_that_is_none_makes_names_no_proof(project):
    """A project that defines `class NeuralNet:` of plain tensors (a from-scratch network) or a
    scikit-learn estimator with `forward` (skorch's): a parameter `net` may hold one, whose
    `forward` is its API. Values built as modules are still reported, and so are names with
    another word (`model`)."""
    settings = resolve_settings(Options(select=["TL005"]), cwd=project)

    def rows():
        found = engine.check_files([(str(project / "evaluate.py"), "evaluate.py")], settings, 1, use_cache=False)
        return [d.location.row for d in found]

    _write(project, {"evaluate.py": EVALUATE})
    assert rows() == [6, 12, 16]
    _write(project, {"scratch.py": SCRATCH_NET})
    assert rows() == [12, 16]
    (project / "scratch.py").write_text(SCRATCH_NET.replace("class NeuralNet:", "class NeuralNet(torch.nn.Module):"))
    assert rows() == [6, 12, 16]
    _write(project, {"estimator.py": ESTIMATOR})
    assert rows() == [12, 16]
    # An autograd Function's `forward` is called through `apply`: no value holds one.
    _write(project, {"dist.py": "import torch\n\n\nclass GatherLayer(torch.autograd.Function):\n"
                                "    @staticmethod\n    def forward(ctx, x):\n        return x\n"})
    assert set(ProjectView(str(project / "evaluate.py"), "").lookalike_models()) == {"NeuralNet"}


def test_a_generic_base_is_read_as_its_class(project):
    """flair's `class Classifier(Model[DT], typing.Generic[DT])`, with `Model(torch.nn.Module)`:
    a Module class, whose subclasses in other files are Modules too."""
    summary = summarize("import typing\nfrom .model import Model\n\n\n"
                        "class Classifier(Model[DT], typing.Generic[DT]):\n    pass\n")
    assert summary.classes["Classifier"].bases == (".model.Model", "typing.Generic")
    _write(project, {
        "pkg/__init__.py": "",
        "pkg/model.py": "import torch\n\n\nclass Model(torch.nn.Module):\n    pass\n",
        "pkg/classifier.py": "from .model import Model\n\n\nclass Classifier(Model[int]):\n    def forward(self, x):\n"
                             "        return x\n",
    })
    view = ProjectView(str(project / "pkg" / "model.py"), "")
    assert view.lookup("pkg.classifier.Classifier").kind == "module class"
    assert view.lookalike_models() == {}


def test_a_class_that_does_not_parse_has_no_summary():
    """Found by the fuzz test: a class whose text parses neither alone nor in its file."""
    summary = summarize_lazily(b"import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
                               b"        return x +\n")
    assert "Net" in summary.classes and summary.classes["Net"] is None


LOADS = """\
import torch


def restore(path):
    return torch.load(path)


def restore_any(path):
    return torch.load(path, weights_only=False)
"""


def test_loads_in_test_code_read_files_the_suite_controls(project):
    """skorch's and torchao's tests load what they saved: no file from elsewhere reaches them.
    The same loads in the library are reported, and so is a test's load of a whole pickled
    Module, which fails from torch 2.6 on."""
    _write(project, {"lib/io.py": LOADS, "tests/helpers.py": LOADS, "lib/test_io.py": LOADS,
                     "tests/test_model.py": "import torch\n\n\ndef test_round_trip(model, tmp_path):\n"
                                            "    torch.save(model, tmp_path / 'm.pt')\n"
                                            "    return torch.load(tmp_path / 'm.pt')\n"})
    settings = resolve_settings(Options(select=["TL502"], overrides=["show-hints=true"]), cwd=project)

    def rows(name):
        return [d.location.row for d in engine.check_files([(str(project / name), name)], settings, 1, use_cache=False)]

    assert rows("lib/io.py") == [5, 9]  # the explicit opt-out at row 9 is a hint
    assert rows("tests/helpers.py") == rows("lib/test_io.py") == []
    assert rows("tests/test_model.py") == [6]


PER_BATCH_MASK = """\
import torch


def batch_mask(batch, device):
    return torch.ones(batch, 16).to(device)
"""
COUPLED_DECAY = """\
import torch


def build(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
"""


@pytest.mark.parametrize(("code", "source"), [("TL309", PER_BATCH_MASK), ("TL016", COUPLED_DECAY)])
def test_test_code_is_not_told_about_run_time_costs_or_how_well_weights_generalise(project, code, source):
    """neuraloperator's and accelerate's tests, and torchrec's `test_utils/`, move an input they
    just drew (the suite runs it once) and train with Adam's coupled decay (to check mechanics).
    The same function in the library is reported."""
    names = ["lib/train.py", "tests/helpers.py", "lib/test_train.py", "lib/test_utils/inputs.py"]
    _write(project, {name: source for name in names})
    found = _findings(project, names)
    assert [(name, row) for name, found_code, row in found if found_code == code] == [("lib/train.py", 5)]


MOCK_MODULE = """\
import torch
from torch import nn


class CountingModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.count = torch.zeros(1)

    def forward(self, x):
        self.count += 1
        return x * self.count
"""


def test_modules_of_test_code_keep_their_tensors_where_the_suite_built_them(project):
    """torchrl's `testing/mocking_classes.py` and torchao's `testing/pt2e/utils.py`: a test that
    moves such a Module fails there and then. The same class in the library is reported."""
    _write(project, {"lib/model.py": MOCK_MODULE, "lib/testing/mocks.py": MOCK_MODULE, "tests/test_model.py": MOCK_MODULE})
    found = _findings(project, ["lib/model.py", "lib/testing/mocks.py", "tests/test_model.py"])
    assert [(name, row) for name, code, row in found if code == "TL401"] == [("lib/model.py", 8)]
