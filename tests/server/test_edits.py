"""The server's text edits on their own: `# noqa` lines, the fix-all edit, and `torchlint server`
without its extra installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("pygls")

from pygls.workspace.position_codec import PositionCodec  # noqa: E402 - only once pygls is known to be installed

from tests.conftest import REPO  # noqa: E402
from tests.server.lsp_client import apply_workspace_edit  # noqa: E402
from torchlint.server.convert import changed_rows_edit  # noqa: E402
from torchlint.server.worker import noqa_line  # noqa: E402


@pytest.mark.parametrize(("line", "expected"), [
    ("x = torch.Tensor(3)", "x = torch.Tensor(3)  # noqa: TL102"),
    ("x = torch.Tensor(3)   ", "x = torch.Tensor(3)  # noqa: TL102"),
    ("x = torch.Tensor(3)  # a size", "x = torch.Tensor(3)  # a size  # noqa: TL102"),
    ("x = torch.Tensor(3)  # noqa: TL201", "x = torch.Tensor(3)  # noqa: TL201, TL102"),
    ("x = torch.Tensor(3)  # noqa:TL201,TL301 why", "x = torch.Tensor(3)  # noqa:TL201,TL301, TL102 why"),
    ("x = f(torch.Tensor(3),", "x = f(torch.Tensor(3),  # noqa: TL102"),
])
def test_noqa_line_adds_or_extends_the_comment(line, expected):
    text = f"import torch\n{line}\n    1)\n" if line.endswith(",") else f"import torch\n{line}\n"
    assert noqa_line(text, 2, "TL102") == expected


@pytest.mark.parametrize("text", [
    'import torch\nx = torch.Tensor(3), """\nstill a string\n"""\n',  # the row ends inside a string
    "import torch\nx = torch.Tensor(3) + \\\n    1\n",  # a backslash continues the row
    "import torch\nx = '# noqa: TL201' + torch.Tensor(3), '''\n'''\n",  # the "noqa" is in a string
])
def test_no_noqa_line_where_a_comment_cannot_go(text):
    assert noqa_line(text, 2, "TL102") is None


@pytest.mark.parametrize(("old", "new"), [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb\nc", "a\nb\nC"),  # the last row, without a line break
    ("a\r\nb\r\nc\r\n", "a\r\nb2\r\nb3\r\nc\r\n"),
    ("keep\nold\n", "new\nkeep\nold\n"),
    ("x = 1\n", "x = 2\ny = 3"),
    ("same\nsame\n", "same\n"),
])
def test_changed_rows_edit_turns_the_old_text_into_the_new(old, new):
    from lsprotocol import types

    edit = changed_rows_edit(old, new, PositionCodec())
    workspace_edit = types.WorkspaceEdit(changes={"file:///x.py": [edit]})
    assert apply_workspace_edit(old, "file:///x.py", workspace_edit) == new
    assert edit.range.start.character == 0


def test_server_without_its_extra_says_what_to_install():
    hide_pygls = "import sys; sys.modules['pygls'] = None; from torchlint.cli import main; main()"
    result = subprocess.run([sys.executable, "-c", hide_pygls, "server"], cwd=REPO, capture_output=True,
                            text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert result.returncode == 2
    message = result.stderr.strip()
    # torchlint is not on PyPI: the hint names the packages themselves, and the checkout's extra.
    assert message.startswith("torchlint: error: torchlint server needs pygls: pip install ")
    assert "pygls" in message.partition("pip install ")[2] and "torchlint[server]" not in message
    assert message.endswith('(or, in a torchlint checkout, pip install ".[server]")')


def test_checking_does_not_import_the_server_packages():
    probe = "import sys; from torchlint.cli import main; sys.argv = ['torchlint', 'rule', 'TL101']\n" \
            "try:\n    main()\nexcept SystemExit:\n    pass\nprint(sorted({'pygls', 'lsprotocol'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert result.stdout.strip().splitlines()[-1] == "[]"
