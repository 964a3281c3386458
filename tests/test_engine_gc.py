"""The engine pauses Python's cycle collector while it checks a file (a syntax tree has no cycles,
and the collector's passes over it cost a tenth of a check), gives the caller back the collector
as it found it (the language server and the flake8 plugin run in the user's process), and leaves
no cycle that would keep the file's tree alive until the collector walks it."""

from __future__ import annotations

import gc

import pytest

from torchlint import engine
from torchlint.config import Options, resolve_settings

BAD = "import torch\nx = torch.Tensor(3)\n"


@pytest.fixture
def collector_seen_by_the_parse(monkeypatch) -> list[bool]:
    seen = []
    real_parse = engine.parse_module

    def parse(source, filename):
        seen.append(gc.isenabled())
        return real_parse(source, filename)

    monkeypatch.setattr(engine, "parse_module", parse)
    return seen


def test_the_collector_is_paused_during_a_check_and_running_after(collector_seen_by_the_parse, tmp_path):
    found = engine.check_source(BAD, "a.py", resolve_settings(Options(), cwd=tmp_path))
    assert [d.code for d in found] == ["TL102"]
    assert collector_seen_by_the_parse == [False]
    assert gc.isenabled()


def test_a_check_that_fails_still_restarts_the_collector(monkeypatch, tmp_path):
    def failing(source, filename):
        raise RuntimeError("a bug in a rule")

    monkeypatch.setattr(engine, "parse_module", failing)
    with pytest.raises(RuntimeError):
        engine.check_source(BAD, "a.py", resolve_settings(Options(), cwd=tmp_path))
    assert gc.isenabled()


def test_a_caller_that_paused_the_collector_finds_it_paused(collector_seen_by_the_parse, tmp_path):
    gc.disable()
    try:
        engine.check_source(BAD, "a.py", resolve_settings(Options(), cwd=tmp_path))
        assert collector_seen_by_the_parse == [False] and not gc.isenabled()
    finally:
        gc.enable()


MODULE_LEVEL = BAD + "".join(f"y{i} = torch.zeros({i}).view(-1) + x.permute(1, 0)\n" for i in range(200))
# Functions the tensor facts interpret (their interpreters call back into their model), and a layer
# whose sizes are read from names (a reader that keeps its interpreter).
MODEL = """import torch
import torch.nn as nn

WIDTH = 16


class Net(nn.Module):
    def __init__(self, channels=3, kernel=3):
        super().__init__()
        self.conv = nn.Conv2d(channels, WIDTH, kernel, padding=kernel // 2)
        self.head = nn.Linear(WIDTH, 10)

    def forward(self, x):
        x = self.conv(x).relu()
        return self.head(x.mean(dim=(2, 3)))


def train(model, batches):
    for images, labels in batches:
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()


if __name__ == "__main__":
    net = Net()
    print(net(torch.randn(2, 3, 8, 8)).shape)
"""


@pytest.mark.parametrize("source", [MODULE_LEVEL, MODEL], ids=["module level", "model"])
def test_a_checked_files_syntax_tree_is_freed_without_the_collector(source, tmp_path):
    # The analyses refer back to the file's context; left in that cycle, the whole tree would wait
    # for a collection that walks it again.
    settings = resolve_settings(Options(select=["ALL"]), cwd=tmp_path)
    gc.collect()
    gc.disable()
    try:
        engine.check_source(source, "a.py", settings)
        left_in_cycles = gc.collect()
    finally:
        gc.enable()
    assert left_in_cycles < 100
