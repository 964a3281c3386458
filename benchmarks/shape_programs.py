"""Recall and false alarms of torchlint's shape rules on small hand-written PyTorch programs.

Each `NN_name_bug.py` in benchmarks/shape_programs/ has exactly one shape bug that makes it raise
(or, for a silent broadcast, fail its final assert) under torch; each `NN_name_ok.py` is the same
program, fixed, and runs cleanly. labels.tsv gives, for each bug program, the row a linter should
report (the line whose operation raises, or computes the wrong shape).

A bug program is *found* when torchlint reports one of the selected codes in it that its ok twin
does not have (the output shows `CODE@row` for a finding away from the labelled row: a
layer-size finding names the layer's construction). A *false alarm* is any such finding in an
`_ok.py` file.

The odd-numbered programs were read while the shape analysis was developed; the even-numbered
ones are held out (measured, not read), to tell fitting from finding. Programs 27 to 40 were
written later by someone who had not seen the analysis, and all fourteen were measured once
before any of them was read (2 of 14 found, no false alarm); then the odd ones were read.
Programs 41 to 56 were written the same way, later still, and measured unread at the commit
before they were added (1 of 16 found, no false alarm); the even ones stay held out, and the odd
ones were read in the work on issue #27 (shape errors inside forward()), which extended the
analysis to find them. Programs 57 to 72 were written the same way, later still, and measured
unread: 4 of 16 found at c772fa6, 5 of 16 at the commit that added them, no false alarm.
Programs held out at first and read later are listed in READ_SINCE: 10 and 34 while the
commit after 9fb7207 was developed; after c772fa6, 6, 8, 24, 26, 36, 40, 67 and 69, each of
which the analysis was then extended to find, 52 too (the methods of a plain replay-buffer
class), and 28, 61 and 63, still missed (they need a module class read once per construction,
or the contents of a deque of tuples). Of the odd programs 41 to 55, read before, 43 is found
since then too.

Usage:
    python benchmarks/shape_programs.py [--codes TL103,TL104,TL105,TL601] [--verify] [--folder DIR]

--verify also runs every program with this Python (needs torch) and lists those that do not
behave: a bug program that exits 0, an ok program that fails, or a bug program whose error is
raised on a line other than the labelled one. The script always exits 0: it measures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass

DEFAULT_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shape_programs")
DEFAULT_CODES = "TL103,TL104,TL105,TL601"
ROW_TOLERANCE = 1
RUN_TIMEOUT_S = 120


@dataclass(frozen=True)
class Label:
    file: str
    row: int | None  # None for an ok program
    kind: str
    what: str

    @property
    def is_bug(self) -> bool:
        return self.row is not None


@dataclass(frozen=True)
class Finding:
    code: str
    file: str
    row: int
    message: str


def read_labels(folder: str) -> list[Label]:
    labels = []
    with open(os.path.join(folder, "labels.tsv"), encoding="utf-8") as handle:
        for line in handle:
            if not line.strip() or line.startswith("#"):
                continue
            file, row, kind, what = line.rstrip("\n").split("\t", 3)
            labels.append(Label(file, None if row == "-" else int(row), kind, what))
    return labels


def run_torchlint(folder: str, codes: str) -> list[Finding]:
    command = [sys.executable, "-m", "torchlint", "check", "--select", codes,
               "--output-format", "json", "--no-cache", folder]
    completed = subprocess.run(command, capture_output=True, text=True)
    try:
        records = json.loads(completed.stdout)
    except json.JSONDecodeError:
        print(f"torchlint gave no JSON (exit {completed.returncode}):\n{completed.stderr.strip()}")
        return []
    return [Finding(record["code"], os.path.basename(record["filename"]), record["location"]["row"],
                    record["message"]) for record in records]


def findings_by_file(findings: list[Finding]) -> dict[str, list[Finding]]:
    grouped: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        grouped[finding.file].append(finding)
    return grouped


def near_label(finding: Finding, label: Label) -> bool:
    return label.is_bug and abs(finding.row - label.row) <= ROW_TOLERANCE


def twin(file: str) -> str:
    return file.replace("_bug.py", "_ok.py")


# Programs from this number on are all held out, odd ones too.
ALL_HELD_OUT_FROM = 41
# Programs held out at first whose code was read later, while an analysis change was developed on them.
READ_SINCE = frozenset({6, 8, 10, 24, 26, 28, 34, 36, 40, 41, 43, 45, 47, 49, 51, 52, 53, 55, 61, 63, 67, 69})


def held_out(label: Label) -> bool:
    number = int(label.file.split("_", 1)[0])
    return (number % 2 == 0 or number >= ALL_HELD_OUT_FROM) and number not in READ_SINCE


def score(labels: list[Label], findings: list[Finding]) -> tuple[list[Label], list[Finding]]:
    """Print found/missed per bug program; return the bug programs found and the false alarms.

    A bug program holds one bug, and its ok twin is the same code without it: a finding in the
    bug program that the twin does not have (same code, same row) is about that bug, even where
    it is reported away from the labelled row (a layer-size finding names the layer's
    construction, not the call that raises). Every finding in an ok program is a false alarm."""
    grouped = findings_by_file(findings)
    found: list[Label] = []
    false_alarms = []
    for label in labels:
        if not label.is_bug:
            false_alarms += grouped.get(label.file, [])
            continue
        in_twin = {(finding.code, finding.row) for finding in grouped.get(twin(label.file), [])}
        hits = [finding for finding in grouped.get(label.file, []) if (finding.code, finding.row) not in in_twin]
        if hits:
            found.append(label)
        where = ", ".join(sorted({f"{hit.code}@{hit.row}" if not near_label(hit, label) else hit.code for hit in hits}))
        verdict = f"found  ({where})" if hits else "missed"
        print(f"{verdict:<28} {label.file}:{label.row}  [{label.kind}]")
    labelled = {label.file for label in labels}
    false_alarms += [finding for finding in findings if finding.file not in labelled]
    return found, false_alarms


def print_false_alarms(false_alarms: list[Finding]) -> None:
    if not false_alarms:
        return
    print("\nfalse alarms:")
    for finding in sorted(false_alarms, key=lambda finding: (finding.file, finding.row)):
        print(f"  {finding.file}:{finding.row} {finding.code} {finding.message}")


def raising_row(stderr: str, path: str) -> int | None:
    """The line of `path` in the innermost traceback frame that belongs to it."""
    rows = re.findall(rf'File "{re.escape(path)}", line (\d+)', stderr)
    return int(rows[-1]) if rows else None


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def misbehaviour(folder: str, label: Label) -> str | None:
    """Run one program; say how it does not behave as labelled, or None if it does."""
    path = os.path.abspath(os.path.join(folder, label.file))
    try:
        completed = subprocess.run([sys.executable, path], capture_output=True, text=True,
                                   cwd=folder, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"timed out after {RUN_TIMEOUT_S} s"
    if not label.is_bug:
        return None if completed.returncode == 0 else f"ok program failed: {last_line(completed.stderr)}"
    if completed.returncode == 0:
        return "bug program ran without error"
    error = last_line(completed.stderr)
    row = raising_row(completed.stderr, path)
    if not error.startswith("AssertionError") and row != label.row:
        return f"raised on row {row}, labelled {label.row}: {error}"
    return None


def verify(folder: str, labels: list[Label]) -> None:
    print("\nverify: running every program with", sys.executable)
    problems = 0
    for label in labels:
        problem = misbehaviour(folder, label)
        if problem:
            problems += 1
            print(f"  {label.file}: {problem}")
    print(f"verify: {len(labels) - problems} of {len(labels)} programs behave as labelled")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default=DEFAULT_FOLDER, help="the folder of programs and labels.tsv")
    parser.add_argument("--codes", default=DEFAULT_CODES, help=f"rule codes to select (default {DEFAULT_CODES})")
    parser.add_argument("--verify", action="store_true", help="also run every program and check it fails or passes")
    args = parser.parse_args()
    labels = read_labels(args.folder)
    findings = run_torchlint(args.folder, args.codes)
    found, false_alarms = score(labels, findings)
    print_false_alarms(false_alarms)
    bugs = [label for label in labels if label.is_bug]
    held = [label for label in bugs if held_out(label)]
    print(f"\ncodes {args.codes}: found {len(found)} of {len(bugs)} "
          f"(read while developing {len(found) - sum(map(held_out, found))} of {len(bugs) - len(held)}, "
          f"held out {sum(map(held_out, found))} of {len(held)}), false alarms {len(false_alarms)}")
    if args.verify:
        verify(args.folder, labels)


if __name__ == "__main__":
    main()
    sys.exit(0)
