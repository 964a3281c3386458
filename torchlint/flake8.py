"""torchlint as a flake8 plugin (`flake8 --select TL`), for projects that already run flake8.

flake8 hands over the file's lines; torchlint parses them once with libcst and runs its rules as
`torchlint check` would, with the rule selection of the file's own `[tool.torchlint]`
configuration (flake8's `--select`/`--extend-ignore` then filter what is shown; a code or prefix
more precise than `TL` in flake8's selection, such as `--select TL305`, also turns on a rule that
is off by default). flake8's `# noqa` handling and torchlint's agree on the comment forms.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator

from torchlint import __version__
from torchlint.config import Options, SettingsResolver
from torchlint.engine import check_source

_resolver: SettingsResolver | None = None
# Rules flake8's own `--select` / `--extend-select` name more precisely than the plugin's prefix
# (`TL305`, `TL3`): enabled even when torchlint has them off by default.
_selected_by_flake8: list[str] = []


def _settings_for(filename: str):
    global _resolver
    if _resolver is None:  # one per flake8 process: configuration is read once per directory
        _resolver = SettingsResolver(Options(extend_select=_selected_by_flake8 or None))
    return _resolver.default if filename in ("stdin", "-") else _resolver.for_file(filename)


class Plugin:
    name = "torchlint"
    version = __version__

    @classmethod
    def parse_options(cls, options) -> None:
        """flake8's selection, as flake8 users give it: `flake8 --select TL305` turns on a rule
        that is off by default. The bare prefix `TL` keeps torchlint's own defaults."""
        global _resolver
        chosen = [*(getattr(options, "select", None) or ()), *(getattr(options, "extend_select", None) or ())]
        _selected_by_flake8[:] = [code for code in chosen if code.upper().startswith("TL") and len(code) > 2]
        _resolver = None

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        # flake8 requires the `tree` parameter of an AST plugin; torchlint works on libcst's tree.
        self._filename = filename
        self._lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self._lines)
        for diagnostic in check_source(source, os.path.normpath(self._filename), _settings_for(self._filename)):
            yield diagnostic.location.row, diagnostic.location.column - 1, \
                f"{diagnostic.code} {diagnostic.message}", type(self)
