"""Editing Python files in the editor: findings on open, change, save and close; hover; the
quick fix, fix-all and `# noqa` code actions applied to the buffer."""

from __future__ import annotations

import ast
import textwrap

import pytest
from lsprotocol import types

from tests.conftest import run_torchlint
from tests.server.lsp_client import Document, EditorClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEGACY = textwrap.dedent("""\
    import torch

    x = torch.Tensor(3)
""")
# A legacy constructor given values: the one TL102 finding with a (safe) fix.
FIXABLE = LEGACY.replace("torch.Tensor(3)", "torch.Tensor([3.0])")
CLEAN = textwrap.dedent("""\
    import torch

    x = torch.zeros(3)
""")


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return [d.code for d in diagnostics]


def cli_fix(tmp_path, text: str, *options: str) -> str:
    """What `torchlint check --fix` writes for this text, hints included as in the editor."""
    path = tmp_path / "cli_fixed.py"
    path.write_text(text, encoding="utf-8")
    run_torchlint("check", "--show-hints", "--fix", "--no-cache", *options, str(path), cwd=tmp_path)
    return path.read_text(encoding="utf-8")


async def test_open_publishes_findings_with_rule_code_link_and_severity(editor: EditorClient, workspace):
    _, diagnostics = await Document.open(editor, workspace / "open.py", LEGACY)
    assert codes(diagnostics) == ["TL102"]
    finding = diagnostics[0]
    assert finding.range == types.Range(start=types.Position(2, 4), end=types.Position(2, 19))
    assert finding.severity == types.DiagnosticSeverity.Warning
    assert finding.source == "torchlint"
    assert finding.code_description.href.endswith("/docs/rules/TL102.md")
    assert "allocates uninitialized memory" in finding.message


async def test_deprecated_api_is_tagged_deprecated(editor: EditorClient, workspace):
    text = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
    _, diagnostics = await Document.open(editor, workspace / "deprecated.py", text)
    assert codes(diagnostics) == ["TL501"]
    assert list(diagnostics[0].tags) == [types.DiagnosticTag.Deprecated]


async def test_the_unsaved_buffer_is_checked_not_the_file(editor: EditorClient, workspace):
    path = workspace / "buffer.py"
    path.write_text(CLEAN, encoding="utf-8")
    document, diagnostics = await Document.open(editor, path, CLEAN)
    assert diagnostics == []
    assert codes(await document.change(LEGACY)) == ["TL102"]
    assert path.read_text(encoding="utf-8") == CLEAN
    assert await document.change(CLEAN) == []


async def test_incremental_change_is_applied_to_the_buffer(editor: EditorClient, workspace):
    document, _ = await Document.open(editor, workspace / "incremental.py", CLEAN)
    since = len(editor.published)
    editor.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=document.uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(2, 10), end=types.Position(2, 15)), text="Tensor",
        )],
    ))
    diagnostics = await editor.published_for(document.uri, since, 2)
    assert codes(diagnostics) == ["TL102"]


async def test_save_publishes_and_close_clears(editor: EditorClient, workspace):
    document, _ = await Document.open(editor, workspace / "saved.py", LEGACY)
    since = len(editor.published)
    editor.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=document.uri))
    )
    assert codes(await editor.published_for(document.uri, since, 1)) == ["TL102"]
    assert await document.close() == []


async def test_syntax_error_mid_edit_is_one_tl901_and_the_server_goes_on(editor: EditorClient, workspace):
    document, _ = await Document.open(editor, workspace / "typing.py", LEGACY)
    broken = LEGACY + "def f(:\n    y = torch.Tensor(2)\n"
    diagnostics = await document.change(broken)
    assert codes(diagnostics) == ["TL901"]
    assert diagnostics[0].severity == types.DiagnosticSeverity.Error
    assert diagnostics[0].range.start.line == 3
    assert codes(await document.change(LEGACY + "def f():\n    y = torch.Tensor(2)\n")) == ["TL102", "TL102"]


async def test_hover_on_a_finding_shows_the_rule_summary_and_its_fix(editor: EditorClient, workspace):
    document, diagnostics = await Document.open(editor, workspace / "hover.py", FIXABLE)
    hover = await editor.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=document.uri), position=types.Position(2, 8),
    ))
    assert hover.contents.kind == types.MarkupKind.Markdown
    text = hover.contents.value
    assert "**TL102**" in text and "legacy-tensor-constructor" in text
    assert "Legacy tensor constructor: integer arguments become a shape" in text  # the rule's summary
    assert "**Fix** (safe):" in text
    assert hover.range == diagnostics[0].range
    outside = await editor.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=document.uri), position=types.Position(0, 2),
    ))
    assert outside is None


async def test_quick_fix_applied_to_the_buffer_matches_check_fix(editor: EditorClient, workspace, tmp_path):
    document, diagnostics = await Document.open(editor, workspace / "quickfix.py", FIXABLE)
    actions = await document.code_actions(diagnostics[0], only=[types.CodeActionKind.QuickFix])
    fix = next(action for action in actions if action.is_preferred)
    assert fix.kind == types.CodeActionKind.QuickFix
    assert "TL102" in fix.title and "unsafe" not in fix.title
    assert list(fix.diagnostics) == [diagnostics[0]]
    assert await document.apply(fix) == []
    ast.parse(document.text)
    assert document.text == cli_fix(tmp_path, FIXABLE) != FIXABLE


