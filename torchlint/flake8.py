"""torchlint as a flake8 plugin (`flake8 --select TL`), for projects that already run flake8.

flake8 hands over the file's lines; torchlint parses them once with libcst and runs its rules as
`torchlint check` would, with the rule selection of the file's own `[tool.torchlint]`
configuration (flake8's `--select`/`--extend-ignore` then filter what is shown). flake8's
`# noqa` handling and torchlint's agree on the comment forms.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator

from torchlint import __version__
from torchlint.config import Options, SettingsResolver
from torchlint.engine import check_source

_resolver: SettingsResolver | None = None


def _settings_for(filename: str):
    global _resolver
    if _resolver is None:  # one per flake8 process: configuration is read once per directory
        _resolver = SettingsResolver(Options())
    return _resolver.default if filename in ("stdin", "-") else _resolver.for_file(filename)


class Plugin:
    name = "torchlint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        # flake8 requires the `tree` parameter of an AST plugin; torchlint works on libcst's tree.
        self._filename = filename
        self._lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self._lines)
        for diagnostic in check_source(source, os.path.normpath(self._filename), _settings_for(self._filename)):
            yield diagnostic.location.row, diagnostic.location.column - 1, \
                f"{diagnostic.code} {diagnostic.message}", type(self)
