"""Fix every file of a real library and re-parse it: does `--fix --unsafe-fixes` keep real code valid?

Usage: python benchmarks/fix_corpus.py [--package NAME==VERSION ...] [--jobs N]

Downloads the pinned wheels (`pip download --no-deps --only-binary :all:`, so pip needs an index)
into a temporary directory, unpacks each one and runs torchlint's fixer over every .py file in it,
as `torchlint check --fix --unsafe-fixes --select ALL` does (every rule that is not runtime-only).
Per package it prints the files and lines, the fixes applied per code, the fixes the fixer
dropped because their result would not compile, the files that parsed (libcst) and compiled
before the fix but not after it, and whether a second run settles (finds nothing to fix). Files
that did not parse or compile before the fix are counted, not checked.

`--package` replaces the default list (`PACKAGES`): give it once per package to run.
Exits 1 when a file broke, a package did not settle, or the fixer failed on a file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from torchlint.config import Settings
from torchlint.fix import fix_files
from torchlint.rules import all_rules
from wheels import PINNED, download, wheel_of

# Libraries full of PyTorch code, pinned so that runs compare.
PACKAGES = ("timm==1.0.31", "diffusers==0.42.1")
EVERY_RULE = tuple(rule for rule in all_rules() if not rule.runtime_only)


@dataclass
class CorpusReport:
    requirement: str
    files: int = 0
    lines: int = 0
    seconds: float = 0.0
    invalid_before: int = 0  # files that did not parse or compile before the fix
    fixes: Counter = field(default_factory=Counter)
    dropped: list[str] = field(default_factory=list)  # the fixer's problems: fixes it did not apply
    internal_errors: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.broken or self.unsettled or self.internal_errors)


def _is_valid(data: bytes, path: str) -> bool:
    """Does the file parse with libcst and compile with CPython?"""
    try:
        cst.parse_module(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are not our concern
            compile(data, path, "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError):
        return False
    return True


def fix_corpus(requirement: str, root: Path, jobs: int) -> CorpusReport:
    """Fix every .py file under `root` twice and check what the first run wrote."""
    report = CorpusReport(requirement)
    settings = Settings(rules=EVERY_RULE, root=str(root))
    original = {str(path): path.read_bytes() for path in sorted(root.rglob("*.py"))}
    report.files = len(original)
    report.lines = sum(data.count(b"\n") for data in original.values())
    valid_before = {path for path, data in original.items() if _is_valid(data, path)}
    report.invalid_before = report.files - len(valid_before)
    files = [(path, str(Path(path).relative_to(root))) for path in original]

    start = time.perf_counter()
    results = fix_files(files, settings, jobs=jobs, unsafe=True)
    report.seconds = time.perf_counter() - start
    for result in results:
        report.fixes.update(result.fixed)
        report.dropped.extend(result.problems)
        if result.internal_error:
            report.internal_errors.append(result.internal_error)

    report.broken = [
        name for path, name in files if path in valid_before and not _is_valid(Path(path).read_bytes(), path)
    ]
    second = fix_files(files, settings, jobs=jobs, unsafe=True)
    report.unsettled = [
        f"{result.filename} ({', '.join(sorted(result.fixed))})" for result in second if result.fixed or result.written
    ]
    return report


def _listed(title: str, items: list[str]) -> None:
    print(f"  {title}: {len(items)}")
    for item in items:
        print(f"    {item}")


def print_report(report: CorpusReport) -> None:
    print(f"{report.requirement}: {report.files:,} files, {report.lines:,} lines, fixed in {report.seconds:.1f} s")
    by_code = ", ".join(f"{code} {count}" for code, count in sorted(report.fixes.items()))
    print(f"  fixes applied: {sum(report.fixes.values()):,}" + (f" ({by_code})" if by_code else ""))
    print(f"  files that did not parse or compile before the fix (not checked): {report.invalid_before}")
    _listed("fixes dropped (their result would not compile)", report.dropped)
    _listed("internal errors", report.internal_errors)
    _listed("files broken by the fix (no longer parse or compile)", report.broken)
    print(f"  settled (a second run fixes nothing): {'no' if report.unsettled else 'yes'}")
    for item in report.unsettled:
        print(f"    still fixes {item}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", action="append", metavar="NAME==VERSION",
                        help=f"a pinned package to fix, instead of the default ones ({', '.join(PACKAGES)})")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    requirements = args.package or list(PACKAGES)
    if not all(PINNED.fullmatch(item) for item in requirements):
        parser.error("each --package must be pinned: NAME==VERSION")

    with tempfile.TemporaryDirectory(prefix="fix_corpus-") as temporary:
        wheels = Path(temporary) / "wheels"
        download(requirements, wheels)
        reports = []
        for requirement in requirements:
            root = Path(temporary) / requirement.replace("==", "-")
            with zipfile.ZipFile(wheel_of(requirement, wheels)) as wheel:
                wheel.extractall(root)
            reports.append(fix_corpus(requirement, root, args.jobs))
            print_report(reports[-1])
    sys.exit(1 if any(report.failed for report in reports) else 0)


if __name__ == "__main__":
    main()
