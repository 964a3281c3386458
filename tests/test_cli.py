from __future__ import annotations

import json
import textwrap

from tests.conftest import run_torchlint

BAD = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F

    x = torch.Tensor([3, 4])
    y = F.softmax(x)
    """
)


def test_clean_file_exits_zero(project):
    (project / "ok.py").write_text("import torch\nx = torch.tensor([1.0])\n")
    result = run_torchlint("check", "ok.py", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "All checks passed!\n"


def test_findings_exit_one_with_ruff_like_text(project):
    (project / "bad.py").write_text(BAD)
    result = run_torchlint("check", "--show-hints", "--no-color", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("bad.py:4:5: TL102 [*] [hint] `torch.Tensor(...)` builds a tensor of these values")
    assert "4 | x = torch.Tensor([3, 4])" in lines
    assert "  |     ^^^^^^^^^^^^^^^^^^^^ TL102" in lines
    assert "  = help: Replace with `torch.tensor(...)`" in lines
    # The TL202 fix is unsafe: counted apart, as `--unsafe-fixes` would offer it.
    assert lines[-1] == "Found 2 findings (1 hint, 1 fixable; 1 more with `--unsafe-fixes`)."


def test_concise_quiet_and_exit_zero(project):
    (project / "bad.py").write_text(BAD)
    result = run_torchlint("check", "--show-hints", "--output-format", "concise", "-q", "--exit-zero", cwd=project)
    assert result.returncode == 0
    assert [line.split(" ", 2)[:2] for line in result.stdout.splitlines()] == [
        ["bad.py:4:5:", "TL102"], ["bad.py:5:5:", "TL202"],
    ]


def test_select_ignore_and_prefixes(project):
    (project / "bad.py").write_text(BAD)
    only_numerics = run_torchlint("check", "--select", "TL2", "--output-format", "json", cwd=project)
    assert [d["code"] for d in json.loads(only_numerics.stdout)] == ["TL202"]
    ignored = run_torchlint("check", "--ignore", "TL102,TL202", cwd=project)
    assert ignored.returncode == 0
    extended = run_torchlint("check", "--show-hints", "--select", "TL102", "--extend-select", "TL20",
                             "--output-format", "json", cwd=project)
    assert [d["code"] for d in json.loads(extended.stdout)] == ["TL102", "TL202"]


def test_usage_errors_are_one_line_and_exit_two(project):
    (project / "bad.py").write_text(BAD)
    cases = [
        ("check", "--select", "TL999"),
        ("check", "missing.py"),
        ("check", "--output-format", "xml"),
        ("rule", "TL999"),
        ("check", "--config", "nowhere.toml"),
    ]
    for args in cases:
        result = run_torchlint(*args, cwd=project)
        assert result.returncode == 2, args
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert result.stderr.startswith("torchlint: error:"), result.stderr
        assert "Traceback" not in result.stderr


def test_statistics_counts_per_code(project):
    (project / "bad.py").write_text(BAD + "z = torch.LongTensor(2)\n")
    result = run_torchlint("check", "--show-hints", "--statistics", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].split("\t")[:2] == ["2", "TL102"]


def test_noqa_comments(project):
    source = BAD.replace("x = torch.Tensor([3, 4])", "x = torch.Tensor([3, 4])  # noqa: TL102")
    source = source.replace("y = F.softmax(x)", "y = F.softmax(x)  # noqa")
    (project / "a.py").write_text(source)
    (project / "b.py").write_text("# torchlint: noqa\n" + BAD)
    (project / "c.py").write_text(BAD + "# torchlint: noqa: TL202\n")
    (project / "d.py").write_text(BAD.replace("F.softmax(x)", "F.softmax(x)  # noqa: TL102"))
    result = run_torchlint("check", "--show-hints", "--output-format", "json", cwd=project)
    found = sorted((d["filename"].rsplit("/", 1)[1], d["code"]) for d in json.loads(result.stdout))
    # d.py's `# noqa: TL102` sits on the softmax row, where TL102 does not fire: unused (TL903).
    assert found == [("c.py", "TL102"), ("d.py", "TL102"), ("d.py", "TL202"), ("d.py", "TL903")]


def test_same_output_for_any_job_count(project):
    for index in range(12):
        (project / f"m{index}.py").write_text(BAD * (index % 3 + 1))
    one = run_torchlint("check", "--show-hints", "-j", "1", "--output-format", "json", cwd=project)
    two = run_torchlint("check", "--show-hints", "-j", "2", "--output-format", "json", cwd=project)
    assert one.stdout == two.stdout and len(json.loads(one.stdout)) == 2 * (1 + 2 + 3) * 4


def test_rule_command_prints_the_doc(project):
    result = run_torchlint("rule", "tl102", cwd=project)
    assert result.returncode == 0
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in result.stdout
    assert "Severity: warning · Default: on · Fix: safe" in result.stdout


def test_rule_all_json_lists_every_rule(project):
    from torchlint.rules import all_rules

    listed = json.loads(run_torchlint("rule", "--all", "--output-format", "json", cwd=project).stdout)
    assert [entry["code"] for entry in listed] == [rule.code for rule in all_rules()]
    assert set(listed[0]) == {"code", "name", "summary", "severity", "default", "fixable", "runtime_only"}


def test_version_and_no_color(project):
    assert run_torchlint("--version", cwd=project).stdout.startswith("torchlint, version ")
    (project / "bad.py").write_text(BAD)
    assert "\033[" not in run_torchlint("check", cwd=project, env={"NO_COLOR": "1"}).stdout


def test_static_check_never_imports_torch_or_the_checked_code(project):
    import subprocess
    import sys

    from tests.conftest import REPO

    (project / "sideeffect.py").write_text("import torch\nopen('ran.txt', 'w').write('imported')\nx = torch.Tensor(3)\n")
    probe = (
        "import sys\n"
        "sys.argv = ['torchlint', 'check', '--select', 'ALL', '-j', '1', '-q', '--no-cache', '.']\n"
        "from torchlint.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('torch' in sys.modules, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert "TL102" in result.stdout
    assert result.stderr.strip().splitlines()[-1] == "False"
    assert not (project / "ran.txt").exists()
