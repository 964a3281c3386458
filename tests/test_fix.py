"""`torchlint/fix.py`: applying fixes in passes, and the guarantees of writing fixed files."""

from __future__ import annotations

import os
import stat
import sys

import libcst as cst
import pytest

from torchlint.config import Settings
from torchlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Severity
from torchlint.engine import _in_newline, check_source
from torchlint.reports import FixSpec
from torchlint.fix import (
    MAX_PASSES, FileChanged, _keep_final_newline, apply_fixes, fix_file, fix_text, order_fixes,
    unified_diff, write_atomically,
)
from torchlint.rules import get_rule
from torchlint.rules.tl102_legacy_tensor_constructor import LegacyTensorConstructor

SETTINGS = Settings(rules=tuple(get_rule(code) for code in ("TL102", "TL201", "TL202", "TL901", "TL902")),
                    show_hints=True)

SOURCE = """\
import torch
import torch.nn.functional as F


def head(logits):
    a = torch.log(F.softmax(logits))
    b = F.softmax(logits).log()
    c = torch.Tensor([1, 2])
    d = torch.log(torch.sigmoid(logits))
    return a, b, c, d
"""

# The safe fixes only: TL201 (x3) and TL102; the TL202 fixes (unsafe) are left.
SAFE_FIXED = """\
import torch
import torch.nn.functional as F


def head(logits):
    a = F.log_softmax(logits)
    b = F.log_softmax(logits)
    c = torch.tensor([1, 2], dtype=torch.get_default_dtype())
    d = F.logsigmoid(logits)
    return a, b, c, d
"""

# With the unsafe fixes: TL202 adds `dim=-1` to the `log_softmax` calls the TL201 fixes made.
ALL_FIXED = SAFE_FIXED.replace("F.log_softmax(logits)", "F.log_softmax(logits, dim=-1)")


def _codes(diagnostics: list[Diagnostic]) -> list[str]:
    return [d.code for d in diagnostics]


# Passes -----------------------------------------------------------------------------------


def test_safe_fixes_only_by_default() -> None:
    outcome = fix_text(SOURCE, "head.py", SETTINGS)
    assert outcome.text == SAFE_FIXED
    assert outcome.fixed == {"TL201": 3, "TL102": 1}
    assert _codes(outcome.diagnostics) == ["TL202", "TL202"]
    assert [d.location.row for d in outcome.diagnostics] == [6, 7]  # rows of the fixed text
    assert outcome.problems == []


def test_unsafe_fixes_apply_in_later_passes_what_overlapped() -> None:
    outcome = fix_text(SOURCE, "head.py", SETTINGS, unsafe=True)
    assert outcome.text == ALL_FIXED
    assert outcome.fixed == {"TL201": 3, "TL202": 2, "TL102": 1}
    assert outcome.diagnostics == []
    assert outcome.problems == []


def test_one_pass_skips_the_fix_that_overlaps_an_earlier_one() -> None:
    fixable = order_fixes([d for d in check_source(SOURCE, "head.py", SETTINGS) if d.fix])
    assert _codes(fixable) == ["TL201", "TL202", "TL201", "TL202", "TL102", "TL201"]
    text, applied = apply_fixes(SOURCE, fixable)
    # Both TL202 fixes lie inside a TL201 fix (the wider fix starting at the same place wins).
    assert _codes(applied) == ["TL201", "TL201", "TL102", "TL201"]
    assert text == SAFE_FIXED


@pytest.mark.parametrize("unsafe", [False, True])
def test_fixing_twice_changes_nothing_the_second_time(unsafe: bool) -> None:
    first = fix_text(SOURCE, "head.py", SETTINGS, unsafe=unsafe)
    second = fix_text(first.text, "head.py", SETTINGS, unsafe=unsafe)
    assert second.text == first.text
    assert second.fixed == {}


def test_noqa_suppressed_findings_are_not_fixed() -> None:
    source = "import torch\nc = torch.Tensor([1, 2])  # noqa: TL102\nd = torch.Tensor([3])\n"
    outcome = fix_text(source, "m.py", SETTINGS)
    assert outcome.text == (
        "import torch\nc = torch.Tensor([1, 2])  # noqa: TL102\nd = torch.tensor([3], dtype=torch.get_default_dtype())\n"
    )


