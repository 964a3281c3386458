"""The language server: findings while you type, quick fixes, fix-all, `# noqa` and hover.

Documents are checked from the editor's buffer (never the file on disk), in worker processes
(see scheduler.py); a notebook's code cells are checked together and each finding is published
on its cell. Code actions and hovers use the findings of the buffer's current text; a hover
also shows the shape the analysis knows for the expression under the cursor (`shapes.py`).
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path, uri_scheme

from torchlint import __version__
from torchlint.config import UNSUPPRESSIBLE
from torchlint.diagnostics import Applicability, Diagnostic, Location
from torchlint.fix import is_applicable
from torchlint.server import worker
from torchlint.server.convert import (
    FIX_ALL_KIND, changed_rows_edit, fix_edits, fix_title, hover_markdown, lsp_diagnostic, row_edit, text_range,
)
from torchlint.server.scheduler import Scheduler, WorkerPool
from torchlint.server.settings import DocumentSettings, EditorOptions, is_excluded
from torchlint.sources import source_rows

_PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True)
class Findings:
    """The findings published for one text document (a file or a notebook cell) and its text."""

    text: str
    diagnostics: list[Diagnostic]
    published: list[types.Diagnostic]
    in_notebook: bool = False


def _wanted(kind: str, only: list[str] | None) -> bool:
    """Does the client's `only` filter of code action kinds let `kind` through?"""
    return only is None or any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)


