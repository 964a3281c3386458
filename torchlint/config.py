"""Settings from `[tool.torchlint]` in pyproject.toml, overridden by command-line options."""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from torchlint.diagnostics import Applicability, Diagnostic, Severity
from torchlint.rules import RuleInfo, all_rules
from torchlint.torch_requirement import (
    MalformedTable, SupportedTorch, declared_torch_requirements, metadata_files, metadata_torch_requirements, supported,
)
from torchlint.sources import MAX_AUXILIARY_BYTES, UnreadableFile, read_regular_file

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".venv", "venv", "env", "build", "dist", "__pycache__", "node_modules",
    "site-packages", ".tox", ".nox", ".eggs", "*.egg-info", ".ipynb_checkpoints",
)
# Findings about the file itself: always on, never suppressed.
UNSUPPRESSIBLE = frozenset({"TL901", "TL902"})
_LIST_KEYS = (
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "unfixable", "extend-safe-fixes",
    "extend-unsafe-fixes",
)
# What each key holds, as a usage error names it.
KEY_TYPES = {
    **{key: "a list of strings" for key in _LIST_KEYS},
    "per-file-ignores": "a table of glob = [codes]",
    "target-torch-version": 'a version string such as "2.4"',
    "fix": "true or false",
    "unsafe-fixes": "true or false",
    "fail-on": 'one of "error", "warning", "note", "hint"',
    "show-hints": "true or false",
}
KNOWN_KEYS = frozenset(KEY_TYPES)


class ConfigError(Exception):
    """A usage error in configuration or options: reported in one line, exit status 2."""


@dataclass(frozen=True)
class FixPolicy:
    """Ruff's fix keys: `unfixable` rules offer no fix; `extend-safe-fixes` /
    `extend-unsafe-fixes` make a rule's fixes safe / unsafe."""

    unfixable: frozenset[str] = frozenset()
    safe: frozenset[str] = frozenset()
    unsafe: frozenset[str] = frozenset()

    def applied(self, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        if not (self.unfixable or self.safe or self.unsafe):
            return diagnostics
        return [self._applied(diagnostic) for diagnostic in diagnostics]

    def _applied(self, diagnostic: Diagnostic) -> Diagnostic:
        fix = diagnostic.fix
        if fix is None:
            return diagnostic
        if diagnostic.code in self.unfixable:
            return replace(diagnostic, fix=None)
        if diagnostic.code in self.unsafe:
            return replace(diagnostic, fix=replace(fix, applicability=Applicability.UNSAFE))
        if diagnostic.code in self.safe:
            return replace(diagnostic, fix=replace(fix, applicability=Applicability.SAFE))
        return diagnostic


@dataclass(frozen=True)
class Settings:
    rules: tuple[RuleInfo, ...]
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    target_torch_version: tuple[int, ...] | None = None
    # The (major, minor) below which every torch version the project declares lies (None: no bound).
    torch_ceiling: tuple[int, int] | None = None
    # Where relative `exclude` and `per-file-ignores` patterns are anchored.
    root: str = field(default_factory=os.getcwd)
    fix: bool = False
    unsafe_fixes: bool = False
    fix_policy: FixPolicy = FixPolicy()
    # The least severe finding that fails the run: notes are advice and pass by default.
    fail_on: Severity = Severity.WARNING
    # Hints (a newer or more exact spelling of code that works as intended) are left out unless asked for.
    show_hints: bool = False
    # (setting, where its value came from), for `--show-settings`.
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def rules_for(self, filename: str) -> tuple[RuleInfo, ...]:
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


def _read_toml(path: Path) -> dict:
    try:
        text = read_regular_file(str(path), MAX_AUXILIARY_BYTES).decode("utf-8")
        return tomllib.loads(text)
    except UnreadableFile as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"invalid TOML in {path}: {error}") from None
    except RecursionError:
        raise ConfigError(f"invalid TOML in {path}: nested too deeply") from None


