"""Settings from `[tool.torchlint]` in pyproject.toml, overridden by command-line options."""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from torchlint.rule import Rule
from torchlint.rules import all_rules

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".venv", "venv", "env", "build", "dist", "__pycache__", "node_modules",
    "site-packages", ".tox", ".nox", ".eggs", "*.egg-info", ".ipynb_checkpoints",
)
# Findings about the file itself: always on, never suppressed.
UNSUPPRESSIBLE = frozenset({"TL901", "TL902"})
_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude")
KNOWN_KEYS = frozenset({*_LIST_KEYS, "per-file-ignores", "target-torch-version"})


class ConfigError(Exception):
    """A usage error in configuration or options: reported in one line, exit status 2."""


@dataclass(frozen=True)
class Settings:
    rules: tuple[type[Rule], ...]
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    target_torch_version: tuple[int, ...] | None = None
    # Where relative `exclude` and `per-file-ignores` patterns are anchored.
    root: str = field(default_factory=os.getcwd)

    def rules_for(self, filename: str) -> tuple[type[Rule], ...]:
        ignored = self.ignored_codes(filename)
        if not ignored:
            return self.rules
        return tuple(rule for rule in self.rules if rule.code not in ignored)

    def ignored_codes(self, filename: str) -> frozenset[str]:
        relative = _relative(filename, self.root)
        ignored: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(os.path.basename(filename), pattern):
                ignored |= codes
        return frozenset(ignored)


def _relative(path: str, root: str) -> str:
    try:
        return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    except ValueError:
        return path


def expand_selectors(selectors: list[str], origin: str) -> set[str]:
    """Rule codes matched by codes or prefixes (`TL1`, `TL10`, `TL101`, `ALL`)."""
    codes: set[str] = set()
    for selector in selectors:
        selector = selector.strip().upper()
        if not selector:
            continue
        matched = {rule.code for rule in all_rules() if selector == "ALL" or rule.code.startswith(selector)}
        if not matched:
            raise ConfigError(f"unknown rule selector '{selector}' in {origin}")
        codes |= matched
    return codes


def find_pyproject(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_table(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"invalid TOML in {path}: {error}") from None
    table = document.get("tool", {}).get("torchlint")
    if table is None and path.name != "pyproject.toml":
        table = document  # a standalone torchlint.toml holds the keys at top level
    table = table or {}
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"unknown configuration key '{unknown[0]}' in {path}")
    return table


def _string_list(table: dict, key: str, path: Path) -> list[str]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"'{key}' in {path} must be a list of strings")
    return value


def _parse_version(text: object, origin: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in str(text).split(".")[:2])
    except ValueError:
        raise ConfigError(f"invalid target-torch-version '{text}' in {origin}") from None


@dataclass
class Options:
    """What the command line says; None means 'not given'."""

    config: str | None = None
    select: list[str] | None = None
    ignore: list[str] | None = None
    extend_select: list[str] | None = None
    # Read no configuration file: the defaults and these options only (like ruff's `--isolated`).
    isolated: bool = False


def resolve_settings(options: Options, cwd: Path | None = None) -> Settings:
    cwd = cwd or Path.cwd()
    path = Path(options.config) if options.config else None if options.isolated else find_pyproject(cwd)
    table = load_table(path) if path else {}
    origin = str(path) if path else "settings"
    root = str(path.parent.resolve()) if path else str(cwd)

    select = options.select if options.select is not None else _string_list(table, "select", path) or None
    extend = _string_list(table, "extend-select", path) if path else []
    ignore = _string_list(table, "ignore", path) if path else []
    cli = "command-line options"
    enabled = expand_selectors(select, origin if options.select is None else cli) if select else {
        rule.code for rule in all_rules() if rule.default_enabled
    }
    enabled |= expand_selectors(extend, origin) | expand_selectors(options.extend_select or [], cli)
    enabled -= expand_selectors(ignore, origin) | expand_selectors(options.ignore or [], cli)
    enabled |= UNSUPPRESSIBLE

    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"'per-file-ignores' in {path} must be a table of glob = [codes]")
    per_file_ignores = tuple(
        (pattern, frozenset(expand_selectors(codes if isinstance(codes, list) else [codes], origin) - UNSUPPRESSIBLE))
        for pattern, codes in per_file.items()
    )
    exclude = tuple(_string_list(table, "exclude", path)) if path and "exclude" in table else DEFAULT_EXCLUDES
    exclude += tuple(_string_list(table, "extend-exclude", path)) if path else ()
    version = table.get("target-torch-version")
    return Settings(
        rules=tuple(rule for rule in all_rules() if rule.code in enabled),
        exclude=exclude,
        per_file_ignores=per_file_ignores,
        target_torch_version=_parse_version(version, origin) if version is not None else None,
        root=root,
    )