async def test_fix_all_matches_check_fix(editor: EditorClient, workspace, tmp_path):
    text = textwrap.dedent("""\
        import torch

        def scores(x):
            a = torch.Tensor([3.0])
            y = x.permute(0, 2, 1).view(4, -1)
            return torch.log(torch.softmax(y, dim=1)), a
    """)
    document, diagnostics = await Document.open(editor, workspace / "fixall.py", text)
    assert sorted(codes(diagnostics)) == ["TL101", "TL102", "TL201"]
    whole = types.Range(start=types.Position(0, 0), end=types.Position(0, 0))
    actions = await document.code_actions(selection=whole, only=["source.fixAll"])
    assert [action.kind for action in actions] == ["source.fixAll.torchlint"]
    assert await document.apply(actions[0]) == []
    ast.parse(document.text)
    assert document.text == cli_fix(tmp_path, text)


async def test_no_fix_all_when_nothing_is_fixable(editor: EditorClient, workspace):
    text = "import torch\n\nfor x in data:\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
    document, diagnostics = await Document.open(editor, workspace / "nothing_fixable.py", text)
    assert codes(diagnostics) == ["TL001"]
    actions = await document.code_actions(diagnostics[0])
    assert [action.title for action in actions] == ["Disable TL001 for this line"]


async def test_unsafe_fix_is_not_offered_by_default(editor: EditorClient, workspace):
    text = "import torch.nn.functional as F\n\np = F.softmax(x)\n"
    document, diagnostics = await Document.open(editor, workspace / "unsafe.py", text)
    assert codes(diagnostics) == ["TL202"]
    actions = await document.code_actions(diagnostics[0])
    assert [action.title for action in actions] == ["Disable TL202 for this line"]


async def test_noqa_action_adds_a_comment_then_extends_it(editor: EditorClient, workspace):
    text = "import torch\n\ny = torch.log(torch.softmax(torch.Tensor(3), dim=0))\n"
    document, diagnostics = await Document.open(editor, workspace / "noqa.py", text)
    assert sorted(codes(diagnostics)) == ["TL102", "TL201"]
    first = next(d for d in diagnostics if d.code == "TL102")
    actions = await document.code_actions(first)
    noqa = next(action for action in actions if action.title == "Disable TL102 for this line")
    assert codes(await document.apply(noqa)) == ["TL201"]
    assert document.text.splitlines()[2].endswith("  # noqa: TL102")
    remaining = editor.diagnostics[document.uri][0]
    actions = await document.code_actions(remaining)
    noqa = next(action for action in actions if action.title == "Disable TL201 for this line")
    assert await document.apply(noqa) == []
    assert document.text.splitlines()[2].endswith("  # noqa: TL102, TL201")
    ast.parse(document.text)


async def test_noqa_action_where_the_row_ends_inside_a_string_goes_where_the_string_ends(
    editor: EditorClient, workspace
):
    text = 'import torch\n\nx = torch.Tensor(3), """\nnot code\n"""\n'
    document, diagnostics = await Document.open(editor, workspace / "in_string.py", text)
    assert codes(diagnostics) == ["TL102"]
    actions = await document.code_actions(diagnostics[0])
    noqa = next(action for action in actions if action.title == "Disable TL102 for this line")
    assert await document.apply(noqa) == []
    assert document.text.splitlines()[2:] == ['x = torch.Tensor(3), """', "not code", '"""  # noqa: TL102']


async def test_related_places_are_published_as_related_information(editor: EditorClient, workspace):
    text = textwrap.dedent("""\
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.zero_grad()
            optimizer.step()
    """)
    document, diagnostics = await Document.open(editor, workspace / "related.py", text)
    [finding] = [d for d in diagnostics if d.code == "TL002"]
    assert [(info.location.uri, info.location.range.start.line, info.message) for info in finding.related_information] == [
        (document.uri, 2, "the gradients are computed here"),
        (document.uri, 4, "the step that should use them runs here"),
    ]


SHAPED = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Scores(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.query = nn.Linear(width, width)

        def forward(self, x):
            q = self.query(x)
            return q @ q.transpose(-2, -1)


    Scores(32)(torch.randn(4, 10, 32))
""")


async def test_hover_shows_the_shape_the_example_input_gives(editor: EditorClient, workspace):
    document, diagnostics = await Document.open(editor, workspace / "shaped.py", SHAPED)
    assert diagnostics == []
    hover = await editor.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=document.uri), position=types.Position(11, 15),
    ))
    assert hover.contents.value == "`q`: shape (4, 10, 32)"
    assert hover.range == types.Range(start=types.Position(11, 15), end=types.Position(11, 16))
    target = await editor.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=document.uri), position=types.Position(10, 8),
    ))
    assert target.contents.value == "`q`: shape (4, 10, 32)"  # an assignment's target: the value assigned


BUILT_TWICE = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Proj(nn.Module):
        def __init__(self, d_in, d_out):
            super().__init__()
            self.fc = nn.Linear(d_in, d_out)

        def forward(self, x):
            y = self.fc(x)
            return y


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Proj(4, 8)
            self.b = Proj(8, 3)

        def forward(self, x):
            return self.b(self.a(x))


    Net()(torch.randn(5, 4))
""")


async def test_hover_in_a_class_built_twice_shows_each_constructions_shape(editor: EditorClient, workspace):
    document, _ = await Document.open(editor, workspace / "built_twice.py", BUILT_TWICE)
    hover = await editor.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=document.uri), position=types.Position(10, 8),
    ))
    assert hover.contents.value == (
        "`y`: shape (5, 8) as `Proj(4, 8)` builds it; shape (5, 3) as `Proj(8, 3)` builds it"
    )
