"""The fuzzer's properties (scripts/fuzz.py) on a small budget of each kind of input, and on every
input the fuzzer ever found failing (tests/data/fuzz/: the regression fixtures)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from scripts import fuzz

pytest.importorskip("hypothesmith")

REGRESSIONS = sorted((Path(__file__).parent / "data" / "fuzz").iterdir())


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory) -> fuzz.Fuzzer:
    return fuzz.Fuzzer(tmp_path_factory.mktemp("fuzz"), None, seed=0, corpus=[], verbose=False)


@pytest.mark.parametrize("regression", REGRESSIONS, ids=[path.name for path in REGRESSIONS])
def test_an_input_the_fuzzer_found_holds_every_property(regression, fuzzer, tmp_path):
    path = tmp_path / regression.name
    shutil.copyfile(regression, path)
    assert fuzz.input_problems(path, fuzzer.settings, fuzzer.outputs) == []
    assert path.read_bytes() == regression.read_bytes()


def test_the_regressions_give_the_same_findings_with_one_or_two_processes_and_the_cache(fuzzer, tmp_path):
    paths = []
    for regression in REGRESSIONS:
        paths.append(tmp_path / regression.name)
        shutil.copyfile(regression, paths[-1])
    assert fuzz.batch_problems(paths, fuzzer.settings, tmp_path / "cache") == []


@pytest.mark.parametrize("kind", [kind for kind in fuzz.KINDS if kind != "repository"])
def test_a_small_fuzz_run_finds_nothing(kind, monkeypatch):
    # A fixed number of inputs, whatever the machine's load; the time bounds per file are
    # tested in test_hostile_repository.py, so a loaded machine does not count as a failure.
    monkeypatch.setattr(fuzz, "SLOW_SECONDS", 600.0)
    reports = fuzz.fuzz([kind], count=70, seconds=3600, seed=18, corpus=[], save=None)
    report = reports[kind]
    assert report.inputs >= 60  # hypothesis may discard a few of its draws
    assert dict(report.failures) == {}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="hostile trees hold FIFOs and symlinks")
def test_a_small_run_of_hostile_repositories_finds_nothing(monkeypatch):
    # A tree costs two runs of the CLI (a second or two each): a few trees, whatever the load.
    monkeypatch.setattr(fuzz, "SLOW_SECONDS", 600.0)
    reports = fuzz.fuzz(["repository"], count=6, seconds=3600, seed=18, corpus=[], save=None)
    assert reports["repository"].inputs == 6
    assert dict(reports["repository"].failures) == {}


def test_a_hostile_tree_is_rebuilt_alone_from_its_seed_and_number(tmp_path):
    first = fuzz.hostile_tree(tmp_path / "first", fuzz.random.Random("repository-18-3"))
    again = fuzz.hostile_tree(tmp_path / "again", fuzz.random.Random("repository-18-3"))
    assert (first.names, first.planted) == (again.names, again.planted) and first.pitfalls


def test_the_mutations_are_reproducible_from_the_seed():
    source = (Path(fuzz.REPO) / "examples" / "train_pitfalls.py").read_bytes()
    first = [fuzz.mutated_source(source, fuzz.random.Random(seed)) for seed in range(20)]
    again = [fuzz.mutated_source(source, fuzz.random.Random(seed)) for seed in range(20)]
    assert first == again and len(set(first)) > 10
