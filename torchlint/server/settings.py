"""The settings of each document the editor opens: found like the CLI finds them (the nearest
pyproject.toml above the file), read again whenever that file changes, with the editor's
initialization options on top. A broken configuration is reported once, and the document is
checked with the defaults meanwhile."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from torchlint.config import ConfigError, Options, Settings, expand_selectors, find_pyproject, resolve_settings
from torchlint.discovery import Discovery


@dataclass(frozen=True)
class EditorOptions:
    """What the editor's `initializationOptions` say (LSP names: select, ignore, unsafeFixes, debounceMs)."""

    select: list[str] | None = None
    ignore: list[str] | None = None
    unsafe_fixes: bool = False
    # How long a change waits for the next keystroke before its check starts.
    debounce_seconds: float = 0.05
    problems: list[str] = field(default_factory=list)

    @classmethod
    def from_initialization(cls, options: object) -> "EditorOptions":
        """The options the editor sent; an invalid one is left out and named in `problems`."""
        if not isinstance(options, dict):
            return cls()
        problems: list[str] = []
        lists = {key: _codes(options.get(key), key, problems) for key in ("select", "ignore")}
        unsafe = options.get("unsafeFixes", False)
        if not isinstance(unsafe, bool):
            problems.append("'unsafeFixes' in the initialization options must be true or false")
            unsafe = False
        debounce = options.get("debounceMs", 50)
        if not isinstance(debounce, (int, float)) or isinstance(debounce, bool) or debounce < 0:
            problems.append("'debounceMs' in the initialization options must be a number of milliseconds >= 0")
            debounce = 50
        return cls(lists["select"], lists["ignore"], unsafe, debounce / 1000, problems)


def _codes(value: object, key: str, problems: list[str]) -> list[str] | None:
    if value is None:
        return None
    origin = f"the initialization options ('{key}')"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.append(f"'{key}' in the initialization options must be a list of rule codes")
        return None
    try:
        expand_selectors(value, origin)
    except ConfigError as error:
        problems.append(str(error))
        return None
    return value


class DocumentSettings:
    """Settings per document, cached per configuration file and its modification stamp."""

    def __init__(self, options: EditorOptions, report: Callable[[str], None]) -> None:
        self._options = options
        self._report = report
        self._cache: dict[Path, tuple[tuple | None, Settings]] = {}
        self._reported: set[tuple] = set()

    def for_path(self, path: Path) -> Settings:
        directory = path.parent
        config = find_pyproject(directory)
        anchor, stamp = (config, _stamp(config)) if config else (directory, None)
        cached = self._cache.get(anchor)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        settings = self._resolve(directory, (anchor, stamp))
        self._cache[anchor] = (stamp, settings)
        return settings

    def _resolve(self, directory: Path, key: tuple) -> Settings:
        options = Options(select=self._options.select, ignore=self._options.ignore)
        try:
            return _with_hints(resolve_settings(options, directory))
        except ConfigError as error:
            if key not in self._reported:
                self._reported.add(key)
                self._report(f"torchlint: {error}; checking with the default settings until it is fixed")
            isolated = Options(select=options.select, ignore=options.ignore, isolated=True)
            return _with_hints(resolve_settings(isolated, directory))


def _with_hints(settings: Settings) -> Settings:
    """Hints are shown in the editor unless the configuration says `show-hints = false`: an editor
    draws them faintly, outside its problems list, on the line where a newer spelling is cheapest
    to take."""
    if any(key == "show-hints" for key, _ in settings.origins):
        return settings
    return replace(settings, show_hints=True)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def is_excluded(path: Path, settings: Settings) -> bool:
    """Does the configuration's `exclude` cover this file (the editor then shows no findings)?"""
    return Discovery(settings.exclude, settings.root).is_excluded(str(path))
