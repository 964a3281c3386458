"""Bad input never crashes the tool: each bad file is one finding, the rest is still checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO, run_torchlint

BAD = "import torch\nx = torch.Tensor(3)\n"


def _findings(project, *args):
    result = run_torchlint("check", "--output-format", "json", *args, cwd=project)
    assert "Traceback" not in result.stderr, result.stderr
    return result, [(d["filename"].rsplit("/", 1)[1], d["code"], d["location"]["row"], d["message"])
                    for d in json.loads(result.stdout)]


def test_syntax_error_is_tl901_with_the_parser_location(project):
    (project / "broken.py").write_text("import torch\n\ndef f(:\n    pass\n")
    (project / "good.py").write_text(BAD)
    result, found = _findings(project)
    assert result.returncode == 1
    assert found[0][:3] == ("broken.py", "TL901", 3) and found[0][3].startswith("SyntaxError: ")
    assert found[1][:2] == ("good.py", "TL102")


def test_tl901_cannot_be_suppressed(project):
    (project / "broken.py").write_text("# torchlint: noqa\nx = (  # noqa\n")
    _, found = _findings(project, "--ignore", "TL9")
    assert [f[1] for f in found] == ["TL901"]


def test_binary_and_undecodable_files_are_tl902(project):
    (project / "blob.py").write_bytes(b"\x00\x01\x02binary")
    (project / "latin.py").write_bytes(b"name = 'caf\xe9'\n")
    (project / "good.py").write_text(BAD)
    _, found = _findings(project)
    assert [(name, code) for name, code, _, _ in found] == [
        ("blob.py", "TL902"), ("good.py", "TL102"), ("latin.py", "TL902"),
    ]


def test_coding_cookie_and_bom_are_honoured(project):
    (project / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\nx = torch.Tensor(2)\n")
    (project / "bom.py").write_bytes(b"\xef\xbb\xbfimport torch\nx = torch.Tensor(2)\n")
    _, found = _findings(project)
    assert [(name, code, row) for name, code, row, _ in found] == [("bom.py", "TL102", 2), ("latin.py", "TL102", 4)]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read files without permission")
def test_unreadable_file_is_tl902(project):
    secret = project / "secret.py"
    secret.write_text(BAD)
    secret.chmod(0)
    _, found = _findings(project)
    assert found[0][:2] == ("secret.py", "TL902")


def test_directory_named_like_a_python_file_and_dangling_symlink(project):
    (project / "weird.py").mkdir()
    (project / "weird.py" / "inner.py").write_text(BAD)
    os.symlink(project / "nowhere.py", project / "dangling.py")
    result, found = _findings(project)
    names = [(name, code) for name, code, _, _ in found]
    assert ("inner.py", "TL102") in names and ("dangling.py", "TL902") in names


def test_huge_integer_literals_in_shapes_do_not_crash(project):
    # libcst parses a 50,000-digit literal (CPython refuses it), and a long hex one is valid
    # Python: neither is a size, and int <-> text conversions beyond 4,300 digits raise.
    huge, hexadecimal = "7" * 50000, "0x" + "f" * 5000
    (project / "huge.py").write_text(
        "import torch\n\n\ndef f(x: torch.Tensor):\n"
        f"    y = x.permute(1, 0).view({huge}, {huge} * 2)\n"
        f"    z = torch.zeros({hexadecimal}, 4).view(-1, {hexadecimal})\n"
        f"    return y.reshape(2, {huge}) + z.expand({hexadecimal}, 3)\n"
    )
    (project / "good.py").write_text(BAD)
    result, found = _findings(project, "--select", "ALL")
    assert "internal error" not in result.stderr and result.stderr == ""
    assert ("good.py", "TL102") in [(name, code) for name, code, _, _ in found]
    fixed = run_torchlint("check", "--select", "ALL", "--fix", "--unsafe-fixes", cwd=project)
    assert "Traceback" not in fixed.stderr and "error" not in fixed.stderr, fixed.stderr


def test_deeply_nested_expression_does_not_crash(project):
    (project / "deep.py").write_text("import torch\nx = " + "(" * 200 + "1" + ")" * 200 + "\ny = torch.Tensor(2)\n")
    result, found = _findings(project)
    assert result.returncode == 1 and found


# libcst's Rust tokenizer panics on this valid Python (CPython compiles it) in older releases
# (1.0.1 does; 1.9.0 parses it). Where it panics, pyo3 prints a Rust backtrace on standard error and
# raises PanicException, a BaseException. The run below makes libcst panic on it whatever the
# release installed, so the test is about torchlint's handling of the panic.
_PANICKING_SOURCE = b"try:\\\r\\\n\n\ts#\xf0\x9f\x8f\xbb\r\r\\\n\\\r\n\nfinally\\\n:\\\n([])"
_CHECK_WITH_A_PANICKING_PARSER = textwrap.dedent("""
    import os, sys
    import libcst
    from torchlint.cli import main

    class PanicException(BaseException):
        pass

    real_parse = libcst.parse_module

    def parse(source, *args, **kwargs):
        if source.startswith("try:"):
            os.write(2, b"thread '<unnamed>' panicked at src/tokenizer/core/mod.rs:1048:9\\n")
            raise PanicException("called `Option::unwrap()` on a `None` value")
        return real_parse(source, *args, **kwargs)

    libcst.parse_module = parse
    sys.argv[0] = "torchlint"
    main()
