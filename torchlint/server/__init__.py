"""`torchlint server`: a Language Server Protocol server on stdin/stdout, for editors.

It needs the `server` extra (pygls and lsprotocol), imported only when the server starts, so that
the checker itself stays light.
"""

from __future__ import annotations

import importlib.metadata

SERVER_PACKAGES = ("pygls", "lsprotocol")


def _server_requirements() -> str:
    """The `server` extra's requirements as this torchlint's metadata pins them, quoted for a shell."""
    try:
        requirements = importlib.metadata.requires("torchlint") or []
    except importlib.metadata.PackageNotFoundError:
        requirements = []
    pinned = [r.partition(";")[0].strip() for r in requirements if r.replace(" ", "").endswith('extra=="server"')]
    return " ".join(f'"{requirement}"' for requirement in pinned) or " ".join(SERVER_PACKAGES)


class ServerUnavailable(Exception):
    """The packages the server needs are not installed."""


def run_server() -> None:
    try:
        from torchlint.server.lsp import serve
    except ModuleNotFoundError as error:
        package = (error.name or "").partition(".")[0]
        if package not in SERVER_PACKAGES:
            raise
        # torchlint is not on PyPI: name what installs from any index, and the checkout's extra.
        raise ServerUnavailable(
            f"torchlint server needs {package}: pip install {_server_requirements()} "
            "(or, in a torchlint checkout, pip install \".[server]\")"
        ) from None
    serve()
