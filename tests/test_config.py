from __future__ import annotations

import json

from tests.conftest import run_torchlint

BAD = "import torch\nimport torch.nn.functional as F\nx = torch.Tensor(3)\ny = F.softmax(x)\n"


def _codes(result) -> list[tuple[str, str]]:
    return sorted((d["filename"].rsplit("/", 1)[1], d["code"]) for d in json.loads(result.stdout))


def test_pyproject_select_and_cli_override(project):
    (project / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL102"]\n')
    (project / "a.py").write_text(BAD)
    assert _codes(run_torchlint("check", "--output-format", "json", cwd=project)) == [("a.py", "TL102")]
    overridden = run_torchlint("check", "--select", "TL202", "--output-format", "json", cwd=project)
    assert _codes(overridden) == [("a.py", "TL202")]


def test_config_found_walking_up_from_a_subdirectory(project):
    (project / "pyproject.toml").write_text('[tool.torchlint]\nignore = ["TL202"]\n')
    sub = project / "pkg" / "sub"
    sub.mkdir(parents=True)
    (sub / "a.py").write_text(BAD)
    assert _codes(run_torchlint("check", "--output-format", "json", cwd=sub)) == [("a.py", "TL102")]


def test_per_file_ignores_and_extend_exclude(project):
    (project / "pyproject.toml").write_text(
        '[tool.torchlint]\nextend-exclude = ["legacy"]\n'
        '[tool.torchlint.per-file-ignores]\n"tests/*" = ["TL1"]\n'
    )
    for directory in ("tests", "legacy", "src"):
        (project / directory).mkdir()
        (project / directory / "m.py").write_text(BAD)
    found = run_torchlint("check", "--output-format", "json", cwd=project)
    paths = sorted((d["filename"].split("/")[-2], d["code"]) for d in json.loads(found.stdout))
    assert paths == [("src", "TL102"), ("src", "TL202"), ("tests", "TL202")]


def test_unknown_key_or_code_is_a_usage_error(project):
    (project / "a.py").write_text(BAD)
    (project / "pyproject.toml").write_text('[tool.torchlint]\nselct = ["TL102"]\n')
    result = run_torchlint("check", cwd=project)
    assert result.returncode == 2 and "unknown configuration key 'selct'" in result.stderr
    (project / "pyproject.toml").write_text('[tool.torchlint]\nignore = ["TL777"]\n')
    result = run_torchlint("check", cwd=project)
    assert result.returncode == 2 and "TL777" in result.stderr


def test_explicit_config_file(project):
    (project / "a.py").write_text(BAD)
    (project / "lint.toml").write_text('select = ["TL202"]\n')
    result = run_torchlint("check", "--config", "lint.toml", "--output-format", "json", cwd=project)
    assert _codes(result) == [("a.py", "TL202")]
