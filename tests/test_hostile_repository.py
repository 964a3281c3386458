"""A repository from a stranger (a pull request checked in CI) cannot fool or abuse torchlint:
planted cache entries are never read, `--fix` writes nothing outside the checked paths, a file
crafted to be slow or to crash the parser costs a bounded time, and static checking never runs,
imports or reads the project's code beyond the files it checks (and config files above them)."""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from scripts.fuzz import FINDING_LINE
from tests.conftest import REPO, run_torchlint
from torchlint import engine
from torchlint.cache import cache_key, project_directory
from torchlint.config import Options, resolve_settings
from torchlint.fix import fix_files

BAD = "import torch\nx = torch.Tensor([3.0])\n"  # a TL102 hint (shown under --show-hints) with a safe fix
FIXED = "import torch\nx = torch.tensor([3.0])\n"


def _codes(result) -> list[tuple[str, str]]:
    return [(Path(record["filename"]).name, record["code"]) for record in json.loads(result.stdout)]


# The cache ---------------------------------------------------------------------------------


def test_cache_entries_planted_in_the_repository_are_never_read(project):
    (project / "a.py").write_text(BAD)
    settings = resolve_settings(Options(overrides=["show-hints=true"]), cwd=project)
    # An attacker can compute the key of every file and commit an entry saying "no findings",
    # in the old in-tree layout and at the same relative place the real cache uses.
    key = cache_key("a.py", BAD.encode(), settings)
    for base in (project / ".torchlint_cache", project / project_directory(str(project)).name):
        (base / key[:2]).mkdir(parents=True)
        (base / key[:2] / f"{key}.json").write_text("[]")
    for _ in range(2):  # a cold and a warm cache
        result = run_torchlint("check", "--show-hints", "--output-format", "json", ".", cwd=project)
        assert _codes(result) == [("a.py", "TL102")]


def test_the_cache_is_kept_outside_the_checked_tree(project, private_cache):
    (project / "a.py").write_text(BAD)
    before = sorted(path.name for path in project.rglob("*"))
    run_torchlint("check", ".", cwd=project)
    assert sorted(path.name for path in project.rglob("*")) == before
    entries = list(project_directory(str(project)).rglob("*.json"))
    assert len(entries) == 1 and private_cache in entries[0].parents


def test_a_cache_directory_owned_by_someone_else_is_not_used(project, monkeypatch):
    (project / "a.py").write_text(BAD)
    settings = resolve_settings(Options(overrides=["show-hints=true"]), cwd=project)
    named = [(str(project / "a.py"), "a.py")]
    assert engine.check_files(named, settings, 1, use_cache=True)  # fills the cache
    monkeypatch.setattr(os, "getuid", lambda: os.stat(project).st_uid + 1)

    def must_run(*args, **kwargs):
        raise RuntimeError("checked, as it should be")

    monkeypatch.setattr(engine, "check_source", must_run)
    errors: list[str] = []
    engine.check_files(named, settings, 1, errors, use_cache=True)
    assert errors == ["a.py: RuntimeError: checked, as it should be"]


# --fix writes only regular files inside the checked paths ----------------------------------


