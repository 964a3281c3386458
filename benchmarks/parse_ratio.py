"""Speed of `torchlint check` relative to the floor: bare libcst parsing of the same files.

Usage: python benchmarks/parse_ratio.py DIR [DIR ...] [--repeat N]

Both figures are CPU time of this one process (one core), measured in the same run on the same
files, so the ratio does not depend on the machine. Prints lines/second for scale as well.
"""

from __future__ import annotations

import argparse
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


def _cpu(function, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sources = _load(args.paths)
    lines = sum(text.count("\n") for _, text in sources)
    settings = resolve_settings(Options(select=["ALL"]))

    def parse_only() -> None:
        for _, text in sources:
            try:
                cst.parse_module(text)
            except cst.ParserSyntaxError:
                pass

    def lint() -> None:
        for path, text in sources:
            check_source(text, path, settings)

    parse_time = _cpu(parse_only, args.repeat)
    lint_time = _cpu(lint, args.repeat)
    print(f"files: {len(sources)}  lines: {lines}  rules: {len(settings.rules)}")
    print(f"libcst parse:    {parse_time:7.2f} s CPU  ({lines / parse_time:,.0f} lines/s)")
    print(f"torchlint check: {lint_time:7.2f} s CPU  ({lines / lint_time:,.0f} lines/s)")
    print(f"ratio torchlint / parse: {lint_time / parse_time:.2f}")


if __name__ == "__main__":
    main()
