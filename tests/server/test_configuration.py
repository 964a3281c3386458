"""Each document's `[tool.torchlint]` comes from the nearest pyproject.toml above it, as for the
CLI; it is read again when it changes, and a broken one is reported once."""

from __future__ import annotations

import textwrap

import pytest
from lsprotocol import types

from tests.server.lsp_client import Document, EditorClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

TWO_FINDINGS = "import torch\n\ny = torch.log(torch.softmax(torch.Tensor(3), dim=0))\n"


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return sorted(d.code for d in diagnostics)


def project(root, name: str, table: str):
    directory = root / name
    directory.mkdir()
    (directory / "pyproject.toml").write_text(f"[tool.torchlint]\n{textwrap.dedent(table)}", encoding="utf-8")
    return directory


def notify_changed(client: EditorClient, path) -> int:
    since = len(client.published)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Changed)]
    ))
    return since


async def test_select_ignore_and_per_file_ignores_are_honoured(editor: EditorClient, workspace):
    directory = project(workspace, "ignoring", """\
        ignore = ["TL201"]
        per-file-ignores = { "legacy_ok.py" = ["TL102"] }
    """)
    _, diagnostics = await Document.open(editor, directory / "model.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL102"]
    _, diagnostics = await Document.open(editor, directory / "legacy_ok.py", TWO_FINDINGS)
    assert diagnostics == []


async def test_the_nearest_pyproject_applies(editor: EditorClient, workspace):
    outer = project(workspace, "outer", 'ignore = ["TL201"]\n')
    inner = outer / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL201"]\n', encoding="utf-8")
    _, diagnostics = await Document.open(editor, outer / "a.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL102"]
    _, diagnostics = await Document.open(editor, inner / "b.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL201"]


async def test_an_excluded_file_gets_no_findings(editor: EditorClient, workspace):
    directory = project(workspace, "excluding", 'extend-exclude = ["generated"]\n')
    (directory / "generated").mkdir()
    _, diagnostics = await Document.open(editor, directory / "generated" / "ops.py", TWO_FINDINGS)
    assert diagnostics == []
    _, diagnostics = await Document.open(editor, directory / "kept.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL102", "TL201"]


async def test_a_changed_pyproject_is_read_again_and_open_documents_rechecked(editor: EditorClient, workspace):
    # The server registers its file watchers after `initialized`: possibly after this test began.
    await editor.wait_for(
        lambda: next((r for r in editor.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES), None),
        "a file-watcher registration",
    )
    directory = project(workspace, "reloading", "")
    document, diagnostics = await Document.open(editor, directory / "model.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL102", "TL201"]
    config = directory / "pyproject.toml"
    config.write_text('[tool.torchlint]\nignore = ["TL102"]\n', encoding="utf-8")
    since = notify_changed(editor, config)
    assert codes(await editor.published_for(document.uri, since)) == ["TL201"]


async def test_saving_pyproject_in_the_editor_rechecks(editor: EditorClient, workspace):
    directory = project(workspace, "saving", "")
    document, _ = await Document.open(editor, directory / "model.py", TWO_FINDINGS)
    config = directory / "pyproject.toml"
    config.write_text('[tool.torchlint]\nselect = ["TL102"]\n', encoding="utf-8")
    since = len(editor.published)
    editor.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=config.as_uri()))
    )
    assert codes(await editor.published_for(document.uri, since)) == ["TL102"]


async def test_a_broken_config_is_reported_once_and_the_defaults_apply(editor: EditorClient, workspace):
    directory = project(workspace, "broken", 'ignore = ["TL201"\n')
    before = len(editor.messages)
    _, diagnostics = await Document.open(editor, directory / "first.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL102", "TL201"]
    _, diagnostics = await Document.open(editor, directory / "second.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL102", "TL201"]
    [message] = editor.messages[before:]
    assert message.type == types.MessageType.Error
    assert "invalid TOML" in message.message and str(directory / "pyproject.toml") in message.message
    config = directory / "pyproject.toml"
    config.write_text('[tool.torchlint]\nignore = ["TL201"]\n', encoding="utf-8")
    since = notify_changed(editor, config)
    assert codes(await editor.published_for((directory / "first.py").as_uri(), since)) == ["TL102"]
    assert len(editor.messages) == before + 1
