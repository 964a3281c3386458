"""Helpers for runtime tests: write a script, point findings at its text, run it."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from torchlint.diagnostics import Diagnostic, Location, Severity

RUNTIME_TESTS = Path(__file__).parent
NO_TORCH = "runtime mode needs torch, which is not installed: see the README's test command"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without torch, each runtime test is skipped with the reason in the summary (a skip raised
    while this conftest loads would end `pytest tests/runtime` in an internal error)."""
    if importlib.util.find_spec("torch") is not None:
        return
    for item in items:
        if item.path.is_relative_to(RUNTIME_TESTS):
            item.add_marker(pytest.mark.skip(reason=NO_TORCH))


def finding(path: Path, code: str, text: str, occurrence: int = 1) -> Diagnostic:
    """A finding whose range is the `occurrence`-th appearance of `text` in the file."""
    source = path.read_text()
    index = -1
    for _ in range(occurrence):
        index = source.index(text, index + 1)
    row = source.count("\n", 0, index) + 1
    column = index - (source.rfind("\n", 0, index) + 1) + 1
    end_index = index + len(text)
    end_row = source.count("\n", 0, end_index) + 1
    end_column = end_index - (source.rfind("\n", 0, end_index) + 1) + 1
    return Diagnostic(
        code=code, name=code.lower(), message="static finding", filename=str(path),
        location=Location(row, column), end_location=Location(end_row, end_column),
        severity=Severity.ERROR,
    )


def line_of(path: Path, text: str, occurrence: int = 1) -> int:
    return finding(path, "X", text, occurrence).location.row


@pytest.fixture
def script(tmp_path, monkeypatch):
    """write(source, name="train.py") -> Path; runs happen with tmp_path as cwd."""
    monkeypatch.chdir(tmp_path)

    def write(source: str, name: str = "train.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source).lstrip())
        return path

    return write


def verdicts(report, code: str | None = None) -> list[tuple[str, int, str]]:
    return [
        (d.code, d.location.row, d.runtime)
        for d in report.diagnostics
        if code is None or d.code == code
    ]
