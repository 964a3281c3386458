"""Configuration keys and lookup from issue 16: fix keys, the inferred target torch version,
per-file configuration, `--isolated`, `--config KEY=VALUE`, typed values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_torchlint
from torchlint.config import Options, resolve_settings

# TL102 on values (a safe fix) and TL202 (an unsafe fix).
BAD = "import torch\nimport torch.nn.functional as F\nx = torch.Tensor([3.0])\ny = F.softmax(x)\n"


def found(result) -> list[tuple[str, str, bool]]:
    return [(d["filename"].rsplit("/", 1)[-1], d["code"], d["fix"] is not None and d["fix"]["applicability"] == "safe")
            for d in json.loads(result.stdout)]


def test_fix_keys_have_ruffs_meaning(project: Path) -> None:
    (project / "a.py").write_text(BAD)
    (project / "pyproject.toml").write_text('[tool.torchlint]\nunfixable = ["TL102"]\nextend-safe-fixes = ["TL202"]\n')
    result = run_torchlint("check", "--show-hints", "--output-format", "json", cwd=project)
    assert [(code, d["fix"]) for (_, code, _), d in zip(found(result), json.loads(result.stdout))][0] == ("TL102", None)
    assert found(result)[1] == ("a.py", "TL202", True)
    # The result cache keeps the rules' own fixes: dropping the keys brings them back.
    (project / "pyproject.toml").write_text("[tool.torchlint]\n")
    again = run_torchlint("check", "--show-hints", "--output-format", "json", cwd=project)
    assert found(again) == [("a.py", "TL102", True), ("a.py", "TL202", False)]
    (project / "pyproject.toml").write_text('[tool.torchlint]\nfix = true\nextend-unsafe-fixes = ["TL102"]\n')
    assert run_torchlint("check", cwd=project).returncode == 1
    assert (project / "a.py").read_text() == BAD  # TL102's fix is unsafe now: `fix = true` leaves it
    (project / "pyproject.toml").write_text('[tool.torchlint]\nfix = true\nunsafe-fixes = true\n')
    assert run_torchlint("check", "--no-fix", cwd=project).returncode == 1
    assert (project / "a.py").read_text() == BAD
    assert run_torchlint("check", "--show-hints", cwd=project).returncode == 0
    assert "torch.tensor([3.0])" in (project / "a.py").read_text()


@pytest.mark.parametrize("pyproject, expected", [
    ('[project]\ndependencies = ["numpy", "torch>=2.6,<3"]\n', (2, 6)),
    ('[project]\ndependencies = ["torchvision>=0.20", "torch ~= 2.4.1"]\n'
     '[project.optional-dependencies]\ngpu = ["torch[cuda]==2.5.*"]\n', (2, 4)),
    ('[tool.poetry.dependencies]\ntorch = {version = "^2.3"}\n', (2, 3)),
    ('[tool.pdm.dev-dependencies]\ntest = ["torch>2.2"]\n', (2, 2)),
    ('[project]\ndependencies = ["torch"]\n', None),
    ('[project]\ndependencies = ["torch>=2.6"]\n[tool.torchlint]\ntarget-torch-version = "2.1"\n', (2, 1)),
])
def test_target_torch_version_is_inferred_from_the_declared_requirement(tmp_path: Path, pyproject, expected) -> None:
    (tmp_path / "pyproject.toml").write_text(pyproject)
    assert resolve_settings(Options(), tmp_path).target_torch_version == expected


@pytest.mark.parametrize("pyproject, expected", [
    ('[project]\ndependencies = ["torch>=1.10,<1.13"]\n', (1, 13)),
    ('[project]\ndependencies = ["torch>=1.10,<1.13.1"]\n', (1, 14)),  # admits 1.13.0
    ('[project]\ndependencies = ["torch<=1.12.1"]\n', (1, 13)),
    ('[project]\ndependencies = ["torch==2.3.*"]\n', (2, 4)),
    ('[project]\ndependencies = ["torch~=2.3"]\n', (3, 0)),
    ('[tool.poetry.dependencies]\ntorch = "^1.12"\n', (2, 0)),
    # The project's versions lie below the highest bound; one unbounded requirement lifts it.
    ('[project]\ndependencies = ["torch<1.13"]\n[project.optional-dependencies]\nnew = ["torch>=2,<2.2"]\n', (2, 2)),
    ('[project]\ndependencies = ["torch<1.13"]\n[project.optional-dependencies]\nnew = ["torch>=2"]\n', None),
    ('[project]\ndependencies = ["torch>=2.6"]\n', None),
])
def test_torch_ceiling_is_inferred_from_the_declared_requirement(tmp_path: Path, pyproject, expected) -> None:
    (tmp_path / "pyproject.toml").write_text(pyproject)
    assert resolve_settings(Options(), tmp_path).torch_ceiling == expected


AMP = "import torch\n\ndef step(model, x):\n    with torch.cuda.amp.autocast():\n        return model(x)\n"


def test_an_api_deprecated_after_the_declared_torch_is_not_reported(tmp_path: Path) -> None:
    """allennlp declares `torch (<1.13.0,>=1.10.0)`: there `torch.cuda.amp.autocast` is the current
    API (deprecated from 2.4), so its use is no TL501; the same code without the metadata is."""
    wheel = _wheel_and_plain_copy(tmp_path, "nlplib-2.10", "Name: nlplib\nRequires-Dist: torch (<1.13.0,>=1.10.0)\n",
                                  "nlplib/trainer.py", AMP)
    shown = run_torchlint("check", "--show-settings", ".", cwd=wheel)
    assert "torch below = 1.13  # inferred from `torch (<1.13.0,>=1.10.0)` in nlplib-2.10.dist-info/METADATA" \
        in shown.stdout
    assert _files_reported(tmp_path, wheel, "TL501") == ["plain/trainer.py"]


def _wheel_and_plain_copy(tmp_path: Path, wheel_name: str, metadata: str, module: str, source: str) -> Path:
    """An unpacked wheel `wheel_name` with `metadata` and `module`, and the same module, without
    metadata, in `plain/`; returns the wheel's directory."""
    wheel = tmp_path / wheel_name
    (wheel / f"{wheel_name}.dist-info").mkdir(parents=True)
    (wheel / f"{wheel_name}.dist-info" / "METADATA").write_text(metadata)
    for path in (wheel / module, tmp_path / "plain" / Path(module).name):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return wheel