def test_noqa_after_a_form_feed_still_suppresses_and_is_not_fixed() -> None:
    source = "import torch\nx = 1\x0c\ny = torch.Tensor([1])  # noqa: TL102\n"
    assert check_source(source, "m.py", SETTINGS) == []
    assert fix_text(source, "m.py", SETTINGS).text == source


# Applying edits ---------------------------------------------------------------------------


def _finding(code: str, *edits: tuple[tuple[int, int], tuple[int, int], str]) -> Diagnostic:
    """A finding carrying hand-written edits, to drive `apply_fixes` through its corner cases."""
    fix = Fix(Applicability.SAFE, "fix", tuple(Edit(text, Location(*start), Location(*end)) for start, end, text in edits))
    start = fix.edits[0].location
    return Diagnostic(code, "name", "message", "m.py", start, start, Severity.ERROR, fix=fix)


def test_identical_edits_of_two_fixes_are_applied_once() -> None:
    text = "a = 1\nb = 2\n"
    first = _finding("TL001", ((1, 1), (1, 1), "import math\n"), ((1, 5), (1, 6), "math.pi"))
    second = _finding("TL002", ((1, 1), (1, 1), "import math\n"), ((2, 5), (2, 6), "math.e"))
    fixed, applied = apply_fixes(text, [first, second])
    assert applied == [first, second]
    assert fixed == "import math\na = math.pi\nb = math.e\n"


def test_two_insertions_at_one_place_conflict() -> None:
    first = _finding("TL001", ((1, 1), (1, 1), "import math\n"))
    second = _finding("TL002", ((1, 1), (1, 1), "import os\n"))
    fixed, applied = apply_fixes("a = 1\n", [first, second])
    assert (fixed, applied) == ("import math\na = 1\n", [first])


def test_an_insertion_touching_a_replacement_conflicts() -> None:
    replace = _finding("TL001", ((1, 1), (1, 6), "b = 2"))
    insert = _finding("TL002", ((1, 1), (1, 1), "import os\n"))
    assert apply_fixes("a = 1\n", [replace, insert]) == ("b = 2\n", [replace])


def test_adjacent_replacements_both_apply() -> None:
    left = _finding("TL001", ((1, 5), (1, 6), "x"))
    right = _finding("TL002", ((1, 6), (1, 7), "y"))
    assert apply_fixes("f = (a)\n", [left, right]) == ("f = xy)\n", [left, right])


def test_a_fix_with_an_edit_outside_the_text_is_skipped() -> None:
    outside = _finding("TL001", ((5, 1), (5, 2), "x"))
    past_the_row = _finding("TL002", ((1, 3), (1, 40), "x"))
    valid = _finding("TL003", ((1, 1), (1, 2), "b"))
    assert apply_fixes("a = 1\n", [outside, past_the_row, valid]) == ("b = 1\n", [valid])


def test_an_edit_never_splits_a_crlf() -> None:
    text = "a = 1\r\nb = 2\r\n"
    line_end = _finding("TL001", ((1, 6), (1, 6), " + 1"))
    inside_crlf = _finding("TL002", ((1, 7), (1, 7), "x"))
    assert apply_fixes(text, [inside_crlf, line_end]) == ("a = 1 + 1\r\nb = 2\r\n", [line_end])


def test_a_fix_whose_own_edits_overlap_is_skipped() -> None:
    crossed = _finding("TL001", ((1, 1), (1, 4), "x"), ((1, 3), (1, 5), "y"))
    assert apply_fixes("a = 1\n", [crossed]) == ("a = 1\n", [])


def test_columns_are_characters_and_a_tab_is_one() -> None:
    source = "import torch\n\tx = 'é€😀'; y = torch.Tensor([1])\n".replace("\t", "if 1:\n\t", 1)
    outcome = fix_text(source, "m.py", SETTINGS)
    assert outcome.text == source.replace("torch.Tensor([1])", "torch.tensor([1], dtype=torch.get_default_dtype())")


def test_form_feed_and_line_separator_are_not_line_breaks() -> None:
    # Python and libcst do not break lines at \f or \u2028 (str.splitlines does).
    source = "import torch\n\x0c\n# one\u2028two\nx = '\x0c'; y = torch.Tensor([1])\n"
    outcome = fix_text(source, "m.py", SETTINGS)
    assert outcome.text == source.replace("torch.Tensor([1])", "torch.tensor([1], dtype=torch.get_default_dtype())")


