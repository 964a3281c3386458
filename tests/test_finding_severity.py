"""A finding may be less severe than its rule's usual level where the code shows it: TL303 on a
model kept on the CPU is a portability warning, where the same line fails on a moved model; a
precision loss in working code is a note, and a legacy spelling of it a hint. Notes are shown and
fail a run only under `--fail-on note` (or `fail-on = "note"`); hints are shown only under
`--show-hints` (or `show-hints = true`)."""

from __future__ import annotations

from pathlib import Path

from torchlint.config import Settings
from torchlint.diagnostics import Severity
from torchlint.engine import check_source
from torchlint.rules import get_rule

from tests.conftest import run_torchlint

# A policy whose model stays on the CPU: one output read with .numpy(), one that requires grad.
POLICY = (Path(__file__).parent / "fixtures" / "rules" / "TL303_model_kept_on_cpu.py").read_text()


def _severities(source: str) -> list[tuple[int, Severity]]:
    found = check_source(source, "agent.py", Settings(rules=(get_rule("TL303"),)))
    return [(d.location.row, d.severity) for d in found]


def test_numpy_of_a_model_output_is_a_warning_where_the_model_stays_on_the_cpu() -> None:
    assert _severities(POLICY) == [(16, Severity.WARNING), (20, Severity.ERROR)]


def test_the_same_line_is_an_error_once_the_file_moves_the_model() -> None:
    moved = POLICY + "\n\npolicy = Policy().cuda()\n"
    assert _severities(moved) == [(16, Severity.ERROR), (20, Severity.ERROR)]


# Hints (working code in a legacy spelling), a note (a precision loss in a file that takes
# `log1p` of the values, so cares about them near 0) and a warning (integers that may be a
# botched value).
HINTS = "import torch\n\nlengths = torch.LongTensor([3, 4])\nnorm = torch.norm(lengths.float())\n"
NOTE = "import torch\n\nx = torch.rand(3)\ngrowth = torch.exp(x) - 1\nback = torch.log1p(growth)\n"
NOTE_AND_WARNING = NOTE + "scale = torch.Tensor(3)\n"


def _check(project, source: str, *options: str):
    (project / "train.py").write_text(source)
    return run_torchlint("check", "--no-cache", "--output-format", "concise", *options, "train.py", cwd=project)


def _shown(result) -> list[list[str]]:
    return [line.split()[1:3] for line in result.stdout.splitlines()[:-1]]


def test_notes_are_shown_but_do_not_fail_the_run(project) -> None:
    result = _check(project, NOTE)
    assert result.returncode == 0, result.stdout
    assert _shown(result) == [["TL206", "[*]"]] and "[note]" in result.stdout
    assert result.stdout.splitlines()[-1] == "Found 1 finding (1 note, 1 fixable)."


def test_hints_are_shown_only_when_asked_for(project) -> None:
    assert _check(project, HINTS).stdout == "All checks passed!\n"
    for options in (("--show-hints",), ("--config", "show-hints = true")):
        result = _check(project, HINTS, *options)
        assert result.returncode == 0, result.stdout
        assert _shown(result) == [["TL102", "[*]"], ["TL504", "[hint]"]]
        assert result.stdout.splitlines()[-1] == "Found 2 findings (2 hints, 1 fixable)."
    (project / "pyproject.toml").write_text("[tool.torchlint]\nshow-hints = true\n")
    assert _shown(_check(project, HINTS)) == [["TL102", "[*]"], ["TL504", "[hint]"]]


def test_a_hidden_hint_is_not_fixed(project) -> None:
    assert _check(project, HINTS, "--fix").returncode == 0
    assert (project / "train.py").read_text() == HINTS
    _check(project, HINTS, "--fix", "--show-hints")
    assert "torch.tensor([3, 4], dtype=torch.int64)" in (project / "train.py").read_text()


def test_fail_on_sets_the_least_severe_finding_that_fails(project) -> None:
    assert _check(project, NOTE, "--fail-on", "note").returncode == 1
    assert _check(project, HINTS, "--show-hints", "--fail-on", "note").returncode == 0
    assert _check(project, HINTS, "--show-hints", "--fail-on", "hint").returncode == 1
    assert _check(project, NOTE_AND_WARNING).returncode == 1
    assert _check(project, NOTE_AND_WARNING, "--fail-on", "error").returncode == 0
    (project / "pyproject.toml").write_text('[tool.torchlint]\nfail-on = "note"\n')
    assert _check(project, NOTE).returncode == 1
    assert _check(project, NOTE, "--fail-on", "warning").returncode == 0  # the option wins


def test_fail_on_rejects_what_it_cannot_mean_before_checking(project) -> None:
    for options, error in (
        (("--fail-on", "loud"), "unknown level or verdict 'loud'"),
        (("--fail-on", "error,note"), "name one level"),
        (("--fail-on", "confirmed"), "verdicts need --runtime"),
        (("--config", 'fail-on = "loud"'), "'fail-on' in --config"),
    ):
        result = _check(project, NOTE_AND_WARNING, *options)
        assert result.returncode == 2 and error in result.stderr and result.stdout == "", options


def test_notes_are_information_and_hints_hints_in_the_editor() -> None:
    from lsprotocol import types

    from torchlint.server.convert import _SEVERITIES

    rules = (get_rule("TL102"), get_rule("TL206"))
    found = check_source(HINTS + NOTE_AND_WARNING, "train.py", Settings(rules=rules, show_hints=True))
    assert [d.severity for d in found] == [Severity.HINT, Severity.NOTE, Severity.WARNING]
    assert _SEVERITIES[Severity.NOTE] == types.DiagnosticSeverity.Information
    assert _SEVERITIES[Severity.HINT] == types.DiagnosticSeverity.Hint