@pytest.fixture
def outside_and_project(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.py").write_text(BAD)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return outside, project


def test_fix_never_writes_through_a_symlink_that_leaves_the_checked_paths(outside_and_project):
    outside, project = outside_and_project
    os.symlink(outside / "victim.py", project / "link.py")
    (project / "own.py").write_text(BAD)
    os.symlink(project / "own.py", project / "alias.py")  # inside: written through to own.py
    result = run_torchlint("check", "--show-hints", "--fix", "--output-format", "json", ".", cwd=project)
    assert (outside / "victim.py").read_text() == BAD
    assert "link.py: fixes not applied: not written: its real path is outside the checked paths" in result.stderr
    assert ("link.py", "TL102") in _codes(result)  # checked, its finding reported
    assert (project / "own.py").read_text() == FIXED and (project / "alias.py").is_symlink()
    # Named on the command line, the link is no different.
    result = run_torchlint("check", "--show-hints", "--fix", "link.py", cwd=project)
    assert (outside / "victim.py").read_text() == BAD and "not written" in result.stderr


def test_add_noqa_never_writes_through_a_symlink_that_leaves_the_checked_paths(outside_and_project):
    outside, project = outside_and_project
    os.symlink(outside / "victim.py", project / "link.py")
    (project / "own.py").write_text(BAD)
    os.symlink(project / "own.py", project / "alias.py")  # inside: written through to own.py
    result = run_torchlint("check", "--show-hints", "--add-noqa", ".", cwd=project)
    assert (outside / "victim.py").read_text() == BAD
    assert "link.py: noqa comments not added: not written: its real path is outside the checked paths" in result.stderr
    assert "internal error" not in result.stderr and result.returncode == 2
    assert (project / "own.py").read_text() == "import torch\nx = torch.Tensor([3.0])  # noqa: TL102\n"
    assert (project / "alias.py").is_symlink()
    # Named on the command line, the link is no different.
    result = run_torchlint("check", "--show-hints", "--add-noqa", "link.py", cwd=project)
    assert (outside / "victim.py").read_text() == BAD and "not written" in result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_and_devices_are_reported_never_read_or_written(project):
    os.mkfifo(project / "pipe.py")  # reading it would wait forever for a writer
    os.symlink("/dev/zero", project / "zeros.py")  # reading it would never end
    os.symlink("/dev/null", project / "null.py")
    (project / "ok.py").write_text(BAD)
    started = time.monotonic()
    result = run_torchlint("check", "--show-hints", "--fix", "--output-format", "json", ".", cwd=project)
    assert time.monotonic() - started < 60
    codes = _codes(result)
    assert {name for name, code in codes if code == "TL902"} == {"pipe.py", "zeros.py", "null.py"}
    assert "not a regular file" in result.stdout
    assert (project / "ok.py").read_text() == FIXED
    assert stat.S_ISFIFO(os.stat(project / "pipe.py").st_mode)


# Files crafted to be slow or to crash the parser --------------------------------------------


def _check(project: Path, names: list[str], time_limit: float) -> list[tuple[str, str, str]]:
    settings = resolve_settings(Options(overrides=["show-hints=true"]), cwd=project)
    found = engine.check_files([(str(project / name), name) for name in names], settings, 2, [],
                               time_limit=time_limit)
    return [(d.filename, d.code, d.message) for d in found]


def test_a_slow_file_is_tl902_after_its_time_limit_and_the_rest_is_checked(project):
    # Thousands of chained operators on one line: libcst's native parser takes many seconds.
    (project / "slow.py").write_text("import torch\nx = " + " + ".join(["y"] * 6000) + "\n")
    (project / "ok.py").write_text(BAD)
    started = time.monotonic()
    found = _check(project, ["slow.py", "ok.py"], time_limit=2)
    assert time.monotonic() - started < 15
    assert ("slow.py", "TL902", "cannot be checked: it took longer than 2 s to check") in found
    assert ("ok.py", "TL102") in [(name, code) for name, code, _ in found]


def test_fix_of_a_slow_file_is_bounded_too(project):
    (project / "slow.py").write_text("import torch\nx = torch.Tensor(3) + " + " + ".join(["y"] * 6000) + "\n")
    (project / "ok.py").write_text(BAD)
    settings = resolve_settings(Options(overrides=["show-hints=true"]), cwd=project)
    files = [(str(project / name), name) for name in ("slow.py", "ok.py")]
    results = fix_files(files, settings, 1, time_limit=2)
    assert [d.code for d in results[0].diagnostics] == ["TL902"] and results[0].fixed == {}
    assert (project / "ok.py").read_text() == FIXED


def test_brackets_nested_too_deep_are_a_syntax_error_not_a_crash(project):
    # libcst's native parser overflows its stack on a few thousand nested brackets.
    (project / "deep.py").write_text("import torch\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    (project / "deep_in_string.py").write_text("import torch\ns = '" + "(" * 500 + "'\nx = torch.Tensor(3)\n")
    (project / "unclosed.py").write_text("x = " + "[{(" * 2000 + "\n")  # no pair to count: found by the fuzzer
    found = _check(project, ["deep.py", "deep_in_string.py", "unclosed.py"], time_limit=30)
    assert found[0][:2] == ("deep.py", "TL901") and "too many nested parentheses" in found[0][2]
    assert [(name, code) for name, code, _ in found[1:2]] == [("deep_in_string.py", "TL102")]
    assert found[2][:2] == ("unclosed.py", "TL901") and "too many nested parentheses" in found[2][2]


def test_a_worker_that_crashes_costs_only_its_file(project, monkeypatch):
    (project / "crash.py").write_text(BAD)
    (project / "ok.py").write_text(BAD)
    real_parse = engine.parse_module

    def crashing(source, filename):
        if filename == "crash.py":
            # pytest's fault handler, inherited by the forked worker, would print the crash's
            # trace into the test output; the CLI's workers have none.
            faulthandler.disable()
            os.kill(os.getpid(), signal.SIGSEGV)
        return real_parse(source, filename)

    monkeypatch.setattr(engine, "parse_module", crashing)
    found = _check(project, ["crash.py", "ok.py"], time_limit=30)
    assert found[0][:2] == ("crash.py", "TL902") and "stopped" in found[0][2]
    assert found[1][:2] == ("ok.py", "TL102")


# Run in a fresh interpreter, as the CLI is: a worker is forked, so memory its parent has freed
# but still maps is slack under the limit, and pytest's own heap could hold more than 32 MB of it.
_GREEDY_CHECK = textwrap.dedent("""
    import json, sys
    from torchlint import engine, workers
    from torchlint.config import Options, resolve_settings

    workers.MEMORY_LIMIT = 32 << 20
    real_parse = engine.parse_module

    def greedy(source, filename):
        if filename == "rule.py":
            bytearray(1 << 30)
        return real_parse(source, filename)

    engine.parse_module = greedy
    names = sys.argv[1:]
    settings = resolve_settings(Options(overrides=["show-hints=true"]))
    found = engine.check_files([(name, name) for name in names], settings, 2, [], time_limit=30)
    print(json.dumps([(d.filename, d.code, d.message) for d in found]))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory limit is Linux's RLIMIT_AS")
def test_a_file_that_needs_too_much_memory_costs_only_its_file(project):
    # Under a 32 MB limit (the real one is gigabytes): libcst's parse of 30,000 list items
    # allocates about 200 MB in native code, and a rule that allocated 1 GiB (a Python MemoryError).
    (project / "parse.py").write_text("x = [" + "0, " * 30_000 + "]\n")
    (project / "rule.py").write_text(BAD)
    (project / "ok.py").write_text(BAD)
    result = subprocess.run([sys.executable, "-c", _GREEDY_CHECK, "parse.py", "rule.py", "ok.py"], cwd=project,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    found = [tuple(finding) for finding in json.loads(result.stdout)]
    assert found[0][:2] == ("ok.py", "TL102")
    assert found[1][:2] == ("parse.py", "TL902") and "needed more than 32 MB of memory" in found[1][2]
    assert found[2] == ("rule.py", "TL902", "cannot be checked: it needed more than 32 MB of memory to check")


def test_a_huge_file_is_reported_without_being_parsed(project):
    (project / "huge.py").write_text("import torch\nx = [" + "torch.zeros(1), " * 330_000 + "]\n")  # 5 MB
    started = time.monotonic()
    found = _check(project, ["huge.py"], time_limit=30)
    assert time.monotonic() - started < 10
    assert found == [("huge.py", "TL902", "cannot read file: too large to check (5.3 MB; the limit is 4 MB)")]


def test_a_notebook_of_100k_cells_is_bounded(project):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["import torch\n", "x = torch.Tensor(3)\n"]}
    (project / "big.ipynb").write_text(json.dumps({"cells": [cell] * 100_000, "metadata": {}, "nbformat": 4}))
    (project / "ok.py").write_text(BAD)
    started = time.monotonic()
    found = _check(project, ["big.ipynb", "ok.py"], time_limit=5)
    assert time.monotonic() - started < 30
    big = [code for name, code, _ in found if name == "big.ipynb"]
    assert big == ["TL902"] or big == ["TL102"] * 100_000
    assert ("ok.py", "TL102") in [(name, code) for name, code, _ in found]


def test_a_line_holding_only_a_backslash_is_never_fixed_on_the_wrong_row(project):
    # libcst 1.0 drops such a line, so every row after it would be off by one.
    source = "import torch\nif x:\n    y = 1\n\\\npass\nt = torch.Tensor(3)\nu = torch.Tensor(4)\n"
    (project / "a.py").write_text(source)
    result = run_torchlint("check", "--fix", "--output-format", "json", "a.py", cwd=project)
    assert (project / "a.py").read_text() == source
    assert _codes(result) == [("a.py", "TL902")]


# Static mode runs nothing of the project's ----------------------------------------------------

# Each planted file, if Python ever ran it, leaves a marker file behind.
_MARKER = "import pathlib; pathlib.Path({path!r}).write_text('ran')\n"
_AUDIT = textwrap.dedent("""
    import os, sys
    log = open(sys.argv[1], "a", buffering=1)
    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes)):
            log.write("open\\t" + os.fsdecode(os.path.abspath(args[0])) + "\\n")
        elif event == "import" and args[1]:
            log.write("import\\t" + os.path.abspath(args[1]) + "\\n")
        elif event == "exec":
            name = getattr(args[0], "co_filename", "?")  # "<string>": code made by the stdlib
            log.write("exec\\t" + (name if name.startswith("<") else os.path.abspath(name)) + "\\n")
        elif event in ("os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "ctypes.dlopen"):
            log.write(event + "\\t" + repr(args)[:200] + "\\n")
    from torchlint.cli import main
    sys.addaudithook(hook)
    sys.argv = ["torchlint", *sys.argv[2:]]
    main()
""")


def test_static_mode_never_imports_executes_or_reads_beyond_the_checked_files(tmp_path, private_cache):
    outer = tmp_path / "outer"
    project = outer / "project"
    markers = tmp_path / "markers"
    for directory in (project / "torch", project / "pkg", markers):
        directory.mkdir(parents=True)
    (outer / "pyproject.toml").write_text("[tool.torchlint]\nextend-select = ['TL']\n")  # config above: read
    (outer / "secret.py").write_text(BAD)  # outside the checked root: never read
    planted = {
        "sitecustomize.py": "sitecustomize", "usercustomize.py": "usercustomize", "torch/__init__.py": "torch",
        "pkg/__init__.py": "pkg", "setup.py": "setup", "conftest.py": "conftest",
    }
    for name, marker in planted.items():
        (project / name).write_text(_MARKER.format(path=str(markers / marker)))
    (project / "evil.pth").write_text(f"import pathlib; pathlib.Path({str(markers / 'pth')!r}).write_text('ran')\n")
    (project / "train.py").write_text("import torch\nimport pkg\n" + _MARKER.format(path=str(markers / "train"))
                                      + "x = torch.Tensor(3)\n")
    audit, script = tmp_path / "audit.log", tmp_path / "audited.py"
    script.write_text(_AUDIT)
    for arguments in (("check", "--no-cache", "."),
                      ("check", "--fix", "--unsafe-fixes", "-j", "2", ".")):
        result = run_torchlint_audited(script, audit, arguments, project)
        assert result.returncode in (0, 1) and "Traceback" not in result.stderr, result.stderr
    assert list(markers.iterdir()) == []
    allowed = [str(project), str(private_cache), str(REPO), sys.prefix, sys.base_prefix, sys.exec_prefix, "/dev/null", "/proc/"]
    opened, ran, other = set(), set(), []
    for line in audit.read_text().splitlines():
        event, _, argument = line.partition("\t")
        if event == "open":
            opened.add(argument)
        elif event in ("import", "exec"):
            ran.add(argument)
        else:
            other.append(line)
    assert other == []  # no process started, no library loaded
    assert not [path for path in ran if path.startswith(str(project))]
    outside = {path for path in opened if not any(path.startswith(prefix) for prefix in allowed)}
    config_above = {str(outer / "pyproject.toml"), str(outer / ".gitignore"), str(tmp_path / "pyproject.toml"),
                    str(tmp_path / ".gitignore")}
    assert outside - config_above - {str(audit)} == set(), sorted(outside)
    assert str(outer / "pyproject.toml") in opened and str(outer / "secret.py") not in opened


def run_torchlint_audited(script: Path, audit: Path, arguments, cwd: Path):
    # -P: the working directory (the project) is not put on sys.path, as with the console script.
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-P", str(script), str(audit), *arguments], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=300)


# Files read besides the checked ones, and trees shaped to end the run ------------------------


def _bounded_check(project: Path, *args: str) -> subprocess.CompletedProcess:
    """`torchlint check` of the project under a memory limit; the time limit is run_torchlint's.
    Every finding fails it, notes too (`BAD` is one): exit status 1 says the file was checked."""
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", limit + "from torchlint.__main__ import main; main()", "check", "--no-cache",
         "--show-hints", "--output-format", "json", "--fail-on", "hint", *args, "."],
        cwd=project, env=environment, capture_output=True, text=True, timeout=60,
    )


@pytest.mark.parametrize("plant", ["zero", "fifo"])
def test_an_ignore_file_that_is_a_device_or_fifo_is_never_read(project, plant):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    if plant == "zero":
        os.symlink("/dev/zero", project / ".gitignore")  # read whole, it would fill the memory
    else:
        os.mkfifo(project / ".gitignore")  # opened for reading, it would wait for a writer
    (project / "ok.py").write_text(BAD)
    result = _bounded_check(project)
    assert result.returncode == 1, result.stderr
    assert _codes(result) == [("ok.py", "TL102")]
    assert ".gitignore: not read (not a regular file, or larger than 1 MB)" in result.stderr


def test_a_requirements_file_that_is_a_device_is_never_read(project):
    os.symlink("/dev/zero", project / "requirements.txt")  # the torch version is inferred from it
    (project / "ok.py").write_text(BAD)
    result = _bounded_check(project)
    assert result.returncode == 1, result.stderr
    assert _codes(result) == [("ok.py", "TL102")]


def test_ignore_patterns_that_backtrack_are_simplified_or_skipped_with_a_warning(project):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".gitignore").write_text(
        "build/\n" + "*" * 200 + "generated.py\n" + "*a" * 12 + "b\n"  # collapsed to *generated.py; skipped
    )
    (project / ("a" * 200 + ".py")).write_text(BAD)  # a long name the second pattern never matches
    (project / "old_generated.py").write_text(BAD)
    (project / "build").mkdir()
    (project / "build" / "out.py").write_text(BAD)
    started = time.monotonic()
    result = _bounded_check(project)
    assert time.monotonic() - started < 30
    assert _codes(result) == [("a" * 200 + ".py", "TL102")]
    assert ".gitignore:3: pattern skipped: too long or too many wildcards" in result.stderr


def test_a_thousand_nested_directories_are_walked(project):
    levels = [project]
    for _ in range(1000):  # one level at a time: mkdir(parents=True) and rmtree recurse
        levels.append(levels[-1] / "d")
        levels[-1].mkdir()
    (levels[-1] / "deep.py").write_text(BAD)
    try:
        result = _bounded_check(project)
        assert result.returncode == 1, result.stderr
        assert _codes(result) == [("deep.py", "TL102")]
    finally:
        (levels[-1] / "deep.py").unlink()
        for level in reversed(levels[1:]):
            level.rmdir()


def test_a_notebook_of_deeply_nested_json_is_one_tl902(project):
    (project / "nested.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    (project / "ok.py").write_text(BAD)
    result = _bounded_check(project)
    assert result.returncode == 1, result.stderr
    assert sorted(_codes(result)) == [("nested.ipynb", "TL902"), ("ok.py", "TL102")]
    assert "nested too deeply" in result.stdout


@pytest.mark.parametrize("pyproject, message", [
    ("[tool]\ntorchlint = 5\n", "'tool.torchlint' in {} must be a table, not 5"),
    ("tool = 5\n", "'tool' in {} must be a table, not 5"),
    ("[project]\nname = 'x'\ndependencies = 5\n", "'project.dependencies' in {} must be a list, not 5"),
    ("[project]\nname = 'x'\noptional-dependencies = 5\n",
     "'project.optional-dependencies' in {} must be a table, not 5"),
    ("[project]\nname = 'x'\nx = " + "[" * 5000 + "]" * 5000 + "\n", "invalid TOML in {}: nested too deeply"),
])
def test_a_malformed_pyproject_is_a_usage_error_naming_the_key(project, pyproject, message):
    (project / "pyproject.toml").write_text(pyproject)
    (project / "ok.py").write_text(BAD)
    result = run_torchlint("check", ".", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == "torchlint: error: " + message.format(project / "pyproject.toml")


# Output a repository could forge -----------------------------------------------------------


@pytest.mark.parametrize("output_format", ["full", "concise"])
def test_file_names_cannot_forge_finding_lines(project, output_format):
    (project / "a\nforged.py:9:9: TL999 planted.py").write_text(BAD)
    (project / "b.py:12:3: TL999 planted.py").write_text(BAD)
    result = run_torchlint("check", "--show-hints", "--no-cache", "--output-format", output_format, ".", cwd=project)
    parsed = [match.groups() for line in result.stdout.splitlines() if (match := FINDING_LINE.match(line))]
    # Each file's one finding, at its real place, and nothing else a log parser would read.
    assert sorted(code for _, _, _, code in parsed) == ["TL102", "TL102"]
    assert all((row, column) == ("2", "5") for _, row, column, _ in parsed)
    assert "a\\nforged.py\\:9\\:9\\: TL999 planted.py:2:5: TL102" in result.stdout
    assert "b.py\\:12\\:3\\: TL999 planted.py:2:5: TL102" in result.stdout


def test_a_file_name_that_is_not_utf8_is_cached_and_reported_in_every_format(project):
    # A name from a Latin-1 system, "\udce9" to Python: the cache key and the SARIF fingerprint
    # hash it, and UTF-8 cannot encode it.
    name = os.fsdecode(b"latin\xe9.py")
    (project / name).write_text(BAD)
    text = run_torchlint("check", "--show-hints", "--output-format", "concise", "--sarif-file", "out.sarif", ".",
                         cwd=project)
    assert text.stderr == ""
    assert text.stdout.startswith("latin\\udce9.py:2:5: TL102")
    assert len(json.loads((project / "out.sarif").read_text())["runs"][0]["results"]) == 1
    records = run_torchlint("check", "--show-hints", "--output-format", "json", ".", cwd=project)  # from the cache
    assert _codes(records) == [(name, "TL102")]


def test_a_project_file_whose_name_is_not_utf8_is_listed_with_the_others(project):
    # The project questions list every file (TL505 asks which files import a loading file): the
    # listing's state hashes the names, and UTF-8 cannot encode "\udce9".
    (project / os.fsdecode(b"latin\xe9.py")).write_text("import agent\n")
    (project / "agent.py").write_text("import torch\n\n\ndef restore(model, path):\n    model.load_state_dict(torch.load(path))\n")
    result = run_torchlint("check", "--no-cache", "agent.py", cwd=project)
    assert "internal error" not in result.stderr and result.returncode in (0, 1)


def test_a_long_source_line_is_shown_cut_around_the_finding(project):
    line = "x = [" + "1, " * 2000 + "torch.Tensor([3.0])" + ", 2" * 2000 + "]"
    (project / "generated.py").write_text("import torch\n" + line + "\n")
    result = run_torchlint("check", "--show-hints", "--no-cache", ".", cwd=project)
    shown = [row for row in result.stdout.splitlines() if row.startswith("2 | ")]
    assert len(shown) == 1 and len(shown[0]) < 200
    assert "1, torch.Tensor([3.0]), 2" in shown[0] and shown[0].startswith("2 | …") and shown[0].endswith("…")
    caret = next(row for row in result.stdout.splitlines() if "^^^" in row)
    assert caret.index("^") == shown[0].index("torch.Tensor")


def test_fix_writes_a_file_whose_name_fills_the_limit(project):
    name = "m" * 250 + ".py"  # 253 bytes: a temporary name repeating it whole would not fit
    (project / name).write_text(BAD)
    result = run_torchlint("check", "--show-hints", "--fix", "--no-cache", ".", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / name).read_text() == FIXED
    assert sorted(path.name for path in project.iterdir()) == sorted([name, "pyproject.toml"])


def test_valid_code_the_parser_cannot_handle_is_tl902_not_a_syntax_error(project):
    # 5,000 implicitly concatenated strings: CPython accepts them, libcst gives up.
    (project / "strings.py").write_text("x = (" + " ".join(['"a"'] * 5000) + ")\n")
    (project / "broken.py").write_text("x = (\n")
    result = run_torchlint("check", "--no-cache", "--output-format", "json", ".", cwd=project)
    found = {Path(record["filename"]).name: (record["code"], record["message"]) for record in json.loads(result.stdout)}
    assert found["strings.py"][0] == "TL902"
    assert found["strings.py"][1].startswith("cannot be checked: too complex for the parser (libcst: ")
    assert found["broken.py"] == ("TL901", "SyntaxError: '(' was never closed")


def test_a_large_file_gets_a_time_limit_in_proportion_to_its_size(project):
    (project / "small.py").write_text(BAD)
    (project / "generated.py").write_text("x = 1\n" * 100_000)  # 600 KB: 40 s at 15 KB a second
    (project / "huge.py").write_text("# padding\n" * 499_000)  # 5 MB (past the size limit): capped
    assert engine.file_time_limit(str(project / "small.py")) == engine.FILE_TIME_LIMIT
    assert engine.file_time_limit(str(project / "generated.py")) == pytest.approx(40.0)
    assert engine.file_time_limit(str(project / "huge.py")) == 10 * engine.FILE_TIME_LIMIT
    assert engine.file_time_limit(str(project / "generated.py"), base=2) == 20  # ten times a base of 2
    (project / "outputs.ipynb").write_text("{}" + " " * 1_000_000)  # a notebook's bytes are mostly outputs
    assert engine.file_time_limit(str(project / "outputs.ipynb")) == engine.FILE_TIME_LIMIT


@pytest.mark.parametrize("plant", ["zero", "fifo"])
def test_a_baseline_that_is_a_device_or_fifo_is_a_usage_error(project, plant):
    if plant == "zero":
        os.symlink("/dev/zero", project / "baseline.json")
    else:
        os.mkfifo(project / "baseline.json")
    (project / "ok.py").write_text(BAD)
    result = _bounded_check(project, "--baseline", "baseline.json")
    assert result.returncode == 2
    assert result.stderr.strip() == "torchlint: error: cannot read baseline baseline.json: not a regular file"