# Fixes that would make invalid code ------------------------------------------------------


def _patch_tl102_fix(monkeypatch: pytest.MonkeyPatch, make) -> None:
    """Make the real TL102 rule offer `make(original fix text)` instead of its fix (a buggy rule)."""
    original = LegacyTensorConstructor._data_fix

    def patched(self, node, name, on_cuda):
        spec = original(self, node, name, on_cuda)
        if spec is None:
            return None
        ((target, replacement),) = spec.replacements
        return FixSpec(spec.message, ((target, make(replacement, self.ctx.code_for(node))),), spec.applicability)

    monkeypatch.setattr(LegacyTensorConstructor, "_data_fix", patched)


def test_a_fix_that_would_not_parse_is_dropped_and_the_others_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_tl102_fix(monkeypatch, lambda fixed, old: fixed[:-1])  # drops a closing parenthesis
    outcome = fix_text(SOURCE, "head.py", SETTINGS)
    assert outcome.text == SAFE_FIXED.replace(
        "torch.tensor([1, 2], dtype=torch.get_default_dtype())", "torch.Tensor([1, 2])"
    )
    assert outcome.fixed == {"TL201": 3}
    assert len(outcome.problems) == 1
    assert outcome.problems[0].startswith("torchlint: error: head.py:8:9: the TL102 fix was not applied")
    assert "libcst cannot parse it" in outcome.problems[0]
    assert "TL102" in _codes(outcome.diagnostics)


def test_a_fix_that_parses_but_does_not_compile_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    # libcst accepts `await` in a plain function; compile() does not.
    _patch_tl102_fix(monkeypatch, lambda fixed, old: f"(await {fixed})")
    outcome = fix_text(SOURCE, "head.py", SETTINGS)
    assert "torch.Tensor([1, 2])" in outcome.text
    assert len(outcome.problems) == 1
    assert "SyntaxError: 'await' outside async function" in outcome.problems[0]


def test_a_file_that_did_not_compile_needs_only_to_parse_after_fixing() -> None:
    source = "import torch\nc = torch.Tensor([1, 2])\nreturn c\n"  # `return` outside a function
    outcome = fix_text(source, "m.py", SETTINGS)
    assert outcome.text == source.replace("torch.Tensor([1, 2])", "torch.tensor([1, 2], dtype=torch.get_default_dtype())")
    assert outcome.problems == []


def test_a_fix_that_changes_nothing_stops_the_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_tl102_fix(monkeypatch, lambda fixed, old: old)
    source = "import torch\nc = torch.Tensor([1, 2])\n"
    outcome = fix_text(source, "m.py", SETTINGS)
    assert outcome.text == source
    assert outcome.fixed == {}
    assert outcome.problems == [
        f"torchlint: warning: m.py: fixes did not settle within {MAX_PASSES} passes; "
        "the findings still fixable are reported"
    ]


def test_fixes_that_never_settle_stop_after_the_last_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_tl102_fix(monkeypatch, lambda fixed, old: old.replace("(", "((", 1).replace(")", "))", 1))
    outcome = fix_text("import torch\nc = torch.Tensor([1, 2])\n", "m.py", SETTINGS)
    assert outcome.fixed == {"TL102": MAX_PASSES}
    assert "(" * (MAX_PASSES + 1) + "[1, 2]" in outcome.text
    assert len(outcome.problems) == 1 and "did not settle" in outcome.problems[0]


# Text details -----------------------------------------------------------------------------


def test_edits_use_the_newline_of_the_file() -> None:
    assert _in_newline("import os\nx = (\n  1)", "\r\n") == "import os\r\nx = (\r\n  1)"
    assert _in_newline("a\r\nb\rc\n", "\r\n") == "a\r\nb\r\nc\r\n"
    assert _in_newline("a\r\nb\n", "\n") == "a\nb\n"
    assert _in_newline("a\nb", "\n") == "a\nb"


def test_an_edit_uses_the_newline_of_its_row_where_a_text_mixes_them() -> None:
    # A notebook's view joins cells written on different systems; a cell edited in another
    # cell's newline would no longer parse on its own (libcst: "Found newline ... but it's not EOL").
    source = "import torch\nopt = torch.optim.RAdam(\r\n    params,\r\n    weight_decay=1e-4,\r\n)\r\n"
    outcome = fix_text(source, "m.py", Settings(rules=(get_rule("TL016"),)), unsafe=True)
    assert outcome.fixed == {"TL016": 1}
    assert outcome.text == source.replace("1e-4,\r\n", "1e-4,\r\n    decoupled_weight_decay=True,\r\n")


