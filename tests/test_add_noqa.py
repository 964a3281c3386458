"""`torchlint check --add-noqa`: every finding suppressed where its noqa is read, files kept intact."""

from __future__ import annotations

import json

from tests.conftest import run_torchlint
from torchlint.add_noqa import add_noqa_to_text
from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import all_rules

SETTINGS = Settings(rules=tuple(rule for rule in all_rules() if rule.default_enabled), show_hints=True)


def add(source: str) -> tuple[str, int]:
    return add_noqa_to_text(source, check_source(source, "m.py", SETTINGS))


def test_comments_merge_with_existing_noqa_and_skip_strings_and_continuations() -> None:
    source = (
        "import torch\n"
        "import torch.nn.functional as F\n"
        "a = torch.Tensor(3)  # noqa: E501 long line\n"
        "b = torch.Tensor(3)   \n"
        "c = F.softmax(torch.Tensor(3))  # a comment\n"
        's = f"""{torch.Tensor(3)}\n'
        '"""\n'
        "d = 1 + \\\n"
        "    torch.Tensor(3).sum()\n"
        "e = F.softmax(\n"
        "    torch.zeros(3))\n"
    )
    text, added = add(source)
    assert text == (
        "import torch\n"
        "import torch.nn.functional as F\n"
        "a = torch.Tensor(3)  # noqa: E501, TL102 long line\n"
        "b = torch.Tensor(3)  # noqa: TL102\n"
        "c = F.softmax(torch.Tensor(3))  # a comment  # noqa: TL202, TL102\n"
        's = f"""{torch.Tensor(3)}\n'
        '"""  # noqa: TL102\n'
        "d = 1 + \\\n"
        "    torch.Tensor(3).sum()  # noqa: TL102\n"
        "e = F.softmax(  # noqa: TL202\n"
        "    torch.zeros(3))\n"
    )
    assert added == 6
    assert check_source(text, "m.py", SETTINGS) == []
    assert add(text) == (text, 0)


def test_the_cli_adds_once_keeps_bytes_and_leaves_a_clean_check(project) -> None:
    crlf_bom = "\ufeffimport torch\r\nx = torch.Tensor(3)\r\n"
    (project / "crlf.py").write_bytes(crlf_bom.encode("utf-8"))
    latin = "# -*- coding: latin-1 -*-\nimport torch\nname = 'café'; y = torch.Tensor(3)\n"
    (project / "latin.py").write_bytes(latin.encode("latin-1"))
    (project / "nb.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ["import torch\n", "x = torch.Tensor(3)\n"]}]}))
    first = run_torchlint("check", "--add-noqa", cwd=project)
    assert first.returncode == 0, first.stderr
    assert "Added 2 noqa directives." in first.stderr
    assert "nb.ipynb: skipped: --add-noqa edits .py files, not notebooks" in first.stderr
    assert (project / "crlf.py").read_bytes() == "\ufeffimport torch\r\nx = torch.Tensor(3)  # noqa: TL102\r\n".encode()
    assert (project / "latin.py").read_bytes() == latin.replace(")\n", ")  # noqa: TL102\n").encode("latin-1")
    again = run_torchlint("check", "--add-noqa", "crlf.py", "latin.py", cwd=project)
    assert "Added 0 noqa directives." in again.stderr
    clean = run_torchlint("check", "--extend-select", "TL903", "crlf.py", "latin.py", cwd=project)
    assert clean.returncode == 0, clean.stdout


def test_a_file_whose_rows_end_in_a_lone_carriage_return_takes_its_noqa() -> None:
    source = "import torch\rx = torch.Tensor([3.0])  # noqa: TL102\ry = torch.Tensor([3.0])\r"
    tl903 = [rule for rule in all_rules() if rule.code == "TL903"]
    with_tl903 = Settings(rules=(*SETTINGS.rules, *tl903), show_hints=True)
    assert [(d.location.row, d.code) for d in check_source(source, "m.py", with_tl903)] == [(3, "TL102")]
    added, count = add(source)
    assert count == 1 and "\n" not in added
    assert check_source(added, "m.py", with_tl903) == []
