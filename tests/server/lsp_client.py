"""The editor side of the end-to-end tests of `torchlint server`: each test starts the real server
as a subprocess (`python -m torchlint server`) and drives it as an editor would, with pytest-lsp's
client."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402 - only once pytest-lsp is known to be installed
from pygls.protocol import default_converter  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, client_capabilities, register_lsp_features  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# How long a test waits for the server before it fails.
PATIENCE = 60.0


class EditorClient(LanguageClient):
    """pytest-lsp's client, keeping every publishDiagnostics and registration in order."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.published: list[types.PublishDiagnosticsParams] = []
        self.registrations: list[types.Registration] = []
        self.news = asyncio.Event()

    async def wait_for(self, found, what: str):
        """The first non-None `found()` (re-evaluated on each notification)."""
        async def poll():
            while True:
                self.news.clear()
                result = found()
                if result is not None:
                    return result
                await self.news.wait()

        try:
            return await asyncio.wait_for(poll(), PATIENCE)
        except TimeoutError:
            raise AssertionError(f"the server did not send {what} within {PATIENCE:g} s") from None

    async def published_for(self, uri: str, since: int, version: int | None = None) -> list[types.Diagnostic]:
        """The first diagnostics published for `uri` (and `version`, when given) after the first
        `since` notifications."""
        def found():
            for params in self.published[since:]:
                if params.uri == uri and (version is None or params.version == version):
                    return list(params.diagnostics)
            return None

        return await self.wait_for(found, f"diagnostics for {uri} (version {version})")


def _record_diagnostics(client: EditorClient, params: types.PublishDiagnosticsParams) -> None:
    client.diagnostics[params.uri] = params.diagnostics
    client.published.append(params)
    client.news.set()


def _record_message(client: EditorClient, params: types.ShowMessageParams) -> None:
    client.messages.append(params)
    client.news.set()


def _record_log(client: EditorClient, params: types.LogMessageParams) -> None:
    DEFAULT_CLIENT_FEATURES[types.WINDOW_LOG_MESSAGE](client, params)
    client.news.set()


def _register_capability(client: EditorClient, params: types.RegistrationParams) -> None:
    client.registrations.extend(params.registrations)
    client.news.set()


def make_client() -> EditorClient:
    client = EditorClient(converter_factory=default_converter)
    register_lsp_features(client, {
        **DEFAULT_CLIENT_FEATURES,
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: _record_diagnostics,
        types.WINDOW_SHOW_MESSAGE: _record_message,
        types.WINDOW_LOG_MESSAGE: _record_log,
        types.CLIENT_REGISTER_CAPABILITY: _register_capability,
    })
    return client


SERVER = ClientServerConfig(
    server_command=[sys.executable, "-m", "torchlint", "server"],
    client_factory=make_client,
    server_env={**os.environ, "PYTHONPATH": str(ROOT)},
)


def editor_capabilities() -> types.ClientCapabilities:
    """VS Code's capabilities (as pytest-lsp records them), with LSP 3.17 notebook sync."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()
    )
    return capabilities


async def initialize(client: EditorClient, root: Path, options: dict | None = None) -> types.InitializeResult:
    return await client.initialize_session(types.InitializeParams(
        capabilities=editor_capabilities(), root_uri=root.as_uri(), initialization_options=options,
    ))


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: EditorClient):
    """A server of its own for one test, not yet initialized (the test chooses its options)."""
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("workspace")


@pytest_lsp.fixture(config=SERVER, scope="module")
async def editor(lsp_client: EditorClient, workspace: Path):
    """One server shared by a module's tests, initialized with the default options."""
    await initialize(lsp_client, workspace)
    yield
    await lsp_client.shutdown_session()


class Document:
    """A text document open in the editor: its buffer and version, edited as an editor does."""

    def __init__(self, client: EditorClient, path: Path, text: str) -> None:
        self.client, self.path, self.uri, self.text, self.version = client, path, path.as_uri(), text, 1

    @classmethod
    async def open(cls, client: EditorClient, path: Path, text: str, language: str = "python"):
        """Open `path` with `text` in the buffer; returns the document and its first diagnostics."""
        document = cls(client, path, text)
        since = len(client.published)
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=document.uri, language_id=language, version=1, text=text)
        ))
        return document, await client.published_for(document.uri, since, 1)

    def send_change(self, text: str) -> int:
        """Replace the whole buffer (without waiting); returns the new version."""
        self.version += 1
        self.text = text
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        ))
        return self.version

    async def change(self, text: str) -> list[types.Diagnostic]:
        since = len(self.client.published)
        version = self.send_change(text)
        return await self.client.published_for(self.uri, since, version)

    async def close(self) -> list[types.Diagnostic]:
        since = len(self.client.published)
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=self.uri))
        )
        return await self.client.published_for(self.uri, since)

    async def code_actions(self, diagnostic: types.Diagnostic | None = None, only: list[str] | None = None,
                           selection: types.Range | None = None) -> list[types.CodeAction]:
        selection = selection or diagnostic.range
        actions = await self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri), range=selection,
            context=types.CodeActionContext(diagnostics=[diagnostic] if diagnostic else [], only=only),
        ))
        return actions or []

    async def apply(self, action: types.CodeAction) -> list[types.Diagnostic]:
        """Apply the action's edit to the buffer, as the editor would, and send it as a change."""
        return await self.change(apply_workspace_edit(self.text, self.uri, action.edit))


def apply_workspace_edit(text: str, uri: str, edit: types.WorkspaceEdit) -> str:
    """The text after the workspace edit's edits of `uri` (LSP positions in UTF-16 units)."""
    if edit.document_changes:
        edits = [e for change in edit.document_changes if change.text_document.uri == uri for e in change.edits]
    else:
        edits = list(edit.changes.get(uri, []))
    lines = text.splitlines(keepends=True) or [""]

    def offset(position: types.Position) -> int:
        before = sum(len(line) for line in lines[: position.line])
        row = lines[position.line] if position.line < len(lines) else ""
        units, characters = 0, 0
        while units < position.character and characters < len(row):
            units += 2 if ord(row[characters]) > 0xFFFF else 1
            characters += 1
        return before + characters

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text