def test_libcst_round_trips_crlf_and_multiline_fix_text_keeps_it_and_the_indentation() -> None:
    source = "import torch.nn.functional as F\r\n\r\n\r\ndef f(x):\r\n    return F.softmax(\r\n        x,\r\n    )\r\n"
    module = cst.parse_module(source)
    assert module.default_newline == "\r\n"
    assert module.code == source
    (finding,) = check_source(source, "m.py", SETTINGS)
    (edit,) = finding.fix.edits
    # The continuation lines keep their place (8 and 4 columns in), with the file's CRLF.
    assert edit.content == "F.softmax(\r\n        x,\r\n    dim=-1)"


def test_keep_final_newline() -> None:
    assert _keep_final_newline("a\r\n", "b") == "b\r\n"
    assert _keep_final_newline("a", "b\n") == "b"
    assert _keep_final_newline("a\n", "b\n") == "b\n"
    assert _keep_final_newline("a", "b") == "b"


def test_unified_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff("a = 1\nb = 2", "a = 1\nb = 3", "m.py")
    assert diff == "--- m.py\n+++ m.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n\\ No newline at end of file\n+b = 3\n\\ No newline at end of file\n"


# Files ------------------------------------------------------------------------------------


def _write(tmp_path, name: str, data: bytes, mode: int | None = None):
    path = tmp_path / name
    path.write_bytes(data)
    if mode is not None:
        os.chmod(path, mode)
    return path


def test_crlf_file_stays_crlf(tmp_path) -> None:
    source = SOURCE.replace("torch.log(F.softmax(logits))", "torch.log(F.softmax(\n        logits))")
    path = _write(tmp_path, "m.py", source.replace("\n", "\r\n").encode())
    result = fix_file(str(path), SETTINGS, unsafe=True)
    assert result.written and result.problems == []
    data = path.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n") and b"\r\r" not in data
    expected = ALL_FIXED.replace("a = F.log_softmax(logits, dim=-1)", "a = F.log_softmax(\n        logits, dim=-1)")
    assert data == expected.replace("\n", "\r\n").encode()


def test_bom_and_utf8_text_are_kept(tmp_path) -> None:
    source = "# café ☕\n" + SOURCE
    path = _write(tmp_path, "m.py", b"\xef\xbb\xbf" + source.encode())
    fix_file(str(path), SETTINGS)
    assert path.read_bytes() == b"\xef\xbb\xbf" + ("# café ☕\n" + SAFE_FIXED).encode()


def test_declared_encoding_is_kept(tmp_path) -> None:
    source = "# -*- coding: latin-1 -*-\n# café\n" + SOURCE
    path = _write(tmp_path, "m.py", source.encode("latin-1"))
    fix_file(str(path), SETTINGS)
    assert path.read_bytes() == ("# -*- coding: latin-1 -*-\n# café\n" + SAFE_FIXED).encode("latin-1")


def test_fixed_text_that_the_encoding_cannot_hold_is_not_written(tmp_path, monkeypatch) -> None:
    _patch_tl102_fix(monkeypatch, lambda fixed, old: f'{fixed} if "π" else None')
    data = "# -*- coding: latin-1 -*-\nimport torch\nc = torch.Tensor([1, 2])  # é\n".encode("latin-1")
    path = _write(tmp_path, "m.py", data)
    result = fix_file(str(path), SETTINGS, display_name="m.py")
    assert path.read_bytes() == data
    assert not result.written and result.fixed == {}
    assert result.problems == ["torchlint: error: m.py: fixes not applied: the fixed text cannot be encoded "
                               "as iso-8859-1 (ordinal not in range(256))"]
    assert [(d.code, d.location.row) for d in result.diagnostics] == [("TL102", 3)]  # as in the file