def _files_reported(tmp_path: Path, wheel: Path, code: str) -> list[str]:
    result = run_torchlint("check", "--show-hints", "--select", code, "--output-format", "json", str(wheel), "plain",
                           cwd=tmp_path)
    return [d["filename"].split(f"{tmp_path.name}/")[-1] for d in json.loads(result.stdout)]


def test_requirements_files_beside_pyproject_count_and_show_settings_says_so(project: Path) -> None:
    (project / "requirements-dev.txt").write_text("# tools\ntorch>=2.6.0 ; python_version >= '3.9'\n")
    (project / "a.py").write_text(BAD)
    shown = run_torchlint("check", "--show-settings", "a.py", cwd=project)
    assert "target-torch-version = 2.6  # inferred from `torch>=2.6.0 ; python_version >= '3.9'` in " \
           "requirements-dev.txt" in shown.stdout
    assert run_torchlint("check", "--isolated", "--show-settings", "a.py", cwd=project).stdout.count("= none") == 1


LOAD = "import torch\n\ndef restore(path):\n    return torch.load(path)\n"


def test_package_metadata_gives_the_torch_floor_of_a_tree_without_pyproject(tmp_path: Path) -> None:
    """An unpacked wheel (`*.dist-info/METADATA`): torch>=2.7 loads with weights_only=True by
    default, so its bare torch.load is no TL502; the same code without the metadata is."""
    wheel = _wheel_and_plain_copy(
        tmp_path, "speechlib-1.0",
        "Metadata-Version: 2.1\nName: speechlib\nRequires-Dist: numpy\nRequires-Dist: torch>=2.7.1\n"
        "Requires-Dist: torch>=2.8; extra == 'gpu'\n", "speechlib/nnet/schedulers.py", LOAD)
    shown = run_torchlint("check", "--show-settings", ".", cwd=wheel)
    assert "target-torch-version = 2.7  # inferred from `torch>=2.7.1` in speechlib-1.0.dist-info/METADATA" \
        in shown.stdout
    assert _files_reported(tmp_path, wheel, "TL502") == ["plain/schedulers.py"]


@pytest.mark.parametrize("layout, expected", [
    ({"PKG-INFO": "Requires-Dist: torch>=2.4\n"}, (2, 4)),  # an sdist
    ({"mylib.egg-info/PKG-INFO": "Requires-Dist: torch>=2.1\n"}, (2, 1)),  # setup.py, pip install -e
    ({"pyproject.toml": "[project]\nname = 'x'\n", "PKG-INFO": "Requires-Dist: torch>=2.5\n"}, (2, 5)),
    # Several packages' metadata side by side (site-packages) describe no project.
    ({"a-1.dist-info/METADATA": "Requires-Dist: torch>=2.6\n", "b-2.dist-info/METADATA": ""}, None),
])
def test_package_metadata_forms(tmp_path: Path, layout, expected) -> None:
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert resolve_settings(Options(), tmp_path).target_torch_version == expected


def test_configuration_is_found_per_checked_file(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL102"]\n')
    (project / "sub").mkdir()
    (project / "sub" / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL202"]\n')
    (project / "plain").mkdir()
    (project / "plain" / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.torchlint]
    for directory in (project, project / "sub", project / "plain"):
        (directory / "m.py").write_text(BAD)
    result = run_torchlint("check", "--show-hints", "--output-format", "json", cwd=project)
    codes = sorted((d["filename"].split(f"{project.name}/")[-1], d["code"]) for d in json.loads(result.stdout))
    assert codes == [("m.py", "TL102"), ("plain/m.py", "TL102"), ("sub/m.py", "TL202")]
    isolated = run_torchlint("check", "--show-hints", "--isolated", "--output-format", "json", "m.py", cwd=project)
    assert sorted(d["code"] for d in json.loads(isolated.stdout)) == ["TL102", "TL202"]


def test_config_overrides_and_wrong_types_are_usage_errors(project: Path) -> None:
    (project / "a.py").write_text(BAD)
    result = run_torchlint("check", "--config", 'select = ["TL202"]', "--output-format", "json", cwd=project)
    assert [code for _, code, _ in found(result)] == ["TL202"]
    for value, message in [
        ('select = "TL1"', "'select' in --config 'select = \"TL1\"' must be a list of strings, not 'TL1'"),
        ("target-torch-version = 2.4", "must be a version string such as \"2.4\", not 2.4"),
        ("fix = 1", "'fix' in --config 'fix = 1' must be true or false"),
    ]:
        result = run_torchlint("check", "--config", value, cwd=project)
        assert result.returncode == 2 and message in result.stderr, result.stderr
    (project / "pyproject.toml").write_text('[tool.torchlint]\nselect = "TL1"\n')
    result = run_torchlint("check", cwd=project)
    assert result.returncode == 2 and "'select' in " in result.stderr and "must be a list of strings" in result.stderr