def _overlaps(first: types.Range, second: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return position.line, position.character

    return key(first.start) <= key(second.end) and key(second.start) <= key(first.end)


class TorchlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "torchlint", __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(
                    notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")],
                )],
                save=True,
            ),
        )
        self.options = EditorOptions()
        self.settings = DocumentSettings(self.options, self._show_error)
        self.pool: WorkerPool | None = None
        self.scheduler = Scheduler(self._log_error)
        self.findings: dict[str, Findings] = {}
        # The last fix-all per document: (text, fixed text), reused while the text stays the same.
        self.fixed_texts: dict[str, tuple[str, str]] = {}
        self.python_documents: set[str] = set()
        self.notebooks: set[str] = set()
        self._register_features()

    def _register_features(self) -> None:
        handlers = {
            types.INITIALIZE: self.initialize, types.INITIALIZED: self.initialized, types.SHUTDOWN: self.shutdown_pool,
            types.TEXT_DOCUMENT_DID_OPEN: self.did_open, types.TEXT_DOCUMENT_DID_CHANGE: self.did_change,
            types.TEXT_DOCUMENT_DID_SAVE: self.did_save, types.TEXT_DOCUMENT_DID_CLOSE: self.did_close,
            types.NOTEBOOK_DOCUMENT_DID_OPEN: self.notebook_did_open,
            types.NOTEBOOK_DOCUMENT_DID_CHANGE: self.notebook_did_change,
            types.NOTEBOOK_DOCUMENT_DID_SAVE: self.notebook_did_save,
            types.NOTEBOOK_DOCUMENT_DID_CLOSE: self.notebook_did_close,
            types.WORKSPACE_DID_CHANGE_WATCHED_FILES: self.watched_files_changed,
            types.TEXT_DOCUMENT_HOVER: self.hover,
        }
        # pygls marks each handler with attributes, which a bound method cannot hold; a partial can.
        for method, handler in handlers.items():
            self.feature(method)(functools.partial(handler))
        code_action_kinds = [types.CodeActionKind.QuickFix, FIX_ALL_KIND]
        self.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=code_action_kinds))(
            functools.partial(self.code_action)
        )

    # Messages to the user ---------------------------------------------------------------------

    def _show_error(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))

    def _log_error(self, message: str) -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=message))

    def _log(self, message: str) -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=message))

    # Life cycle and configuration --------------------------------------------------------------

    def initialize(self, params: types.InitializeParams) -> None:
        self.options = EditorOptions.from_initialization(params.initialization_options)
        self.settings = DocumentSettings(self.options, self._show_error)
        for problem in self.options.problems:
            self._show_error(f"torchlint: {problem}; it is ignored")
        if self.pool is None:
            self.pool = WorkerPool()
            self.pool.warm_up()

    def initialized(self, params: types.InitializedParams) -> None:
        """Ask the client to tell us when a pyproject.toml changes, where it can (when it cannot,
        a change is still read at the next check, and saving pyproject.toml in the editor rechecks)."""
        workspace = self.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        if watched and watched.dynamic_registration:
            watchers = [types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
            self.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
                id="torchlint-pyproject", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
            )]))

    def shutdown_pool(self, params: None) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def watched_files_changed(self, params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith("pyproject.toml") for change in params.changes):
            self._check_everything()

    def _check_everything(self) -> None:
        for uri in self.python_documents:
            self._schedule_text(uri, 0)
        for uri in self.notebooks:
            self._schedule_notebook(uri, 0)

    def _path(self, uri: str) -> Path:
        """The file a document is (a notebook's, for its cells); a document without a file is
        taken to lie in the workspace's root."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        uri = notebook.uri if notebook is not None else uri
        path = to_fs_path(uri) if uri_scheme(uri) == "file" else None
        return Path(path) if path else Path(self.workspace.root_path or os.getcwd()) / "untitled.py"

    # Text documents ----------------------------------------------------------------------------

    def did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        if document.language_id == "python" or document.uri.endswith(_PYTHON_SUFFIXES):
            self.python_documents.add(document.uri)
            self._schedule_text(document.uri, 0)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        if params.text_document.uri in self.python_documents:
            self._schedule_text(params.text_document.uri, self.options.debounce_seconds)

    def did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in self.python_documents:
            self._schedule_text(uri, 0)
        elif uri.endswith("pyproject.toml"):
            self._check_everything()

    def did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in self.python_documents:
            self.python_documents.discard(uri)
            self.scheduler.forget(uri)
            self._clear(uri)

    def _clear(self, uri: str) -> None:
        self.findings.pop(uri, None)
        self.fixed_texts.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def _schedule_text(self, uri: str, delay: float) -> None:
        self.scheduler.request(uri, delay, lambda is_current: self._check_text(uri, is_current))

    async def _check_text(self, uri: str, is_current) -> None:
        document = self.workspace.get_text_document(uri)
        text, version = document.source, document.version
        diagnostics = await self._check(self._path(uri), worker.check_text, text)
        if not is_current():
            self._log(f"torchlint: dropped the findings of version {version} of {uri}: a newer version arrived")
            return
        self._publish(uri, version, text, diagnostics)

    async def _check(self, path: Path, check, source) -> list[Diagnostic]:
        settings = self.settings.for_path(path)
        if is_excluded(path, settings):
            return []
        return await self.pool.call(check, source, str(path), settings)

    def _publish(self, uri: str, version: int | None, text: str, diagnostics: list[Diagnostic],
                 in_notebook: bool = False) -> None:
        published = self._to_lsp(uri, text, diagnostics)
        self.findings[uri] = Findings(text, diagnostics, published, in_notebook)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=published)
        )

    def _to_lsp(self, uri: str, text: str, diagnostics: list[Diagnostic]) -> list[types.Diagnostic]:
        rows = source_rows(text)
        return [lsp_diagnostic(diagnostic, uri, rows, self.workspace.position_codec) for diagnostic in diagnostics]

    # Notebooks ---------------------------------------------------------------------------------

    def notebook_did_open(self, params: types.DidOpenNotebookDocumentParams) -> None:
        self.notebooks.add(params.notebook_document.uri)
        self._schedule_notebook(params.notebook_document.uri, 0)

    def notebook_did_change(self, params: types.DidChangeNotebookDocumentParams) -> None:
        self._schedule_notebook(params.notebook_document.uri, self.options.debounce_seconds)

    def notebook_did_save(self, params: types.DidSaveNotebookDocumentParams) -> None:
        self._schedule_notebook(params.notebook_document.uri, 0)

    def notebook_did_close(self, params: types.DidCloseNotebookDocumentParams) -> None:
        self.notebooks.discard(params.notebook_document.uri)
        self.scheduler.forget(params.notebook_document.uri)
        for cell in params.cell_text_documents:
            self._clear(cell.uri)

    def _schedule_notebook(self, uri: str, delay: float) -> None:
        self.scheduler.request(uri, delay, lambda is_current: self._check_notebook(uri, is_current))

    async def _check_notebook(self, uri: str, is_current) -> None:
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return
        documents = [self.workspace.get_text_document(cell.document) for cell in notebook.cells
                     if cell.kind == types.NotebookCellKind.Code]
        cells = [document for document in documents if document.language_id in (None, "python")]
        texts, version = [cell.source for cell in cells], notebook.version
        diagnostics = await self._check(self._path(uri), worker.check_cells, texts)
        if not is_current():
            self._log(f"torchlint: dropped the findings of version {version} of {uri}: a newer version arrived")
            return
        per_cell: list[list[Diagnostic]] = [[] for _ in cells]
        for diagnostic in diagnostics:
            per_cell[diagnostic.cell - 1].append(diagnostic)
        for cell, text, cell_diagnostics in zip(cells, texts, per_cell):
            self._publish(cell.uri, cell.version, text, cell_diagnostics, in_notebook=True)

    # Code actions and hover --------------------------------------------------------------------

    async def _current_findings(self, uri: str) -> Findings | None:
        """The findings of the document's text as it is now: those published when they are of
        this text, else a fresh check (a notebook cell's come only with its notebook's check)."""
        text = self.workspace.get_text_document(uri).source
        findings = self.findings.get(uri)
        if findings is not None and findings.text == text:
            return findings
        if uri not in self.python_documents:
            return None
        diagnostics = await self._check(self._path(uri), worker.check_text, text)
        return Findings(text, diagnostics, self._to_lsp(uri, text, diagnostics))

    async def code_action(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri, only = params.text_document.uri, params.context.only
        findings = await self._current_findings(uri)
        if findings is None:
            return None
        actions = []
        if _wanted(types.CodeActionKind.QuickFix, only):
            actions += await self._line_actions(uri, findings, params.range)
        if _wanted(FIX_ALL_KIND, only) and not findings.in_notebook:
            fix_all = await self._fix_all_action(uri, findings)
            actions += [fix_all] if fix_all else []
        return actions

    async def _line_actions(self, uri: str, findings: Findings, selection: types.Range) -> list[types.CodeAction]:
        """Per finding in the selection: its fix (where one is allowed and valid) and a `# noqa`."""
        chosen = [
            (diagnostic, published) for diagnostic, published in zip(findings.diagnostics, findings.published)
            if diagnostic.code not in UNSUPPRESSIBLE and _overlaps(published.range, selection)
        ]
        if not chosen:
            return []
        unsafe = self.options.unsafe_fixes
        offers = await self.pool.call(
            worker.line_actions, findings.text, str(self._path(uri)), [diagnostic for diagnostic, _ in chosen], unsafe,
            findings.in_notebook,
        )
        rows, codec = source_rows(findings.text), self.workspace.position_codec
        actions = []
        for (diagnostic, published), (fixable, noqa_line) in zip(chosen, offers):
            if fixable:
                actions.append(types.CodeAction(
                    title=fix_title(diagnostic), kind=types.CodeActionKind.QuickFix, diagnostics=[published],
                    is_preferred=diagnostic.fix.applicability == Applicability.SAFE,
                    edit=self._edit(uri, fix_edits(diagnostic.fix, rows, codec)),
                ))
            if noqa_line is not None:
                row = diagnostic.noqa_row or diagnostic.location.row
                actions.append(types.CodeAction(
                    title=f"Disable {diagnostic.code} for this line", kind=types.CodeActionKind.QuickFix,
                    diagnostics=[published], edit=self._edit(uri, [row_edit(rows, row, noqa_line, codec)]),
                ))
        return actions

    async def _fix_all_action(self, uri: str, findings: Findings) -> types.CodeAction | None:
        unsafe = self.options.unsafe_fixes
        if not any(is_applicable(diagnostic, unsafe) for diagnostic in findings.diagnostics):
            return None
        cached = self.fixed_texts.get(uri)
        if cached is not None and cached[0] == findings.text:
            fixed = cached[1]
        else:
            path = self._path(uri)
            fixed = await self.pool.call(worker.fix_all, findings.text, str(path), self.settings.for_path(path), unsafe)
            self.fixed_texts[uri] = (findings.text, fixed)
        edit = changed_rows_edit(findings.text, fixed, self.workspace.position_codec)
        if edit is None:
            return None
        return types.CodeAction(title="Fix all torchlint findings", kind=FIX_ALL_KIND, edit=self._edit(uri, [edit]))

    def _edit(self, uri: str, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        """Edits tied to the document's version where the client can check it."""
        workspace = self.client_capabilities.workspace
        versioned = workspace and workspace.workspace_edit and workspace.workspace_edit.document_changes
        if not versioned:
            return types.WorkspaceEdit(changes={uri: edits})
        version = self.workspace.get_text_document(uri).version
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])

    async def hover(self, params: types.HoverParams) -> types.Hover | None:
        """The findings under the cursor (rule summary and fix), and the shape the analysis knows
        for the expression there."""
        uri, where = params.text_document.uri, params.position
        findings = self.findings.get(uri)
        if findings is None or findings.text != self.workspace.get_text_document(uri).source:
            return None
        point = types.Range(start=where, end=where)
        hits = [(diagnostic, published) for diagnostic, published in zip(findings.diagnostics, findings.published)
                if _overlaps(published.range, point)]
        parts = [hover_markdown(diagnostic) for diagnostic, _ in hits]
        shape = None if findings.in_notebook else await self._shape(uri, findings.text, where)
        if shape is not None:
            parts.append(shape[0])
        if not parts:
            return None
        shown = hits[0][1].range if hits else shape[1]
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)),
                           range=shown)

    async def _shape(self, uri: str, text: str, where: types.Position) -> tuple[str, types.Range] | None:
        rows, codec = source_rows(text), self.workspace.position_codec
        point = codec.position_from_client_units(rows, where)  # rows as Python (and libcst) count them
        path = self._path(uri)
        found = await self.pool.call(worker.shape_at, text, str(path), self.settings.for_path(path), point.line + 1,
                                     point.character)
        if found is None:
            return None
        message, where_found = found
        start = Location(where_found.start.line, where_found.start.column + 1)
        end = Location(where_found.end.line, where_found.end.column + 1)
        return message, text_range(rows, start, end, codec)


def serve() -> None:
    server = TorchlintServer()
    protocol_in, protocol_out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never reach the protocol channel
    server.pool = WorkerPool.forked_before_serving()
    server.start_io(protocol_in, protocol_out)
