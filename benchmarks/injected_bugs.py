"""Recall on real code: inject one known bug at a time into correct files and see if torchlint finds it.

Usage: python benchmarks/injected_bugs.py DIR [DIR ...] [-v]

Each injection edits one line of a real file (deletes a `zero_grad()` call, drops a
`.contiguous()` before `.view(`, drops a factory's `device=`) and checks the edited text at the
file's own path, so facts from the rest of the project still apply. An injection is *found* when
a finding of the expected code appears that the unedited file does not have. Not every injection
makes a bug (a `.contiguous()` may have been redundant, another `zero_grad()` may clear the same
gradients): read the misses (`-v`) before calling one a false negative.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from torchlint.config import Options, resolve_settings
from torchlint.discovery import Discovery
from torchlint.engine import check_source
from torchlint.sources import UnreadableFile, read_source


@dataclass(frozen=True)
class Injection:
    name: str
    pattern: re.Pattern
    replacement: str
    code: str  # the rule that should report the injected bug


INJECTIONS = (
    Injection("delete zero_grad()", re.compile(r"^([ \t]*)[\w.]+\.zero_grad\([^)]*\)(?=[ \t]*\r?\n?$)"), r"\1pass", "TL001"),
    Injection("drop .contiguous() before .view(", re.compile(r"\.contiguous\(\)(?=\.view\()"), "", "TL101"),
    Injection(
        "drop a factory's device=",
        re.compile(r"(torch\.(?:arange|zeros|ones|full|rand|randn|eye|empty|tensor)\((?:[^()]|\([^()]*\))*?)"
                   r",\s*device\s*=\s*[\w.\[\]]+(?=[,)])"),
        r"\1",
        "TL301",
    ),
)


def _rows(found, code: str) -> set[int]:
    return {diagnostic.location.row for diagnostic in found if diagnostic.code == code}


def _sites(lines: list[str], injection: Injection):
    """(index, edited line) for each line the injection applies to, outside comments."""
    for index, line in enumerate(lines):
        match = injection.pattern.search(line)
        if match and "#" not in line[:match.start()]:
            yield index, injection.pattern.sub(injection.replacement, line, count=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every injection that was not found")
    args = parser.parse_args()
    settings = resolve_settings(Options(select=["ALL"]))
    counts: Counter = Counter()
    missed: dict[str, list[str]] = defaultdict(list)
    for path in Discovery(settings.exclude, settings.root).files(args.paths):
        if not path.endswith(".py"):
            continue
        try:
            text = read_source(path).text
        except UnreadableFile:
            continue
        lines = text.splitlines(keepends=True)
        before = None
        for injection in INJECTIONS:
            for index, edited in _sites(lines, injection):
                before = before if before is not None else check_source(text, path, settings)
                after = check_source("".join(lines[:index] + [edited] + lines[index + 1:]), path, settings)
                found = bool(_rows(after, injection.code) - _rows(before, injection.code))
                counts[injection.name, found] += 1
                if not found:
                    missed[injection.name].append(f"{path}:{index + 1}: {lines[index].strip()}")
    for injection in INJECTIONS:
        found, sites = counts[injection.name, True], counts[injection.name, True] + counts[injection.name, False]
        print(f"{injection.name} (expect {injection.code}): found {found} of {sites}")
        if args.verbose:
            for line in missed[injection.name]:
                print(f"    missed {line}")


if __name__ == "__main__":
    main()