def _has_table(path: Path) -> bool:
    try:
        tool = _read_toml(path).get("tool", {})
        return not isinstance(tool, dict) or "torchlint" in tool
    except ConfigError:
        return True  # let loading it report the error


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml with a `[tool.torchlint]` table at or above `start` (as ruff
    looks for `[tool.ruff]`)."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and _has_table(candidate):
            return candidate
    return None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start`: the project, config or not."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def find_package_metadata(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds package metadata (an unpacked wheel,
    an sdist): the project of a tree without a pyproject.toml."""
    for directory in (start, *start.parents):
        if metadata_files(directory):
            return directory
    return None


def load_table(path: Path) -> dict:
    document = _read_toml(path)
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"'tool' in {path} must be a table, not {tool!r}")
    table = tool.get("torchlint")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"'tool.torchlint' in {path} must be a table, not {table!r}")
    if table is None and path.name != "pyproject.toml":
        table = document  # a standalone torchlint.toml holds the keys at top level
    return check_table(table or {}, str(path))


def check_table(table: dict, origin: str) -> dict:
    """The table, when every key is known and holds a value of its type."""
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"unknown configuration key '{unknown[0]}' in {origin}")
    for key, value in table.items():
        if not _has_type(key, value):
            raise ConfigError(f"'{key}' in {origin} must be {KEY_TYPES[key]}, not {value!r}")
    return table


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _has_type(key: str, value: object) -> bool:
    if key in _LIST_KEYS:
        return _strings(value)
    if key == "per-file-ignores":
        return isinstance(value, dict) and all(_strings(codes) for codes in value.values())
    if key == "target-torch-version":
        return isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)*", value.strip()) is not None
    if key == "fail-on":
        return value in {severity.value for severity in Severity}
    return isinstance(value, bool)


def parse_override(text: str) -> dict:
    """`--config KEY=VALUE`: one key, its value in TOML (`select = ["TL1"]`, `fix = true`)."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"--config {text!r} is not KEY = VALUE in TOML ({error})") from None
    return check_table(table, f"--config {text!r}")


def _parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.strip().split(".")[:2])


@dataclass
class Options:
    """What the command line says; None means 'not given'."""

    config: str | None = None
    select: list[str] | None = None
    ignore: list[str] | None = None
    extend_select: list[str] | None = None
    isolated: bool = False  # read no configuration file
    overrides: list[str] = field(default_factory=list)  # `--config KEY=VALUE`


def _codes(table: dict, key: str, origin: str) -> set[str]:
    return expand_selectors(table.get(key, []), origin)


def resolve_settings(options: Options, cwd: Path | None = None) -> Settings:
    """The settings for files in `cwd` (a file's directory, or the working directory)."""
    cwd = (cwd or Path.cwd()).resolve()
    path = None if options.isolated else Path(options.config) if options.config else find_config(cwd)
    table = dict(load_table(path)) if path else {}
    origin = str(path) if path else "defaults"
    origins = {key: origin for key in table}
    for override in options.overrides:
        parsed = parse_override(override)
        table.update(parsed)
        origins.update((key, "--config") for key in parsed)
    project = find_pyproject(cwd)
    root = str(path.parent.resolve()) if path else str(project.parent) if project else str(cwd)

    select = options.select if options.select is not None else table.get("select")
    cli = "command-line options"
    enabled = expand_selectors(select, origin if options.select is None else cli) if select else {
        rule.code for rule in all_rules() if rule.default_enabled
    }
    enabled |= _codes(table, "extend-select", origin) | expand_selectors(options.extend_select or [], cli)
    enabled -= _codes(table, "ignore", origin) | expand_selectors(options.ignore or [], cli)
    enabled |= UNSUPPRESSIBLE
    per_file_ignores = tuple(
        (pattern, frozenset(expand_selectors(codes, origin) - UNSUPPRESSIBLE))
        for pattern, codes in table.get("per-file-ignores", {}).items()
    )
    exclude = tuple(table.get("exclude", DEFAULT_EXCLUDES)) + tuple(table.get("extend-exclude", ()))
    declared = SupportedTorch() if options.isolated else _supported_torch(project, cwd)
    version = _target_version(table.get("target-torch-version"), declared, origins)
    if declared.ceiling is not None:
        origins["torch-ceiling"] = f"inferred from {declared.ceiling[1]}"
    return Settings(
        rules=tuple(rule for rule in all_rules() if rule.code in enabled),
        exclude=exclude,
        per_file_ignores=per_file_ignores,
        target_torch_version=version,
        torch_ceiling=declared.ceiling[0] if declared.ceiling else None,
        root=root,
        fix=table.get("fix", False),
        unsafe_fixes=table.get("unsafe-fixes", False),
        fail_on=Severity(table.get("fail-on", Severity.WARNING.value)),
        show_hints=table.get("show-hints", False),
        fix_policy=FixPolicy(*(frozenset(_codes(table, key, origin)) for key in (
            "unfixable", "extend-safe-fixes", "extend-unsafe-fixes"))),
        origins=tuple(sorted(origins.items())),
    )


def _target_version(
    configured: str | None, declared: SupportedTorch, origins: dict[str, str]
) -> tuple[int, ...] | None:
    """`target-torch-version` when set, else the lowest torch the project declares."""
    if configured is not None:
        return _parse_version(configured)
    if declared.floor is None:
        return None
    origins["target-torch-version"] = f"inferred from {declared.floor[1]}"
    return declared.floor[0]


def _supported_torch(project: Path | None, cwd: Path) -> SupportedTorch:
    """The torch versions the project declares (in its pyproject.toml and requirements files, else
    in its package metadata)."""
    try:
        requirements = declared_torch_requirements(project, _read_toml(project)) if project is not None else []
    except MalformedTable as error:
        raise ConfigError(f"'{error.key}' in {project} must be {error.expected}, not {error.value!r}") from None
    if not any(requirement.floor or requirement.ceiling for requirement in requirements):
        metadata = project.parent if project is not None else find_package_metadata(cwd)
        requirements = metadata_torch_requirements(metadata) if metadata is not None else []
    return supported(requirements)


@lru_cache(maxsize=None)
def _config_and_project(directory: str) -> tuple[Path | None, Path | None, Path | None]:
    project = find_pyproject(Path(directory))
    return find_config(Path(directory)), project, None if project else find_package_metadata(Path(directory))


class SettingsResolver:
    """The settings of each checked file: those of the nearest `[tool.torchlint]` above it (as
    ruff finds its configuration), unless a configuration file is named or `--isolated` is given."""

    def __init__(self, options: Options) -> None:
        self._options = options
        self._resolved: dict[tuple, Settings] = {}
        self.default = self.for_directory(os.getcwd())

    def for_directory(self, directory: str) -> Settings:
        located = (None, None, None) if self._options.config or self._options.isolated else _config_and_project(directory)
        if located not in self._resolved:
            self._resolved[located] = resolve_settings(self._options, Path(directory))
        return self._resolved[located]

    def for_file(self, path: str) -> Settings:
        return self.for_directory(os.path.dirname(os.path.abspath(path)))

    def groups(self, named: list[tuple[str, str]]) -> list[tuple[Settings, list[tuple[str, str]]]]:
        """(path, display name) pairs grouped by their settings, in order of first appearance."""
        grouped: dict[int, tuple[Settings, list[tuple[str, str]]]] = {}
        for path, name in named:
            settings = self.for_file(path)
            grouped.setdefault(id(settings), (settings, []))[1].append((path, name))
        return list(grouped.values())


def describe(settings: Settings) -> str:
    """`--show-settings`: the resolved settings, each with where it came from."""
    origins = dict(settings.origins)
    version, ceiling = settings.target_torch_version, settings.torch_ceiling
    lines = [
        f"root = {settings.root}",
        f"rules = {', '.join(rule.code for rule in settings.rules)}",
        f"exclude = {list(settings.exclude)}  # {origins.get('exclude', 'defaults')}",
        f"per-file-ignores = {[(p, sorted(c)) for p, c in settings.per_file_ignores]}",
        f"target-torch-version = {'.'.join(map(str, version)) if version else 'none'}"
        f"  # {origins.get('target-torch-version', 'not set')}",
        f"torch below = {'.'.join(map(str, ceiling)) if ceiling else 'any'}"
        f"  # {origins.get('torch-ceiling', 'no upper bound declared')}",
        f"fix = {str(settings.fix).lower()}  # {origins.get('fix', 'defaults')}",
        f"unsafe-fixes = {str(settings.unsafe_fixes).lower()}  # {origins.get('unsafe-fixes', 'defaults')}",
        f'fail-on = "{settings.fail_on.value}"  # {origins.get("fail-on", "defaults")}',
        f"show-hints = {str(settings.show_hints).lower()}  # {origins.get('show-hints', 'defaults')}",
    ]
    for key, codes in (("unfixable", settings.fix_policy.unfixable), ("extend-safe-fixes", settings.fix_policy.safe),
                       ("extend-unsafe-fixes", settings.fix_policy.unsafe)):
        lines.append(f"{key} = {sorted(codes)}  # {origins.get(key, 'defaults')}")
    for key in ("select", "extend-select", "ignore"):
        if key in origins:
            lines.append(f"# {key} from {origins[key]}")
    return "\n".join(lines) + "\n"
