"""`--baseline`/`--write-baseline` and `--diff-base`: report only what is new."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import run_torchlint

OLD = "import torch\n\nx = torch.Tensor(3)\ny = torch.Tensor(3)\n"


def findings(result) -> list[tuple[str, int, str]]:
    return [(d["filename"].rsplit("/", 1)[-1], d["location"]["row"], d["code"]) for d in json.loads(result.stdout)]


def test_a_baseline_survives_edits_above_and_reports_new_findings(project) -> None:
    (project / "a.py").write_text(OLD)
    written = run_torchlint("check", "--write-baseline", "baseline.json", cwd=project)
    assert written.returncode == 0, written.stderr
    assert "Wrote 2 findings to the baseline baseline.json." in written.stderr
    entries = json.loads((project / "baseline.json").read_text())["findings"]
    assert [(e["file"], e["line"], e["index"]) for e in entries] == [
        ("a.py", "x = torch.Tensor(3)", 0), ("a.py", "y = torch.Tensor(3)", 0)
    ]
    # Rows added above, and a formatter's spacing: nothing new.
    (project / "a.py").write_text("import torch\n\n# a comment\n\nx  =  torch.Tensor( 3 )\ny = torch.Tensor(3)\n")
    assert run_torchlint("check", "--baseline", "baseline.json", cwd=project).returncode == 0
    (project / "a.py").write_text("import torch\n\nx = torch.Tensor(3)\nz = torch.Tensor(4)\nx = torch.Tensor(3)\n")
    result = run_torchlint("check", "--baseline", "baseline.json", "--output-format", "json", cwd=project)
    # The second identical row is a second occurrence: new, as is z; y's entry is gone.
    assert findings(result) == [("a.py", 4, "TL102"), ("a.py", 5, "TL102")]
    assert "torchlint: 1 baseline entry no longer occurs (fixed or changed)" in result.stderr


def test_a_baseline_that_is_not_one_is_a_usage_error(project) -> None:
    (project / "a.py").write_text(OLD)
    (project / "b.json").write_text("[]")
    result = run_torchlint("check", "--baseline", "b.json", cwd=project)
    assert result.returncode == 2
    assert result.stderr == "torchlint: error: b.json is not a torchlint baseline (write one with --write-baseline)\n"


def git(project, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=project, check=True,
                   capture_output=True)


def test_diff_base_reports_changed_rows_follows_renames_and_counts_untracked_files(project) -> None:
    git(project, "init", "-q", "-b", "main")
    (project / "a.py").write_text(OLD)
    (project / "old_name.py").write_text(OLD + "# padding so that a rename is detected\n" * 5)
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "first")
    git(project, "checkout", "-q", "-b", "feature")
    (project / "a.py").write_text(OLD.replace("y = torch.Tensor(3)", "y = torch.Tensor(5)"))
    git(project, "mv", "old_name.py", "new_name.py")
    git(project, "commit", "-q", "-am", "second")
    (project / "untracked.py").write_text(OLD)
    result = run_torchlint("check", "--diff-base", "main", "--output-format", "json", cwd=project)
    assert findings(result) == [("a.py", 4, "TL102"), ("untracked.py", 3, "TL102"), ("untracked.py", 4, "TL102")]
    unknown = run_torchlint("check", "--diff-base", "no-such-ref", cwd=project)
    assert unknown.returncode == 2 and unknown.stderr.startswith("torchlint: error: --diff-base: git merge-base failed")
