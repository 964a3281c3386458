"""`torchlint server`: a Language Server Protocol server on stdin/stdout, for editors.

It needs the `server` extra (pygls and lsprotocol), imported only when the server starts, so that
the checker itself stays light.
"""

from __future__ import annotations

SERVER_PACKAGES = ("pygls", "lsprotocol")


class ServerUnavailable(Exception):
    """The packages the server needs are not installed."""


def run_server() -> None:
    try:
        from torchlint.server.lsp import serve
    except ModuleNotFoundError as error:
        package = (error.name or "").partition(".")[0]
        if package not in SERVER_PACKAGES:
            raise
        raise ServerUnavailable(f"torchlint server needs {package}: pip install \"torchlint[server]\"") from None
    serve()
