"""Compare TorchFix findings with torchlint findings on the same code, site by site.

Usage:
    torchfix --select ALL DIR > torchfix.txt                       (run from TORCHFIX_CWD)
    torchlint check DIR --output-format concise > torchlint.txt
    python benchmarks/compare_torchfix.py torchfix.txt torchlint.txt \
        [--torchfix-cwd DIR] [--torchlint-cwd DIR] [--judgments benchmarks/torchfix_judgments.tsv] [-v]

Both outputs are `path:row:column: CODE [*] message` lines. Paths are resolved against the
directory each tool ran in. A TorchFix finding is *matched* when torchlint reports, in the same
file and on the same row, one of the torchlint codes that cover its TorchFix code (see
docs/migrating-from-torchfix.md). Unmatched TorchFix findings are listed with the judged reason
from the judgments file (`path suffix, or a folder ending in /<TAB>row or *<TAB>TOR code<TAB>reason`), when there is one.
The counts per TorchFix code are printed, and the torchlint findings under the mapped codes that
TorchFix does not report.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter, defaultdict

# TorchFix code -> the torchlint codes that cover it (empty: deliberately not covered).
COVERAGE: dict[str, frozenset[str]] = {
    "TOR001": frozenset({"TL504"}),
    "TOR002": frozenset({"TL014"}),
    "TOR003": frozenset({"TL503"}),
    "TOR004": frozenset({"TL504"}),
    "TOR101": frozenset({"TL504", "TL501"}),
    "TOR102": frozenset({"TL502"}),
    "TOR103": frozenset({"TL504", "TL501"}),
    "TOR104": frozenset(),
    "TOR105": frozenset(),
    "TOR106": frozenset({"TL207"}),
    "TOR107": frozenset({"TL206"}),
    "TOR108": frozenset({"TL205"}),
    "TOR201": frozenset(),
    "TOR202": frozenset(),
    "TOR203": frozenset(),
    "TOR401": frozenset(),
    "TOR402": frozenset(),
    "TOR403": frozenset(),
    "TOR801": frozenset(),
    "TOR901": frozenset(),
}
_LINE = re.compile(r"^(?P<path>[^:\n]+):(?P<row>\d+):(?P<column>\d+):\s+(?P<code>(?:TOR|TL)\d{3})\b(?P<rest>.*)$")


def parse(path: str, base: str) -> list[tuple[str, int, str, str]]:
    """(absolute file, row, code, message) for each finding line of a tool's output."""
    findings = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            match = _LINE.match(line.rstrip("\n"))
            if match:
                file = os.path.normpath(os.path.join(base, match["path"]))
                findings.append((file, int(match["row"]), match["code"], match["rest"].strip()))
    return findings


def load_judgments(path: str | None) -> list[tuple[str, int, str, str]]:
    judgments = []
    if path:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip() and not line.startswith("#"):
                    suffix, row, code, reason = line.rstrip("\n").split("\t", 3)
                    judgments.append((suffix, None if row == "*" else int(row), code, reason))
    return judgments


def reason_for(file: str, row: int, code: str, judgments) -> str | None:
    for suffix, judged_row, judged_code, reason in judgments:
        in_place = file.endswith(suffix) or (suffix.endswith("/") and suffix in file)
        if judged_row in (None, row) and judged_code == code and in_place:
            return reason
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("torchfix_output")
    parser.add_argument("torchlint_output")
    parser.add_argument("--torchfix-cwd", default=os.getcwd(), help="directory TorchFix ran in (its paths are relative)")
    parser.add_argument("--torchlint-cwd", default=os.getcwd(), help="directory torchlint ran in")
    parser.add_argument("--judgments", help="TSV of judged reasons for unmatched TorchFix findings")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list the torchlint-only findings")
    args = parser.parse_args(argv)

    torchfix = parse(args.torchfix_output, args.torchfix_cwd)
    torchlint = parse(args.torchlint_output, args.torchlint_cwd)
    judgments = load_judgments(args.judgments)
    reported: dict[tuple[str, int], set[str]] = defaultdict(set)
    for file, row, code, _ in torchlint:
        reported[(file, row)].add(code)

    totals, matched = Counter(), Counter()
    used: set[tuple[str, int, str]] = set()
    unmatched = []
    for file, row, code, message in torchfix:
        totals[code] += 1
        covering = COVERAGE.get(code, frozenset()) & reported.get((file, row), set())
        if covering:
            matched[code] += 1
            used.update((file, row, tl_code) for tl_code in covering)
        else:
            unmatched.append((file, row, code, message))

    print(f"{'TorchFix code':<14}{'findings':>9}{'same site':>10}{'not':>6}  torchlint code")
    for code in sorted(totals):
        covered_by = ",".join(sorted(COVERAGE.get(code, ()))) or "(not covered)"
        print(f"{code:<14}{totals[code]:>9}{matched[code]:>10}{totals[code] - matched[code]:>6}  {covered_by}")
    total, same = sum(totals.values()), sum(matched.values())
    print(f"{'all':<14}{total:>9}{same:>10}{total - same:>6}")

    if unmatched:
        print("\nTorchFix findings without a torchlint finding at the same site:")
        for file, row, code, message in unmatched:
            reason = reason_for(file, row, code, judgments) or "(not judged)"
            print(f"  {os.path.relpath(file)}:{row} {code} {message[:70]}\n      -> {reason}")

    mapped = {tl for codes in COVERAGE.values() for tl in codes}
    only = [(f, r, c, m) for f, r, c, m in torchlint if c in mapped and (f, r, c) not in used]
    print(f"\ntorchlint findings under the mapped codes that TorchFix does not report: {len(only)}")
    for code, count in sorted(Counter(c for _, _, c, _ in only).items()):
        print(f"  {code}: {count}")
    if args.verbose:
        for file, row, code, message in only:
            print(f"  {os.path.relpath(file)}:{row} {code} {message[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
