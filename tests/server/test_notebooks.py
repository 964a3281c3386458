"""Notebooks through LSP 3.17 notebook document sync: the code cells are checked together and
each finding is published on its cell, with a range relative to the cell."""

from __future__ import annotations

import json

import pytest
from lsprotocol import types

from tests.conftest import run_torchlint
from tests.server.lsp_client import EditorClient, apply_workspace_edit

pytestmark = pytest.mark.asyncio(loop_scope="module")

CELLS = [
    (types.NotebookCellKind.Code, "import torch\n%matplotlib inline"),
    (types.NotebookCellKind.Markup, "# torch.Tensor(3) in prose is no finding"),
    (types.NotebookCellKind.Code, "!nvidia-smi\ndata = [1, 2]\nx = torch.Tensor(3)"),
]


class Notebook:
    def __init__(self, client: EditorClient, path, cells) -> None:
        self.client, self.uri, self.version = client, path.as_uri(), 1
        self.cell_uris = [f"vscode-notebook-cell:{path}#cell{index}" for index in range(len(cells))]
        self.cell_versions = [1] * len(cells)

    @classmethod
    async def open(cls, client: EditorClient, path, cells):
        """Open the notebook; returns it and the diagnostics published for each code cell."""
        notebook = cls(client, path, cells)
        since = len(client.published)
        client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook.uri, notebook_type="jupyter-notebook", version=1,
                cells=[types.NotebookCell(kind=kind, document=uri) for (kind, _), uri in zip(cells, notebook.cell_uris)],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=uri, language_id="python" if kind == types.NotebookCellKind.Code else "markdown",
                                       version=1, text=text)
                for (kind, text), uri in zip(cells, notebook.cell_uris)
            ],
        ))
        return notebook, await notebook.cell_diagnostics(since, cells)

    async def cell_diagnostics(self, since: int, cells) -> dict[int, list[types.Diagnostic]]:
        return {
            index: await self.client.published_for(uri, since)
            for index, ((kind, _), uri) in enumerate(zip(cells, self.cell_uris)) if kind == types.NotebookCellKind.Code
        }

    def change_cell(self, index: int, text: str) -> None:
        self.version += 1
        self.cell_versions[index] += 1
        document = types.VersionedTextDocumentIdentifier(uri=self.cell_uris[index], version=self.cell_versions[index])
        self.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=self.version, uri=self.uri),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=document, changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                )
            ])),
        ))


async def test_findings_land_on_their_cell_with_cell_relative_ranges(editor: EditorClient, workspace):
    _, per_cell = await Notebook.open(editor, workspace / "train.ipynb", CELLS)
    assert per_cell[0] == []  # the magic is masked, not a syntax error
    [finding] = per_cell[2]
    assert finding.code == "TL102"
    assert finding.range == types.Range(start=types.Position(2, 4), end=types.Position(2, 19))


async def test_cells_are_checked_together_and_a_change_rechecks(editor: EditorClient, workspace):
    cells = [(types.NotebookCellKind.Code, "import torch"), (types.NotebookCellKind.Code, "y = 1")]
    notebook, per_cell = await Notebook.open(editor, workspace / "together.ipynb", cells)
    assert per_cell == {0: [], 1: []}
    since = len(editor.published)
    # `torch` comes from the first cell: the second is a finding only because both are checked together.
    notebook.change_cell(1, "y = 1\nz = torch.Tensor(2)")
    diagnostics = await editor.published_for(notebook.cell_uris[1], since)
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("TL102", 1)]


async def test_syntax_error_in_a_cell_is_one_tl901_on_that_cell(editor: EditorClient, workspace):
    cells = [(types.NotebookCellKind.Code, "import torch"), (types.NotebookCellKind.Code, "def f(:\n    pass")]
    _, per_cell = await Notebook.open(editor, workspace / "broken.ipynb", cells)
    assert per_cell[0] == []
    assert [(d.code, d.range.start.line) for d in per_cell[1]] == [("TL901", 0)]


async def cell_actions(editor: EditorClient, notebook: Notebook, index: int, finding) -> dict[str, types.CodeAction]:
    actions = await editor.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=notebook.cell_uris[index]), range=finding.range,
        context=types.CodeActionContext(diagnostics=[finding]),
    ))
    return {action.title: action for action in actions}


async def test_quick_fix_on_a_cell_matches_check_fix_of_the_notebook(editor: EditorClient, workspace, tmp_path):
    # Values given to the legacy constructor: the TL102 finding with a (safe) fix.
    cells = [(kind, text.replace("torch.Tensor(3)", "torch.Tensor([3.0])")) for kind, text in CELLS]
    notebook, per_cell = await Notebook.open(editor, workspace / "fix.ipynb", cells)
    [finding] = per_cell[2]
    actions = await cell_actions(editor, notebook, 2, finding)
    assert "Fix all torchlint findings" not in actions  # fix-all is for Python files
    fixed = apply_workspace_edit(cells[2][1], notebook.cell_uris[2], actions["Replace with `torch.tensor(...)` (TL102)"].edit)
    on_disk = tmp_path / "fix.ipynb"
    on_disk.write_text(json.dumps({"cells": [
        {"cell_type": "code" if kind == types.NotebookCellKind.Code else "markdown", "source": text,
         "metadata": {}, **({"outputs": [], "execution_count": None} if kind == types.NotebookCellKind.Code else {})}
        for kind, text in cells
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    run_torchlint("check", "--show-hints", "--fix", "--no-cache", str(on_disk), cwd=tmp_path)
    assert fixed == json.loads(on_disk.read_text(encoding="utf-8"))["cells"][2]["source"] != cells[2][1]


async def test_noqa_action_on_a_cell_edits_that_cell(editor: EditorClient, workspace):
    notebook, per_cell = await Notebook.open(editor, workspace / "noqa.ipynb", CELLS)
    [finding] = per_cell[2]
    actions = await cell_actions(editor, notebook, 2, finding)
    new_text = apply_workspace_edit(CELLS[2][1], notebook.cell_uris[2], actions["Disable TL102 for this line"].edit)
    assert new_text == "!nvidia-smi\ndata = [1, 2]\nx = torch.Tensor(3)  # noqa: TL102"
    since = len(editor.published)
    notebook.change_cell(2, new_text)
    assert await editor.published_for(notebook.cell_uris[2], since) == []


async def test_closing_a_notebook_clears_its_cells(editor: EditorClient, workspace):
    notebook, _ = await Notebook.open(editor, workspace / "closed.ipynb", CELLS)
    since = len(editor.published)
    editor.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=notebook.uri),
        cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri in notebook.cell_uris],
    ))
    assert await editor.published_for(notebook.cell_uris[2], since) == []
