"""A finding may be less severe than its rule's usual level where the code shows it: TL303 on a
model kept on the CPU is a portability warning, where the same line fails on a moved model; a
legacy spelling of working code is a note. Notes are shown and fail a run only under
`--fail-on note` (or `fail-on = "note"`)."""

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


# A note (working code in a legacy spelling) and a warning (integers that may be a botched value).
NOTE_AND_WARNING = "import torch\n\nlengths = torch.LongTensor([3, 4])\nscale = torch.Tensor(3)\n"
NOTE_ONLY = "import torch\n\nlengths = torch.LongTensor([3, 4])\nnorm = torch.norm(lengths.float())\n"


def _check(project, source: str, *options: str):
    (project / "train.py").write_text(source)
    return run_torchlint("check", "--no-cache", "--output-format", "concise", *options, "train.py", cwd=project)


def test_notes_are_shown_but_do_not_fail_the_run(project) -> None:
    result = _check(project, NOTE_ONLY)
    assert result.returncode == 0, result.stdout
    assert [line.split()[1:3] for line in result.stdout.splitlines()[:-1]] == [["TL102", "[*]"], ["TL504", "[note]"]]
    assert result.stdout.splitlines()[-1] == "Found 2 findings (2 notes, 1 fixable)."


def test_fail_on_sets_the_least_severe_finding_that_fails(project) -> None:
    assert _check(project, NOTE_ONLY, "--fail-on", "note").returncode == 1
    assert _check(project, NOTE_AND_WARNING).returncode == 1
    assert _check(project, NOTE_AND_WARNING, "--fail-on", "error").returncode == 0
    (project / "pyproject.toml").write_text('[tool.torchlint]\nfail-on = "note"\n')
    assert _check(project, NOTE_ONLY).returncode == 1
    assert _check(project, NOTE_ONLY, "--fail-on", "warning").returncode == 0  # the option wins


def test_fail_on_rejects_what_it_cannot_mean_before_checking(project) -> None:
    for options, error in (
        (("--fail-on", "loud"), "unknown level or verdict 'loud'"),
        (("--fail-on", "error,note"), "name one level"),
        (("--fail-on", "confirmed"), "verdicts need --runtime"),
        (("--config", 'fail-on = "loud"'), "'fail-on' in --config"),
    ):
        result = _check(project, NOTE_AND_WARNING, *options)
        assert result.returncode == 2 and error in result.stderr and result.stdout == "", options


def test_notes_are_information_in_the_editor() -> None:
    from lsprotocol import types

    from torchlint.server.convert import _SEVERITIES

    found = check_source(NOTE_AND_WARNING, "train.py", Settings(rules=(get_rule("TL102"),)))
    assert [d.severity for d in found] == [Severity.NOTE, Severity.WARNING]
    assert _SEVERITIES[Severity.NOTE] == types.DiagnosticSeverity.Information