@pytest.mark.parametrize("mode", [0o644, 0o755, 0o600, 0o664])
def test_permissions_are_kept(tmp_path, mode: int) -> None:
    path = _write(tmp_path, "m.py", SOURCE.encode(), mode)
    assert fix_file(str(path), SETTINGS).written
    assert stat.S_IMODE(os.stat(path).st_mode) == mode


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write any file")
def test_a_read_only_file_is_not_written(tmp_path) -> None:
    path = _write(tmp_path, "m.py", SOURCE.encode(), 0o444)
    result = fix_file(str(path), SETTINGS, display_name="m.py")
    assert not result.written and path.read_text() == SOURCE
    assert result.problems == ["torchlint: error: m.py: fixes not applied: cannot write it: the file is not writable"]


def test_a_file_the_user_may_not_write_is_not_written(tmp_path, monkeypatch) -> None:
    # (As root, where the read-only test above cannot run, `os.access` is what says no.)
    path = _write(tmp_path, "m.py", SOURCE.encode())
    monkeypatch.setattr(os, "access", lambda path, mode: mode != os.W_OK)
    result = fix_file(str(path), SETTINGS, display_name="m.py")
    assert not result.written and path.read_text() == SOURCE and os.listdir(tmp_path) == ["m.py"]
    assert result.problems == ["torchlint: error: m.py: fixes not applied: cannot write it: the file is not writable"]


def test_missing_final_newline_stays_missing(tmp_path) -> None:
    path = _write(tmp_path, "m.py", b"import torch\nc = torch.Tensor([1, 2])")
    fix_file(str(path), SETTINGS)
    assert path.read_bytes() == b"import torch\nc = torch.tensor([1, 2], dtype=torch.get_default_dtype())"


def test_no_temporary_file_is_left_behind(tmp_path) -> None:
    path = _write(tmp_path, "m.py", SOURCE.encode())
    fix_file(str(path), SETTINGS)
    assert os.listdir(tmp_path) == ["m.py"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_a_symlink_stays_a_link_and_its_target_is_fixed(tmp_path) -> None:
    target = _write(tmp_path, "target.py", SOURCE.encode())
    link = tmp_path / "link.py"
    os.symlink(target, link)
    fix_file(str(link), SETTINGS)
    assert os.path.islink(link)
    assert target.read_text() == SAFE_FIXED


def test_write_atomically_refuses_a_file_that_changed(tmp_path) -> None:
    path = _write(tmp_path, "m.py", b"new content\n")
    with pytest.raises(FileChanged):
        write_atomically(str(path), b"what was read\n", b"fixed\n")
    assert path.read_bytes() == b"new content\n"
    assert os.listdir(tmp_path) == ["m.py"]


def test_a_failed_replace_leaves_the_file_and_no_temporary(tmp_path, monkeypatch) -> None:
    path = _write(tmp_path, "m.py", SOURCE.encode())

    def failing_replace(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    result = fix_file(str(path), SETTINGS, display_name="m.py")
    assert not result.written
    assert result.problems == ["torchlint: error: m.py: fixes not applied: cannot write it: No space left on device"]
    assert path.read_text() == SOURCE and os.listdir(tmp_path) == ["m.py"]
    assert _codes(result.diagnostics) == _codes(check_source(SOURCE, "m.py", SETTINGS))


def test_a_file_with_a_syntax_error_is_never_written(tmp_path) -> None:
    data = b"import torch\nc = torch.Tensor([1, 2])\ndef broken(:\n"
    path = _write(tmp_path, "m.py", data)
    result = fix_file(str(path), SETTINGS, unsafe=True)
    assert _codes(result.diagnostics) == ["TL901"] and not result.written
    assert path.read_bytes() == data


def test_an_unreadable_file_is_never_written(tmp_path) -> None:
    data = b"import torch\nc = torch.Tensor([1, 2])\nname = '\xff'\n"  # not UTF-8
    path = _write(tmp_path, "m.py", data)
    result = fix_file(str(path), SETTINGS)
    assert _codes(result.diagnostics) == ["TL902"] and not result.written
    assert path.read_bytes() == data


def test_diff_only_writes_nothing(tmp_path) -> None:
    path = _write(tmp_path, "m.py", SOURCE.encode())
    result = fix_file(str(path), SETTINGS, display_name="m.py", write=False, diff=True)
    assert path.read_text() == SOURCE and not result.written
    assert result.diff == unified_diff(SOURCE, SAFE_FIXED, "m.py")
    assert result.fixed == {"TL201": 3, "TL102": 1}


if sys.platform == "win32":  # pragma: no cover - permissions and links behave differently there
    pytestmark = pytest.mark.skip(reason="POSIX file semantics")