""")


def test_a_file_that_makes_libcsts_parser_panic_is_one_tl902(project):
    compile(_PANICKING_SOURCE.decode(), "panic.py", "exec")
    (project / "panic.py").write_bytes(_PANICKING_SOURCE)
    (project / "good.py").write_text(BAD)
    for jobs in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", _CHECK_WITH_A_PANICKING_PARSER, "check", "--output-format", "json", "--no-cache",
             "--jobs", jobs], cwd=project, env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True, text=True, timeout=120)
        found = [(Path(d["filename"]).name, d["code"], d["message"]) for d in json.loads(result.stdout)]
        assert [(name, code) for name, code, _ in found] == [("good.py", "TL102"), ("panic.py", "TL902")]
        assert "backslash" in found[1][2]
        assert result.stderr == ""


def test_crlf_file(project):
    (project / "crlf.py").write_bytes(b"import torch\r\nx = torch.Tensor(2)\r\n")
    _, found = _findings(project)
    assert found[0][:3] == ("crlf.py", "TL102", 2)


def test_notebook_findings_are_mapped_to_cells(project):
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["# Title"]},
            {"cell_type": "code", "source": ["%matplotlib inline\n", "import torch\n"]},
            {"cell_type": "code", "source": ["!pip install x\n", "x = torch.Tensor(3)\n"]},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    (project / "nb.ipynb").write_text(json.dumps(notebook))
    (project / "broken.ipynb").write_text("{not json")
    result = run_torchlint("check", "--output-format", "json", cwd=project)
    findings = json.loads(result.stdout)
    assert [(d["code"], d["cell"]) for d in findings] == [("TL902", None), ("TL102", 3)]
    assert findings[1]["location"] == {"row": 2, "column": 5}


def test_an_internal_error_in_one_file_is_one_line_and_the_rest_is_checked(project, monkeypatch):
    from torchlint import engine
    from torchlint.config import Options, resolve_settings

    real_check_source = engine.check_source

    def failing_on_a(source, filename, settings, *args, **kwargs):
        if filename.endswith("a.py"):
            raise ValueError("rule bug")
        return real_check_source(source, filename, settings, *args, **kwargs)

    monkeypatch.setattr(engine, "check_source", failing_on_a)
    (project / "a.py").write_text(BAD)
    (project / "b.py").write_text(BAD)
    errors: list[str] = []
    settings = resolve_settings(Options(), cwd=project)
    found = engine.check_files([(str(project / "a.py"), "a.py"), (str(project / "b.py"), "b.py")], settings, 1, errors)
    assert errors == ["a.py: ValueError: rule bug"]
    assert [(d.filename, d.code) for d in found] == [("b.py", "TL102")]


def test_form_feed_does_not_shift_the_source_frame(project):
    # Python (and libcst) do not break lines at a form feed; str.splitlines() does.
    (project / "ff.py").write_text("import torch\n# section\f break\nx = torch.Tensor(3)\n")
    result = run_torchlint("check", "--no-color", "--no-cache", cwd=project)
    assert "3 | x = torch.Tensor(3)" in result.stdout, result.stdout
