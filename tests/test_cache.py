from __future__ import annotations

import subprocess
import sys

from torchlint import engine
from torchlint.config import Options, resolve_settings

BAD = "import torch\nx = torch.Tensor([3])\n"


def _check(project, use_cache=True):
    settings = resolve_settings(Options(overrides=["show-hints=true"]), cwd=project)
    return engine.check_files([(str(project / "a.py"), "a.py")], settings, 1, use_cache=use_cache)


def test_unchanged_files_are_served_from_the_cache(project, monkeypatch):
    (project / "a.py").write_text(BAD)
    first = _check(project)
    assert [d.code for d in first] == ["TL102"] and first[0].fix is not None
    assert not (project / ".torchlint_cache").exists()  # the checked tree is never written

    def must_not_run(*args, **kwargs):
        raise AssertionError("checked again although unchanged")

    monkeypatch.setattr(engine, "check_source", must_not_run)
    assert _check(project) == first


def test_a_run_served_wholly_from_the_cache_starts_no_worker(project, monkeypatch):
    (project / "a.py").write_text(BAD)
    (project / "b.py").write_text(BAD)
    settings = resolve_settings(Options(overrides=["show-hints=true"]), cwd=project)
    files = [(str(project / name), name) for name in ("a.py", "b.py")]
    first = engine.check_files(files, settings, 2, use_cache=True)
    (project / "b.py").write_text(BAD + "y = torch.Tensor(2)\n")
    sent_to_workers = []
    real_map_bounded = engine.map_bounded

    def recording(worker, work, *args):
        sent_to_workers.extend(job[1] for job in work)
        return real_map_bounded(worker, work, *args)

    monkeypatch.setattr(engine, "map_bounded", recording)
    second = engine.check_files(files, settings, 2, use_cache=True)
    assert sent_to_workers == ["b.py"]  # only the changed file is checked again
    assert [(d.filename, d.location.row) for d in second] == [("a.py", 2), ("b.py", 2), ("b.py", 3)]
    assert second[0] == first[0]


def test_a_changed_file_or_rule_set_is_checked_again(project):
    (project / "a.py").write_text(BAD)
    _check(project)
    (project / "a.py").write_text(BAD + "y = torch.Tensor(2)\n")
    assert [d.location.row for d in _check(project)] == [2, 3]
    settings = resolve_settings(Options(ignore=["TL102"]), cwd=project)
    assert engine.check_files([(str(project / "a.py"), "a.py")], settings, 1, use_cache=True) == []


def test_no_cache_writes_nothing(project, private_cache):
    (project / "a.py").write_text(BAD)
    _check(project, use_cache=False)
    assert not any(private_cache.iterdir())


_REPORT_LIBCST_AT_EXIT = """
import atexit, sys
atexit.register(lambda: print("libcst imported:", "libcst" in sys.modules, file=sys.stderr))
from torchlint.cli import main
sys.argv = ["torchlint", "check", "--show-hints", *sys.argv[1:]]
main()
"""


def test_a_run_answered_from_the_cache_imports_neither_the_parser_nor_a_rule(project, private_cache):
    (project / "a.py").write_text(BAD)
    (project / "b.py").write_text("import torch\n")

    def libcst_imported(*args: str) -> bool:
        result = subprocess.run([sys.executable, "-c", _REPORT_LIBCST_AT_EXIT, *args], cwd=project,
                                capture_output=True, text=True, timeout=120)
        assert "a.py:2:5: TL102" in result.stdout, result.stdout + result.stderr
        return "libcst imported: True" in result.stderr

    assert libcst_imported("a.py", "b.py")  # the first run checks
    assert not libcst_imported("a.py", "b.py")  # start-up: the second reads the cache alone
    (project / "b.py").write_text("import torch\ny = 1\n")
    assert libcst_imported("a.py", "b.py")


def test_the_lookups_of_one_run_look_at_a_shared_dependency_once(project, monkeypatch):
    from torchlint import cache
    from torchlint.project import layout

    (project / "model.py").write_text("import torch\n\nclass Net(torch.nn.Module):\n    pass\n")
    user = "import torch\nfrom model import Net\n\nnet = Net()\nnet.forward(torch.Tensor([3]))\n"
    names = ("a.py", "b.py", "c.py")
    for name in names:
        (project / name).write_text(user)
    settings = resolve_settings(Options(overrides=["show-hints=true"]), cwd=project)
    files = [(str(project / name), name) for name in names]
    engine.check_files(files, settings, 1, use_cache=True)
    looked_at = []
    real_signature = layout._signature
    monkeypatch.setattr(layout, "_signature", lambda path: looked_at.append(path) or real_signature(path))
    results = cache.cached_results(files, settings)
    assert all(result is not None and "TL005" in {d.code for d in result} for result in results)
    # Each result depends on model.py, which the run looks at once, not once per result.
    assert looked_at.count(str(project / "model.py")) == 1
