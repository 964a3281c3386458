"""Speed of `torchlint check` relative to the floor: bare libcst parsing of the same files.

Usage: python benchmarks/parse_ratio.py DIR [DIR ...] [--repeat N]

All figures are CPU time of this one process (one core). Each file is parsed, then checked, one
file after the other, so that a machine that slows down or speeds up during the run (shared
cores, frequency scaling: runs here drift by a third) weighs on both figures alike. The first
round is cold (project knowledge read from the other files as a CLI run reads it); later rounds
answer it from memory, and the best round is reported.

Two floors are printed. `libcst.parse_module` as any caller runs it, with Python's cycle
collector on, is the budget's floor; the check pauses the collector while it works on a file
(see README "Speed"), so the parse with the collector paused is printed too, for the share of
the check that is torchlint's own work.
"""

from __future__ import annotations

import argparse
import gc
import time

import libcst as cst

from torchlint.config import Options, resolve_settings
from torchlint.discovery import Discovery
from torchlint.engine import check_source
from torchlint.sources import UnreadableFile, read_source


def _load(paths: list[str]) -> list[tuple[str, str]]:
    settings = resolve_settings(Options())
    sources = []
    for path in Discovery(settings.exclude, settings.root).files(paths):
        if not path.endswith(".py"):
            continue
        try:
            sources.append((path, read_source(path).text))
        except UnreadableFile:
            continue
    return sources


def _cpu(function, *args) -> float:
    start = time.process_time()
    function(*args)
    return time.process_time() - start


def _parse(text: str) -> None:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        pass


def _parse_collector_paused(text: str) -> None:
    gc.disable()
    try:
        _parse(text)
    finally:
        gc.enable()


def _round(sources: list[tuple[str, str]], settings) -> tuple[float, float, float]:
    """CPU seconds of (parse, parse with the collector paused, check) over every file."""
    parse = paused = check = 0.0
    for path, text in sources:
        parse += _cpu(_parse, text)
        paused += _cpu(_parse_collector_paused, text)
        check += _cpu(check_source, text, path, settings)
    return parse, paused, check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sources = _load(args.paths)
    lines = sum(text.count("\n") for _, text in sources)
    settings = resolve_settings(Options(select=["ALL"]))
    rounds = [_round(sources, settings) for _ in range(args.repeat)]
    print(f"files: {len(sources)}  lines: {lines}  rules: {len(settings.rules)}")
    for number, (parse, paused, check) in enumerate(rounds):
        kind = "cold" if number == 0 else "warm"
        print(f"round {number + 1} ({kind}): parse {parse:.2f} s, parse collector paused {paused:.2f} s, "
              f"check {check:.2f} s CPU ({lines / check:,.0f} lines/s)")
    parse, paused, check = min(rounds, key=lambda figures: figures[2] / figures[0])
    print(f"ratio torchlint / parse: {check / parse:.2f}  (/ parse collector paused: {check / paused:.2f})")


if __name__ == "__main__":
    main()
