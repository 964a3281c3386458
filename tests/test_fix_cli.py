"""`torchlint check --fix / --diff / --unsafe-fixes / --show-fixes` through the command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from torchlint.cli import cli
from torchlint.fix import unified_diff
from tests.conftest import run_torchlint
from tests.test_fix import ALL_FIXED, SAFE_FIXED, SOURCE, _patch_tl102_fix


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run in an empty directory (no pyproject.toml above it is used) holding `head.py`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    (tmp_path / "head.py").write_text(SOURCE)
    return tmp_path


def run(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, ["check", "--show-hints", *args], catch_exceptions=False)


def test_safe_fixes_are_marked_and_hidden_unsafe_ones_counted(in_tmp) -> None:
    result = run("head.py", "--output-format", "concise")
    lines = result.stdout.splitlines()
    assert [line.split()[1:3] for line in lines[:-1]] == [
        ["TL201", "[*]"], ["TL202", "`F.softmax`"], ["TL201", "[*]"], ["TL202", "`F.softmax`"],
        ["TL102", "[*]"], ["TL201", "[*]"],
    ]
    assert lines[-1] == "Found 6 findings (1 hint, 4 fixable; 2 more with `--unsafe-fixes`)."
    assert result.exit_code == 1


def test_unsafe_fixes_without_fix_marks_them_available(in_tmp) -> None:
    result = run("head.py", "--output-format", "concise", "--unsafe-fixes")
    lines = result.stdout.splitlines()
    assert all(line.split()[2] == "[*]" for line in lines[:-1])
    assert lines[-1] == "Found 6 findings (1 hint, 6 fixable)."
    assert (in_tmp / "head.py").read_text() == SOURCE


def test_statistics_mark_rules_with_fixes(in_tmp) -> None:
    assert run("head.py", "--statistics").stdout.splitlines()[:3] == [
        "3\tTL201\t[*] log-of-softmax", "2\tTL202\t    softmax-without-dim", "1\tTL102\t[*] legacy-tensor-constructor",
    ]
    assert run("head.py", "--statistics", "--unsafe-fixes").stdout.splitlines()[1] == "2\tTL202\t[*] softmax-without-dim"


def test_fix_applies_safe_fixes_and_reports_what_remains(in_tmp) -> None:
    result = run("head.py", "--fix")
    assert (in_tmp / "head.py").read_text() == SAFE_FIXED
    # The remaining findings are shown on the fixed file's lines.
    assert "6 |     a = F.log_softmax(logits)\n" in result.stdout
    assert result.stdout.count("TL202 `F.log_softmax` without `dim`") == 2
    assert result.stdout.endswith("Found 6 findings (4 fixed, 2 remaining; 2 more with `--unsafe-fixes`).\n")
    assert result.stderr == ""
    assert result.exit_code == 1


def test_fix_with_unsafe_fixes_fixes_everything_and_exits_zero(in_tmp) -> None:
    result = run("head.py", "--fix", "--unsafe-fixes")
    assert (in_tmp / "head.py").read_text() == ALL_FIXED
    assert result.stdout == "Found 6 findings (6 fixed, 0 remaining).\n"
    assert result.exit_code == 0


def test_exit_non_zero_on_fix(in_tmp) -> None:
    assert run("head.py", "--fix", "--unsafe-fixes", "--exit-non-zero-on-fix").exit_code == 1
    assert run("head.py", "--fix", "--unsafe-fixes", "--exit-non-zero-on-fix").exit_code == 0  # nothing left


def test_second_fix_run_changes_nothing(in_tmp) -> None:
    run("head.py", "--fix", "--unsafe-fixes")
    before = os.stat(in_tmp / "head.py")
    result = run("head.py", "--fix", "--unsafe-fixes", "--show-fixes")
    assert result.stdout == "All checks passed!\n" and result.exit_code == 0
    after = os.stat(in_tmp / "head.py")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not even rewritten


def test_show_fixes_lists_per_file_and_rule(in_tmp) -> None:
    (in_tmp / "other.py").write_text("import torch\nx = torch.Tensor([1])\n")
    result = run(".", "--fix", "--unsafe-fixes", "--show-fixes")
    assert result.stdout == (
        "Fixed 7 findings:\n"
        "- head.py:\n"
        "    3 × TL201 (log-of-softmax)\n"
        "    2 × TL202 (softmax-without-dim)\n"
        "    1 × TL102 (legacy-tensor-constructor)\n"
        "- other.py:\n"
        "    1 × TL102 (legacy-tensor-constructor)\n"
        "\n"
        "Found 7 findings (7 fixed, 0 remaining).\n"
    )


def test_show_fixes_keeps_json_output_parseable(in_tmp) -> None:
    result = run("head.py", "--fix", "--show-fixes", "--output-format", "json")
    remaining = json.loads(result.stdout)
    assert [d["code"] for d in remaining] == ["TL202", "TL202"]
    assert remaining[0]["fix"]["edits"] == [
        {"content": "F.log_softmax(logits, dim=-1)", "location": {"row": 6, "column": 9},
         "end_location": {"row": 6, "column": 30}},
    ]
    assert result.stderr.startswith("Fixed 4 findings:\n- head.py:\n")


def test_diff_prints_the_change_and_writes_nothing(in_tmp) -> None:
    result = run("head.py", "--diff")
    assert result.stdout == unified_diff(SOURCE, SAFE_FIXED, "head.py")
    assert result.stdout.startswith("--- head.py\n+++ head.py\n@@ -3,8 +3,8 @@\n")
    assert result.stderr == "Would fix 4 findings.\n"
    assert result.exit_code == 1
    assert (in_tmp / "head.py").read_text() == SOURCE


def test_diff_with_fix_writes_nothing_and_unsafe_fixes_count(in_tmp) -> None:
    result = run("head.py", "--fix", "--diff", "--unsafe-fixes", "--show-fixes")
    assert result.stdout == unified_diff(SOURCE, ALL_FIXED, "head.py")
    assert result.stderr == (
        "Would fix 6 findings:\n- head.py:\n    3 × TL201 (log-of-softmax)\n    2 × TL202 (softmax-without-dim)\n"
        "    1 × TL102 (legacy-tensor-constructor)\nWould fix 6 findings.\n"
    )
    assert (in_tmp / "head.py").read_text() == SOURCE


def test_diff_exits_zero_when_nothing_would_change(in_tmp) -> None:
    (in_tmp / "head.py").write_text(ALL_FIXED)
    result = run("head.py", "--diff", "--unsafe-fixes")
    assert (result.stdout, result.stderr, result.exit_code) == ("", "No fixes would be applied.\n", 0)
    # Findings without an applicable fix do not make a diff.
    (in_tmp / "head.py").write_text(SAFE_FIXED)
    assert run("head.py", "--diff", "-q").exit_code == 0
    assert run("head.py", "--diff", "--unsafe-fixes", "-q").exit_code == 1
    assert run("head.py", "--diff", "--unsafe-fixes", "--exit-zero", "-q").exit_code == 0


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs patch(1)")
@pytest.mark.parametrize("newline, final", [("\n", True), ("\r\n", True), ("\n", False)])
def test_the_diff_applies_with_patch(in_tmp, newline: str, final: bool) -> None:
    source = SOURCE if final else SOURCE.rstrip("\n") + "  # no final newline"
    path = in_tmp / "head.py"
    path.write_bytes(source.replace("\n", newline).encode())
    result = run("head.py", "--diff", "--unsafe-fixes")
    (in_tmp / "copy.py").write_bytes(path.read_bytes())
    # (`stdout_bytes`: click's `Result.stdout` turns CRLF into LF.)
    patched = subprocess.run(["patch", "--binary", "-s", "copy.py"], input=result.stdout_bytes,
                             cwd=in_tmp, capture_output=True)
    assert patched.returncode == 0, patched.stderr
    run("head.py", "--fix", "--unsafe-fixes")
    assert (in_tmp / "copy.py").read_bytes() == path.read_bytes()


def test_invalid_fix_is_reported_on_one_line_and_the_file_left_as_it_was(in_tmp, monkeypatch) -> None:
    _patch_tl102_fix(monkeypatch, lambda fixed, old: fixed[:-1])
    path = in_tmp / "head.py"
    path.write_text("import torch\nc = torch.Tensor([1, 2])\n")
    result = run("head.py", "--fix", "--output-format", "concise", "--fail-on", "hint")
    assert path.read_text() == "import torch\nc = torch.Tensor([1, 2])\n"
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("torchlint: error: head.py:2:5: the TL102 fix was not applied: ")
    assert result.stdout.splitlines()[-1] == "Found 1 finding (1 hint, 1 fixable)."
    assert result.exit_code == 1


def test_fix_in_parallel_processes(in_tmp) -> None:
    for number in range(5):
        (in_tmp / f"m{number}.py").write_text(SOURCE)
    completed = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", ".", "--show-hints", "--fix", "--unsafe-fixes", "-j", "2"],
        cwd=in_tmp, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))},
    )
    assert completed.stdout == "Found 36 findings (36 fixed, 0 remaining).\n", completed.stderr
    assert completed.returncode == 0
    for number in range(5):
        assert (in_tmp / f"m{number}.py").read_text() == ALL_FIXED


def test_fix_cannot_be_combined_with_runtime(in_tmp) -> None:
    result = run("head.py", "--fix", "--runtime")
    assert result.exit_code == 2
    assert result.stderr == "torchlint: error: --fix and --diff cannot be combined with --runtime\n"
    assert (in_tmp / "head.py").read_text() == SOURCE


def test_an_internal_error_is_kept_to_its_file(in_tmp, monkeypatch) -> None:
    import torchlint.fix

    (in_tmp / "other.py").write_text("import torch\nx = torch.Tensor([1])\n")
    real_fix_text = torchlint.fix.fix_text

    def failing_for_head(text, filename, settings, unsafe=False):
        if filename == "head.py":
            raise ValueError("boom")
        return real_fix_text(text, filename, settings, unsafe)

    monkeypatch.setattr(torchlint.fix, "fix_text", failing_for_head)
    result = run(".", "--fix", "--no-cache", "-j", "1")
    assert result.stderr == "torchlint: internal error: head.py: ValueError: boom\n"
    assert result.exit_code == 2
    assert (in_tmp / "head.py").read_text() == SOURCE
    assert (in_tmp / "other.py").read_text() == "import torch\nx = torch.tensor([1], dtype=torch.get_default_dtype())\n"


def test_fix_reads_the_cache_for_files_with_nothing_to_fix(in_tmp, monkeypatch) -> None:
    import torchlint.fix

    run("head.py", "--fix")  # writes the file and caches the findings of its new text
    log = in_tmp / "calls.log"  # files are fixed in worker processes: they report through a file
    real_fix_text = torchlint.fix.fix_text

    def counting(text, filename, settings, unsafe=False):
        with open(log, "a") as stream:
            stream.write(filename + "\n")
        return real_fix_text(text, filename, settings, unsafe)

    def calls() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    monkeypatch.setattr(torchlint.fix, "fix_text", counting)
    result = run("head.py", "--fix", "--output-format", "concise")
    assert calls() == []  # the cached findings (two TL202) have no safe fix: nothing to do
    assert [line.split()[1] for line in result.stdout.splitlines()[:-1]] == ["TL202", "TL202"]
    result = run("head.py", "--fix", "--unsafe-fixes")
    assert calls() == ["head.py"]
    assert (in_tmp / "head.py").read_text() == ALL_FIXED
    assert result.exit_code == 0


def test_diff_of_stdin_is_the_diff_of_the_same_file_by_path(project) -> None:
    """Editor wrappers pipe the buffer: `check - --diff` shows what `check FILE --diff` shows."""
    source = "import torch\nx = torch.Tensor([3.0])\n"
    (project / "m.py").write_text(source)
    by_path = run_torchlint("check", "--show-hints", "--diff", "m.py", cwd=project)
    piped = run_torchlint("check", "--show-hints", "-", "--diff", "--stdin-filename", "m.py", cwd=project,
                          stdin=source)
    assert by_path.returncode == piped.returncode == 1
    assert piped.stdout == by_path.stdout and "+x = torch.tensor([3.0])" in piped.stdout
    assert piped.stderr.strip() == "Would fix 1 finding."
    clean = run_torchlint("check", "-", "--diff", cwd=project, stdin="x = 1\n")
    assert (clean.returncode, clean.stdout, clean.stderr.strip()) == (0, "", "No fixes would be applied.")
    assert (project / "m.py").read_text() == source
