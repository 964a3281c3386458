"""Recall on real bug fixes: does torchlint report the bugs that authors of public repositories fixed?

Usage:
    python benchmarks/real_fixes.py [LABELS.tsv ...] [--mirrors DIR] [--split dev|held-out|all] [-v]

Each label (benchmarks/real_fixes/*.tsv: repo, fix_commit, path, row, code, what) names one buggy
site: the row, in the fix commit's first parent, where the rule that covers the bug reports it.
The trees are built at run time from repository snapshots (`fetch`, which leaves a bare git
directory in DIR/owner+name/repo, or a clone's .git in it); no fetched code is kept here.
torchlint checks the labelled file inside the parent commit's whole tree, so facts from the
project's other files apply:
- *found*: a finding of the label's code within ROW_TOLERANCE rows of the label's row, where
  it is reported or at a place it names as related (`= note:`);
- *still reported at the fix*: in the fix commit's version of the file, a finding of that code
  within ROW_TOLERANCE rows of where the fixed lines now are (a false positive on fixed code).

labels_held_out*.tsv are the held-back part: measure on them, do not tune on their misses (`-v`
hides them unless --split held-out is asked for by name). labels_held_out_new_repositories.tsv
holds fixes from 24 repositories no one on the team had read, labelled by helpers who did not
run torchlint.
Run with PYTHONPATH pointing at another checkout to measure that engine.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

LABELS = Path(__file__).parent / "real_fixes"
HELD_OUT = "labels_held_out"  # the start of their file names
# Authors' rows and a rule's reported row may differ by a line in a multi-line statement.
ROW_TOLERANCE = 2
# What torchlint reads of a tree: sources, notebooks and the configuration they are checked under.
READ_FILES = (".py", ".pyi", ".ipynb", ".toml", ".cfg", ".txt", ".gitignore")


@dataclass(frozen=True)
class Label:
    repo: str
    fix_commit: str
    path: str
    row: int
    code: str
    what: str
    held_out: bool


@dataclass
class Outcome:
    label: Label
    found: bool
    still_reported: bool | None  # None: the file is gone at the fix
    problem: str = ""


def read_labels(files: list[Path]) -> list[Label]:
    labels = []
    for file in files:
        with file.open(newline="") as stream:
            for record in csv.DictReader(stream, delimiter="\t"):
                labels.append(Label(record["repo"], record["fix_commit"], record["path"], int(record["row"]),
                                    record["code"], record["what"], file.name.startswith(HELD_OUT)))
    return labels


def extract(git_dir: Path, commit: str, into: Path) -> None:
    """The commit's files that torchlint reads (sources, notebooks, configuration), written under
    `into`. A snapshot lacks its largest blobs, so the tree is read blob by blob, not archived."""
    git = ["git", "--git-dir", str(git_dir)]
    listing = subprocess.run([*git, "ls-tree", "-r", "-z", commit], capture_output=True, check=True).stdout
    wanted = []
    for entry in listing.decode("utf-8", "surrogateescape").split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob" and mode != "120000" and path.endswith(READ_FILES):
            wanted.append((path, blob))
    if not wanted:
        return
    batch = subprocess.run([*git, "cat-file", "--batch"], input="".join(f"{blob}\n" for _, blob in wanted).encode(),
                           capture_output=True, check=True).stdout
    offset = 0
    for path, blob in wanted:
        header_end = batch.index(b"\n", offset)
        header = batch[offset:header_end].split()
        offset = header_end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(batch[offset:offset + size])
        offset += size + 1


def findings(tree: Path, paths: list[str]) -> dict[str, list[tuple[int, str]]]:
    """(row, code) of every finding in each of `paths`, checked inside `tree`."""
    present = [path for path in paths if (tree / path).is_file()]
    if not present:
        return {}
    result = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--select", "ALL", "--no-cache", "--output-format", "json",
         "--exit-zero", *present], cwd=tree, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "torchlint failed")
    by_path: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for finding in json.loads(result.stdout):
        # A finding stands where its rule reports it and at the places it names as evidence
        # (the factory inside a helper whose CPU result the call site combines).
        for place in (finding, *finding.get("related", ())):
            name = os.path.relpath(os.path.join(tree, place["filename"]), tree)
            by_path[name].append((place["location"]["row"], finding["code"]))
    return by_path


def near(reported: list[tuple[int, str]], code: str, rows: range) -> bool:
    return any(found_code == code and row in rows for row, found_code in reported)


def rows_after_fix(before: list[str], after: list[str], row: int) -> range:
    """Where row `row` of the buggy file is in the fixed file: the replacement of its changed block,
    or the same line moved."""
    for tag, old_start, old_end, new_start, new_end in difflib.SequenceMatcher(None, before, after,
                                                                               autojunk=False).get_opcodes():
        if old_start <= row - 1 < max(old_end, old_start + 1):
            if tag == "equal":
                moved = new_start + (row - 1 - old_start) + 1
                return range(moved - ROW_TOLERANCE, moved + ROW_TOLERANCE + 1)
            return range(new_start + 1 - ROW_TOLERANCE, max(new_end, new_start + 1) + ROW_TOLERANCE + 1)
    return range(0)


def measure_commit(git_dir: Path, fix_commit: str, labels: list[Label]) -> list[Outcome]:
    paths = sorted({label.path for label in labels})
    with tempfile.TemporaryDirectory() as scratch:
        buggy, fixed = Path(scratch, "buggy"), Path(scratch, "fixed")
        extract(git_dir, f"{fix_commit}^", buggy)
        extract(git_dir, fix_commit, fixed)
        before, after = findings(buggy, paths), findings(fixed, paths)
        outcomes = []
        for label in labels:
            window = range(label.row - ROW_TOLERANCE, label.row + ROW_TOLERANCE + 1)
            found = near(before.get(label.path, []), label.code, window)
            still = None
            if (fixed / label.path).is_file():
                old = (buggy / label.path).read_text(errors="replace").splitlines()
                new = (fixed / label.path).read_text(errors="replace").splitlines()
                still = near(after.get(label.path, []), label.code, rows_after_fix(old, new, label.row))
            outcomes.append(Outcome(label, found, still))
        return outcomes


def measure(labels: list[Label], mirrors: Path) -> list[Outcome]:
    by_commit: dict[tuple[str, str], list[Label]] = defaultdict(list)
    for label in labels:
        by_commit[label.repo, label.fix_commit].append(label)
    outcomes = []
    for (repo, commit), group in sorted(by_commit.items()):
        git_dir = mirrors / repo.replace("/", "+") / "repo"
        if (git_dir / ".git").is_dir():
            git_dir = git_dir / ".git"  # `fetch` leaves some snapshots as a clone's .git folder
        if not git_dir.is_dir():
            outcomes += [Outcome(label, False, None, f"no snapshot of {repo} in {mirrors}") for label in group]
            continue
        try:
            outcomes += measure_commit(git_dir, commit, group)
        except (subprocess.CalledProcessError, RuntimeError, subprocess.TimeoutExpired) as error:
            outcomes += [Outcome(label, False, None, f"{type(error).__name__}: {error}") for label in group]
    return outcomes


def report(outcomes: list[Outcome], verbose: bool, show_held_out: bool) -> None:
    measured = [outcome for outcome in outcomes if not outcome.problem]
    total, found = Counter(), Counter()
    for outcome in measured:
        total[outcome.label.code] += 1
        found[outcome.label.code] += outcome.found
    print(f"{'code':<7}{'found':>7}{'of':>5}{'recall':>9}")
    for code in sorted(total):
        print(f"{code:<7}{found[code]:>7}{total[code]:>5}{found[code] / total[code]:>9.2f}")
    all_found, all_total = sum(found.values()), sum(total.values())
    if all_total:
        print(f"{'all':<7}{all_found:>7}{all_total:>5}{all_found / all_total:>9.2f}"
              f"   over {len({outcome.label.repo for outcome in measured})} repositories")
    still = [outcome for outcome in measured if outcome.still_reported]
    print(f"still reported at the fix commit (false positives): {len(still)}")
    for outcome in outcomes:
        if outcome.problem:
            print(f"not measured: {outcome.label.repo} {outcome.label.fix_commit[:10]}: {outcome.problem}")
    if not verbose:
        return
    for outcome in measured:
        if outcome.label.held_out and not show_held_out:
            continue
        label = outcome.label
        if not outcome.found:
            print(f"missed  {label.code} {label.repo} {label.fix_commit[:10]} {label.path}:{label.row}  {label.what}")
        if outcome.still_reported:
            print(f"at fix  {label.code} {label.repo} {label.fix_commit[:10]} {label.path}:{label.row}  {label.what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labels", nargs="*", type=Path, help="label files (default: benchmarks/real_fixes/*.tsv)")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="where fetch put the snapshots")
    parser.add_argument("--split", choices=("dev", "held-out", "all"), default="all")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the misses and the fixes still reported")
    arguments = parser.parse_args()
    labels = read_labels(arguments.labels or sorted(LABELS.glob("*.tsv")))
    if arguments.split != "all":
        labels = [label for label in labels if label.held_out == (arguments.split == "held-out")]
    report(measure(labels, arguments.mirrors), arguments.verbose, show_held_out=arguments.split == "held-out")


if __name__ == "__main__":
    main()
