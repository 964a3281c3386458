"""The language-server fixtures (see lsp_client.py) for every test module of this package."""

from tests.server.lsp_client import client, editor, workspace  # noqa: F401 - fixtures
